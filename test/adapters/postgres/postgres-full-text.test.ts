import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { PostgresMemoryStore } from '../../../src/adapters/postgres/postgres-memory-store.js';
import { SqliteMemoryStore } from '../../../src/adapters/sqlite/sqlite-memory-store.js';
import type { NewMemory } from '../../../src/memory/memory.js';
import type { MemoryStore, TextSearch } from '../../../src/contracts/memory-store.js';
import { createRandomSource } from '../../../src/testing/store-suite-support.js';
import { dropSchema, freshSchemaUrl, withServerClient } from '../../support/postgres-schemas.js';
import { useCleanups } from '../../support/per-test.js';

// Full-text recall on Postgres against SQLite's: both index engram's own tokens (Porter stems,
// diacritics folded, no stop words dropped) and rank candidates with the same BM25, so on the same
// memories they find the same hits. Past 10,000 memories Postgres takes N and the frequencies of
// common words from the planner's statistics; its top hits must stay those of SQLite.

const serverUrl = inject('postgresUrl');
const skipReason = inject('postgresSkipReason');
const ACTOR = { actor: 'full-text-test' };

const cleanup = useCleanups();

async function bothStores(): Promise<{ postgres: PostgresMemoryStore; sqlite: SqliteMemoryStore; schema: string }> {
  const { url, schema } = freshSchemaUrl(serverUrl, 'fulltext');
  const postgres = new PostgresMemoryStore({ url, onWarning: () => undefined });
  await postgres.open();
  cleanup(() => dropSchema(serverUrl, schema));
  cleanup(() => postgres.close());
  const directory = await mkdtemp(join(tmpdir(), 'engram-fulltext-'));
  const sqlite = new SqliteMemoryStore({ path: join(directory, 'memory.db'), onWarning: () => undefined });
  await sqlite.open();
  cleanup(() => rm(directory, { recursive: true, force: true }));
  cleanup(() => sqlite.close());
  return { postgres, sqlite, schema };
}

/** Memories of a seeded vocabulary: a few very common words, many rare ones, 20 scopes. */
function syntheticMemories(count: number, seed: number): { memories: NewMemory[]; words: string[] } {
  const random = createRandomSource(seed);
  const syllables = ['ka', 'lo', 'mi', 'ne', 'ru', 'ta', 'vo', 'shi', 'de', 'po', 'gu', 'xa'];
  const words = Array.from({ length: 3_000 }, () =>
    Array.from({ length: random.integer(2, 4) }, () => random.pick(syllables)).join(''),
  );
  const common = ['project', 'deploy', 'server', 'team', 'release'];
  const memories = Array.from({ length: count }, (_, index) => {
    const body = Array.from({ length: random.integer(8, 30) }, () =>
      random.next() < 0.25 ? random.pick(common) : words[Math.floor(words.length * random.next() ** 2)]!,
    );
    return {
      id: `mem_${String(index).padStart(6, '0')}`,
      scope: `project:p${index % 20}`,
      content: `${body.join(' ')}.`,
      createdAt: '2025-01-01T00:00:00.000Z',
    };
  });
  return { memories, words: [...common, ...words] };
}

async function load(store: MemoryStore, memories: readonly NewMemory[]): Promise<void> {
  for (let start = 0; start < memories.length; start += 1_000)
    await store.createMany(memories.slice(start, start + 1_000), ACTOR);
}

function queries(words: readonly string[], count: number, seed: number): TextSearch[] {
  const random = createRandomSource(seed);
  return Array.from({ length: count }, () => ({
    scopes: [`project:p${random.integer(0, 19)}`, `project:p${random.integer(0, 19)}`],
    terms: random.sample(words.slice(0, 400), random.integer(1, 4)),
    limit: 10,
    sufficientHits: 6,
  }));
}

