import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { PostgresMemoryStore } from '../../src/adapters/postgres/postgres-memory-store.js';
import { SqliteMemoryStore } from '../../src/adapters/sqlite/sqlite-memory-store.js';
import { Engram } from '../../src/engram.js';
import type { NewMemory } from '../../src/memory/memory.js';
import type { MemoryStore } from '../../src/contracts/memory-store.js';
import { dropSchema, freshSchemaUrl } from '../support/postgres-schemas.js';

// The recall signals (sitting, dates, "when", second hop, diversity) run in shared pure code after
// the store's search: on the same memories both backends must rank alike, signals and all.

const serverUrl = inject('postgresUrl');
const skipReason = inject('postgresSkipReason');
const NOW = '2024-01-10T15:00:00.000Z';
const SCOPE = 'project:signals';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

async function bothStores(): Promise<{ postgres: MemoryStore; sqlite: MemoryStore }> {
  const { url, schema } = freshSchemaUrl(serverUrl, 'signals');
  const postgres = new PostgresMemoryStore({ url, now: () => new Date(NOW), onWarning: () => undefined });
  await postgres.open();
  cleanups.push(() => dropSchema(serverUrl, schema));
  cleanups.push(() => postgres.close());
  const directory = await mkdtemp(join(tmpdir(), 'engram-signals-'));
  const sqlite = new SqliteMemoryStore({ path: join(directory, 'memory.db'), now: () => new Date(NOW) });
  await sqlite.open();
  cleanups.push(() => rm(directory, { recursive: true, force: true }));
  cleanups.push(() => sqlite.close());
  return { postgres, sqlite };
}

let written = 0;
const write = (content: string, createdAt: string): NewMemory => ({
  id: `mem_${String((written += 1)).padStart(3, '0')}`,
  scope: SCOPE,
  content,
  createdAt,
});

const MEMORIES: NewMemory[] = [
  write('Caroline: I went to the LGBTQ support group yesterday, it was powerful.', '2023-05-08T13:56:00.000Z'),
  write('Melanie: That sounds wonderful, what happened at the support group?', '2023-05-08T13:57:00.000Z'),
  write('Caroline: People shared their transgender stories and I felt accepted.', '2023-05-08T13:58:00.000Z'),
  write('Caroline: I am researching adoption agencies for my future family.', '2023-06-02T10:00:00.000Z'),
  write('Melanie: Adoption agencies take a long time, good luck with the family plans.', '2023-06-02T10:01:00.000Z'),
  write('Melanie: I painted a lake sunrise in July with my kids.', '2023-07-15T09:00:00.000Z'),
  write('Melanie: I painted a lake sunrise in July with my kids!', '2023-07-15T09:01:00.000Z'),
  write('Melanie: We went camping in the mountains with the kids last week.', '2023-07-15T09:02:00.000Z'),
  write('Caroline: The support group meets again next month.', '2023-08-20T18:00:00.000Z'),
  write('Caroline: I love painting too, mostly abstract pieces.', '2023-08-20T18:01:00.000Z'),
];

const QUESTIONS = [
  'When did Caroline go to the LGBTQ support group?',
  'What did Melanie paint in July 2023?',
  'What is Caroline researching for her family?',
  'What stories did people share at the support group?',
  'Where did Melanie go camping with the kids?',
];

describe.skipIf(!serverUrl)(`recall signals on Postgres${serverUrl ? '' : ` [skipped: ${skipReason}]`}`, () => {
  it('ranks like SQLite with every signal on: same memories, same order, same score parts', async () => {
    const { postgres, sqlite } = await bothStores();
    await postgres.createMany(MEMORIES, { actor: 'test' });
    await sqlite.createMany(MEMORIES, { actor: 'test' });
    const recall = async (store: MemoryStore, question: string) => {
      const engram = new Engram({ store, readScopes: [SCOPE], now: () => new Date(NOW) });
      const result = await engram.recall(question, { recordAccess: false, topK: 10, minScore: 0 });
      return result.memories.map((entry) => ({
        content: entry.memory.content,
        score: Number(entry.parts.score.toFixed(9)),
        context: entry.parts.context,
        signals: entry.parts.signals,
      }));
    };
    let signalled = 0;
    for (const question of QUESTIONS) {
      const [fromPostgres, fromSqlite] = [await recall(postgres, question), await recall(sqlite, question)];
      expect(fromSqlite.length, question).toBeGreaterThan(0);
      expect(fromPostgres, question).toEqual(fromSqlite);
      signalled += fromSqlite.filter((entry) => entry.context || entry.signals).length;
    }
    // The case is one where the signals act, so equal rankings say something about them.
    expect(signalled).toBeGreaterThan(5);
  });

  it('puts the newer of two memories that disagree first, the older marked, as SQLite does', async () => {
    const { postgres, sqlite } = await bothStores();
    const memories: NewMemory[] = [
      write('The user prefers tabs over spaces.', '2024-01-02T09:00:00.000Z'),
      write('The user prefers spaces over tabs.', '2024-01-09T09:00:00.000Z'),
      write('The billing worker runs 3 replicas and 5 threads.', '2024-01-03T09:00:00.000Z'),
      write('The billing worker runs 5 replicas and 3 threads.', '2024-01-08T09:00:00.000Z'),
      write('Customer 4411 is on the enterprise plan with a dedicated support engineer.', '2024-01-02T09:00:00.000Z'),
      write('Customer 5822 is on the enterprise plan with a dedicated support engineer.', '2024-01-09T09:00:00.000Z'),
    ];
    await postgres.createMany(memories, { actor: 'test' });
    await sqlite.createMany(memories, { actor: 'test' });
    const recall = async (store: MemoryStore, question: string) => {
      const engram = new Engram({ store, readScopes: [SCOPE], now: () => new Date(NOW) });
      const result = await engram.recall(question, { recordAccess: false, topK: 4, minScore: 0 });
      return result.memories.map((entry) => ({
        id: entry.memory.id,
        score: Number(entry.parts.score.toFixed(9)),
        signals: entry.parts.signals,
      }));
    };
    const ids = memories.map((memory) => memory.id!);
    const expected: Record<string, string[]> = {
      'tabs or spaces': [ids[1]!, ids[0]!],
      'how many replicas does the billing worker run': [ids[3]!, ids[2]!],
      // Two customers: two facts, each in its own place (the newer first by recency alone).
      'customers on the enterprise plan': [ids[5]!, ids[4]!],
    };
    for (const [question, order] of Object.entries(expected)) {
      const [fromPostgres, fromSqlite] = [await recall(postgres, question), await recall(sqlite, question)];
      expect(fromPostgres, question).toEqual(fromSqlite);
      expect(
        fromSqlite.map((entry) => entry.id),
        question,
      ).toEqual(order);
    }
    const tabs = await recall(postgres, 'tabs or spaces');
    expect(tabs[1]!.signals?.disagrees?.newer).toBe(ids[1]);
    const customers = await recall(postgres, 'customers on the enterprise plan');
    expect(customers.every((entry) => entry.signals === undefined)).toBe(true);
  });
});
