import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { openStore } from '../../src/node/open-store.js';
import { PostgresMemoryStore } from '../../src/adapters/postgres/postgres-memory-store.js';
import { SqliteMemoryStore } from '../../src/adapters/sqlite/sqlite-memory-store.js';
import { parseEvalDataset } from '../../src/eval/eval-dataset.js';
import { runEval } from '../../src/eval/node/run-eval.js';
import type { MemoryStore, StoreRole, StoreWith } from '../../src/contracts/memory-store.js';
import { createWorkspace, type Workspace, spawnEngram } from '../support/cli-harness.js';
import { expectSameStores, readAll, seedRichStore } from '../support/migrate-seed.js';
import type {} from '../support/postgres-server.js';

// `engram migrate` between SQLite and a real PostgreSQL server (the throwaway cluster of
// test/support/postgres-server.ts, or ENGRAM_TEST_POSTGRES_URL), through the built binary.

const serverUrl = inject('postgresUrl') ?? '';
const skipReason =
  inject('postgresSkipReason') || 'run in the vitest project that starts PostgreSQL (test/support/postgres-server.ts)';
const schemas: string[] = [];
let workspace: Workspace;

/** A store URL for a fresh schema of the test database. */
function freshSchemaUrl(): string {
  const schema = `migrate_${randomBytes(6).toString('hex')}`;
  schemas.push(schema);
  const url = new URL(serverUrl);
  url.searchParams.set('schema', schema);
  return url.toString();
}

async function withStore<T>(url: string, work: (store: StoreWith<StoreRole>) => Promise<T>): Promise<T> {
  const store = url.startsWith('postgres') ? await openStore(url) : new SqliteMemoryStore({ path: url });
  if (!url.startsWith('postgres')) await store.open();
  try {
    return await work(store);
  } finally {
    await store.close();
  }
}

async function migrate(from: string, to: string, extra: string[] = [], expectedCode = 0): Promise<any> {
  return workspace.json(['migrate', '--from', from, '--to', to, ...extra], expectedCode);
}

async function sqlCount(url: string, table: string): Promise<number> {
  const schema = new URL(url).searchParams.get('schema')!;
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    return Number((await client.query(`SELECT count(*) AS n FROM "${schema}".${table}`)).rows[0].n);
  } catch {
    return 0;
  } finally {
    await client.end();
  }
}