describe.skipIf(!serverUrl)(
  `Postgres full-text recall beside SQLite's${serverUrl ? '' : ` [skipped: ${skipReason}]`}`,
  () => {
    it('finds what SQLite finds: stems, folded diacritics and case in any locale, stop words kept, phrases', async () => {
      const { postgres, sqlite } = await bothStores();
      const inputs: NewMemory[] = [
        { scope: 'global', content: 'The café on Ünïcödé Street serves crêpes.' },
        { scope: 'global', content: 'The Who played at the stadium.' },
        { scope: 'global', content: 'Deployments are running behind; the runner restarts nightly.' },
        { scope: 'global', content: 'ÉCOLE NORMALE keeps its archive in Zürich.' },
        { scope: 'global', content: 'Foo bar, then bar foo: order matters for phrases.' },
      ];
      for (const store of [postgres, sqlite])
        await store.createMany(
          inputs.map((input, index) => ({ ...input, id: `m${index}` })),
          ACTOR,
        );
      const terms = [
        'cafe',
        'unicode',
        'CRÊPES',
        'who',
        'the',
        'deployment',
        'run',
        'école',
        'zurich',
        'foo bar',
        'bar foo',
        'normale',
      ];
      for (const term of terms) {
        const search = { scopes: ['global'], terms: [term], limit: 10 };
        const [fromPostgres, fromSqlite] = await Promise.all([postgres.searchText(search), sqlite.searchText(search)]);
        expect(fromSqlite.length, `SQLite finds ${term}`).toBeGreaterThan(0);
        expect(
          fromPostgres.map((hit) => hit.memory.id),
          term,
        ).toEqual(fromSqlite.map((hit) => hit.memory.id));
        fromPostgres.forEach((hit, index) => expect(hit.relevance, term).toBeCloseTo(fromSqlite[index]!.relevance, 9));
      }
    });

    it(
      'ranks a 3,000-memory store as SQLite does: the same hits when all matches fit the candidate pool, nearly the same otherwise',
      { timeout: 120_000 },
      async () => {
        const { postgres, sqlite } = await bothStores();
        const { memories, words } = syntheticMemories(3_000, 11);
        await Promise.all([load(postgres, memories), load(sqlite, memories)]);
        const mismatches: string[] = [];
        let pooled = 0;
        let overlap = 0;
        let wanted = 0;
        // Random queries, and each very common word alone (more matches than any pool).
        const common = words.slice(0, 5).flatMap((word) =>
          [0, 5, 10, 15].map((scope) => ({
            scopes: [`project:p${scope}`, `project:p${scope + 1}`],
            terms: [word],
            limit: 10,
          })),
        );
        for (const search of [...queries(words, 150, 12), ...common]) {
          // A limit of 50 is the candidate pool: fewer hits than that means every match was ranked.
          const wide = { ...search, limit: 50 };
          const [fromPostgres, fromSqlite] = await Promise.all([postgres.searchText(wide), sqlite.searchText(wide)]);
          if (fromSqlite.length < 50) {
            // Equal up to ties: the same ids with the same relevance, best first.
            const key = (hits: typeof fromSqlite): string[] =>
              hits
                .map((hit) => `${hit.relevance.toFixed(9)} ${hit.memory.id}`)
                .sort()
                .reverse();
            if (JSON.stringify(key(fromPostgres)) !== JSON.stringify(key(fromSqlite)))
              mismatches.push(JSON.stringify(search.terms));
          } else {
            // More matches than the pool: each backend's index picked its 50 (FTS5's bm25, idf × ts_rank).
            pooled += 1;
            const ids = new Set(fromPostgres.slice(0, 10).map((hit) => hit.memory.id));
            overlap += fromSqlite.slice(0, 10).filter((hit) => ids.has(hit.memory.id)).length;
            wanted += 10;
          }
        }
        expect(mismatches).toEqual([]);
        expect(pooled).toBeGreaterThanOrEqual(20);
        expect(overlap / wanted).toBeGreaterThanOrEqual(0.95);
      },
    );

    it(
      'past 10,000 memories, with N and common words from the planner statistics, keeps SQLite top hits',
      { timeout: 300_000 },
      async () => {
        const { postgres, sqlite, schema } = await bothStores();
        const { memories, words } = syntheticMemories(12_000, 21);
        await Promise.all([load(postgres, memories), load(sqlite, memories)]);
        // What autovacuum does after a bulk load: statistics for the planner (and for the search).
        await withServerClient(serverUrl, (client) => client.query(`ANALYZE "${schema}".memories`));
        let overlap = 0;
        let wanted = 0;
        for (const search of queries(words, 200, 22)) {
          const [fromPostgres, fromSqlite] = await Promise.all([
            postgres.searchText(search),
            sqlite.searchText(search),
          ]);
          const ids = new Set(fromPostgres.map((hit) => hit.memory.id));
          overlap += fromSqlite.filter((hit) => ids.has(hit.memory.id)).length;
          wanted += fromSqlite.length;
          for (const hit of fromPostgres) expect(search.scopes).toContain(hit.memory.scope);
        }
        expect(wanted).toBeGreaterThan(1_000);
        expect(overlap / wanted).toBeGreaterThanOrEqual(0.95);
      },
    );
  },
);