describe.skipIf(!serverUrl)(
  `engram migrate between SQLite and PostgreSQL${serverUrl ? '' : ` [skipped: ${skipReason}]`}`,
  () => {
    beforeAll(() => {
      workspace = createWorkspace();
    });

    afterAll(async () => {
      workspace?.cleanup();
      const client = new pg.Client({ connectionString: serverUrl });
      await client.connect();
      for (const schema of schemas) await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await client.end();
    });

    it('SQLite → Postgres → SQLite round-trips a 10,000-memory store exactly', async () => {
      const source = join(workspace.root, 'ten-thousand.db');
      await withStore(source, (store) => seedRichStore(store, 10_000, 21));
      const postgresUrl = freshSchemaUrl();

      const there = await migrate(source, postgresUrl);
      expect(there.target.counts.memories).toBe(await withStore(source, async (store) => (await store.stats()).total));
      expect(there.target.counts.jobs).toBeGreaterThan(100);
      expect(there.target.counts.checkpoints).toBeGreaterThan(5);
      expect(there.target.checksums).toEqual(there.source.checksums);
      expect(there.to).not.toContain('engram-test-password');
      await withStore(source, (sqlite) => withStore(postgresUrl, (postgres) => expectSameStores(sqlite, postgres)));

      const back = join(workspace.root, 'back.db');
      const again = await migrate(postgresUrl, back);
      expect(again.source).toEqual(there.source);
      await withStore(source, (original) => withStore(back, (copy) => expectSameStores(original, copy)));

      // The Postgres copy answers recall like the original: the same hits for a word query.
      const hits = (store: MemoryStore) =>
        store
          .searchText({ scopes: ['project:alpha', 'global'], terms: ['word42'], limit: 100 })
          .then((found) => found.map((hit) => hit.memory.id).sort());
      expect(await withStore(postgresUrl, hits)).toEqual(await withStore(source, hits));
    }, 600_000);

    it('a copy into Postgres killed mid-copy resumes where it stopped and ends exact', async () => {
      const source = join(workspace.root, 'resume.db');
      await withStore(source, (store) => seedRichStore(store, 1_500, 22));
      const postgresUrl = freshSchemaUrl();
      const child = spawnEngram(workspace, ['migrate', '--from', source, '--to', postgresUrl, '--page-size', '2']);
      let finished = false;
      const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
      void exited.then(() => (finished = true));
      for (;;) {
        expect(finished, 'migrate finished before it could be interrupted').toBe(false);
        if ((await sqlCount(postgresUrl, 'memories')) >= 100) break;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      child.kill('SIGKILL');
      await exited;
      const copied = await sqlCount(postgresUrl, 'memories');
      const total = await withStore(source, async (store) => (await readAll(store)).memories.length);
      expect(copied).toBeGreaterThanOrEqual(100);
      expect(copied).toBeLessThan(total);

      const report = await migrate(source, postgresUrl);
      expect(report).toMatchObject({
        resumed: true,
        verified: true,
        skipped: { memories: copied },
        written: { memories: total - copied },
      });
      await withStore(source, (sqlite) => withStore(postgresUrl, (postgres) => expectSameStores(sqlite, postgres)));
    }, 300_000);

    it('refuses a Postgres target that holds other data and leaves it as it was', async () => {
      const source = join(workspace.root, 'small.db');
      await withStore(source, (store) => seedRichStore(store, 50, 23));
      const postgresUrl = freshSchemaUrl();
      await withStore(postgresUrl, (store) =>
        store.create({ scope: 'global', content: 'A team memory already here.' }, { actor: 'test' }),
      );
      const before = await withStore(postgresUrl, readAll);
      const refused = await migrate(source, postgresUrl, [], 2);
      expect(refused.error).toMatchObject({
        code: 'CONFLICT',
        message: expect.stringContaining('holds different data'),
      });
      expect(await withStore(postgresUrl, readAll)).toEqual(before);
      const same = await migrate(postgresUrl, `${postgresUrl}&pool=3`, [], 2);
      expect(same.error).toMatchObject({ code: 'INVALID_INPUT', message: expect.stringContaining('same store') });
    }, 120_000);

    it('engram eval can load its dataset into a Postgres store, and ranks the answers there as on SQLite', async () => {
      const topics = [
        'deploys go through ArgoCD',
        'the queue is Kafka',
        'tests use the real database',
        'billing runs on Fridays',
        'the user prefers tabs',
      ];
      const lines = [
        ...topics.flatMap((topic, index) => [
          JSON.stringify({
            kind: 'memory',
            id: `m${index}`,
            scope: 'project:eval',
            content: `Decision: ${topic}.`,
            created_at: `2024-01-0${index + 1}T00:00:00.000Z`,
          }),
          JSON.stringify({
            kind: 'memory',
            id: `n${index}`,
            scope: 'project:eval',
            content: `Unrelated note number ${index} about lunch.`,
          }),
        ]),
        ...topics.map((topic, index) =>
          JSON.stringify({
            kind: 'query',
            id: `q${index}`,
            scope: 'project:eval',
            query: `what about ${topic.split(' ').slice(-2).join(' ')}?`,
            relevant: [`m${index}`],
          }),
        ),
      ];
      const dataset = parseEvalDataset(lines.join('\n'));
      const schemaUrl = freshSchemaUrl();
      let created: MemoryStore | undefined;
      const onPostgres = await runEval(dataset, {
        ks: [1, 5],
        includeQueries: true,
        createStore: ({ settings, now }) =>
          (created = new PostgresMemoryStore({ url: schemaUrl, limits: settings.memory, now })),
      });
      const onSqlite = await runEval(dataset, { ks: [1, 5], includeQueries: true });
      expect(created?.info().backend).toBe('postgres');
      // The dataset really went into that schema (runEval closed the store; it is still there).
      expect(await sqlCount(schemaUrl, 'memories')).toBe(dataset.memories.length);
      expect(onPostgres.overall.recall[5]).toBe(1);
      expect(onPostgres.overall.recall[1]).toBe(onSqlite.overall.recall[1]);
      expect(onPostgres.queries!.map((query) => query.ranking[0])).toEqual(
        onSqlite.queries!.map((query) => query.ranking[0]),
      );
    }, 120_000);
  },
);
