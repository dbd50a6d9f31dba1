import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { PostgresMemoryStore } from '../../../src/adapters/postgres/postgres-memory-store.js';
import { sameMemoryState } from '../../../src/memory/memory-changes.js';
import type { Memory } from '../../../src/memory/memory.js';
import { everything } from '../../../src/testing/store-suite-support.js';
import { collectStoreWriteWorker, unexpectedStderr } from '../../../src/testing/store-write-worker-process.js';
import { dropSchema, freshSchemaUrl, withServerClient } from '../../support/postgres-schemas.js';
import { spawnPostgresWorker, type MixedLine } from '../../support/postgres-store-worker.js';

// Several processes on one Postgres store at once (the issue's must-holds beyond the conformance
// suite): many writers lose and duplicate nothing and leave a complete history; a writer killed
// mid-transaction leaves nothing half-written.

const serverUrl = inject('postgresUrl');
const skipReason = inject('postgresSkipReason');
const WRITERS = 4;
const OPERATIONS_PER_WRITER = 1_000;
const SHARED_MEMORIES = 20;
const CHANGES = new Set(['update', 'archive', 'restore', 'invalidate', 'delete']);

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function freshStore(prefix: string, query = ''): Promise<{ store: PostgresMemoryStore; url: string }> {
  const { url, schema } = freshSchemaUrl(serverUrl, prefix);
  const store = new PostgresMemoryStore({ url, onWarning: () => undefined });
  await store.open();
  cleanups.push(() => dropSchema(serverUrl, schema));
  cleanups.push(() => store.close());
  return { store, url: query ? `${url}&${query}` : url };
}

/** The fields a history entry's states are compared by: hits and last access change without history. */
function expectSameState(actual: Memory | null | undefined, expected: Memory | null | undefined, label: string): void {
  expect(actual && expected && sameMemoryState(actual, expected), label).toBe(true);
}

describe.skipIf(!serverUrl)(
  `Postgres store under concurrent processes${serverUrl ? '' : ` [skipped: ${skipReason}]`}`,
  () => {
    it(
      `${WRITERS} processes × ${OPERATIONS_PER_WRITER.toLocaleString('en')} mixed writes at once: nothing lost, nothing duplicated, history complete`,
      { timeout: 600_000 },
      async () => {
        const { store, url } = await freshStore('mixed');
        const scope = 'project:mixed-writers';
        const shared = (
          await store.createMany(
            Array.from({ length: SHARED_MEMORIES }, (_, index) => ({
              scope,
              name: `shared-${index}`,
              content: `Shared memory ${index}, written by every writer.`,
            })),
            { actor: 'test-seed' },
          )
        ).map((memory) => memory.id);

        // All open the store first, then start at one moment (process start-up varies).
        const startAt = Date.now() + 5_000;
        const results = await Promise.all(
          Array.from({ length: WRITERS }, (_, index) =>
            collectStoreWriteWorker(
              spawnPostgresWorker({
                mode: 'mixed',
                url,
                scope,
                tag: `w${index}`,
                seed: 1_000 + index,
                count: OPERATIONS_PER_WRITER,
                shared,
                startAt,
              }),
            ),
          ),
        );
        for (const result of results) {
          expect({ exitCode: result.exitCode, signal: result.signal, stderr: unexpectedStderr(result.stderr) }).toEqual(
            { exitCode: 0, signal: null, stderr: '' },
          );
          expect(result.ids).toHaveLength(OPERATIONS_PER_WRITER);
        }
        const lines = results.flatMap((result) => result.ids.map((line) => JSON.parse(line) as MixedLine));
        const ok = lines.filter((line) => line.outcome === 'ok');
        // The mix really ran: every kind of change succeeded, and races refused some.
        for (const op of ['create', 'update', 'archive', 'restore', 'invalidate', 'delete', 'access']) {
          expect(ok.filter((line) => line.op === op).length, op).toBeGreaterThan(10);
        }

        const created = ok.filter((line) => line.op === 'create').map((line) => line.ids[0]!);
        const deleted = new Set(ok.filter((line) => line.op === 'delete').map((line) => line.ids[0]!));
        expect(new Set(created).size).toBe(created.length);
        const expectedLive = [...shared, ...created].filter((id) => !deleted.has(id)).sort();

        // Nothing lost, nothing duplicated.
        const stored = await store.list({ ...everything([scope]), order: 'created-asc' });
        expect(stored.map((memory) => memory.id).sort()).toEqual(expectedLive);
        expect(await store.count(everything([scope]))).toBe(expectedLive.length);
        expect(new Set(stored.map((memory) => memory.name)).size).toBe(stored.length);

        // History complete: one entry per successful change, each starting from the state the one
        // before left (no update was lost in between), ending in the stored state.
        const changesPerMemory = new Map<string, number>();
        for (const line of ok)
          if (CHANGES.has(line.op)) changesPerMemory.set(line.ids[0]!, (changesPerMemory.get(line.ids[0]!) ?? 0) + 1);
        const byId = new Map(stored.map((memory) => [memory.id, memory]));
        const problems: string[] = [];
        for (const id of [...shared, ...created]) {
          const history = await store.history(id);
          if (history.length !== 1 + (changesPerMemory.get(id) ?? 0))
            problems.push(
              `${id}: ${history.length} history entries for ${1 + (changesPerMemory.get(id) ?? 0)} changes`,
            );
          expect(history[0]!.action).toBe('create');
          for (let index = 1; index < history.length; index += 1)
            expectSameState(
              history[index]!.before,
              history[index - 1]!.after,
              `${id} entry ${index} starts where ${index - 1} ended`,
            );
          if (deleted.has(id)) {
            expect(history.at(-1)!.action).toBe('delete');
          } else {
            expectSameState(byId.get(id), history.at(-1)!.after, `${id} is in the state of its last change`);
          }
        }
        expect(problems).toEqual([]);

        // Recorded hits: concurrent increments of the same rows lose none.
        const hits = new Map<string, number>();
        for (const line of ok)
          if (line.op === 'access') for (const id of line.ids) hits.set(id, (hits.get(id) ?? 0) + 1);
        for (const memory of stored) expect(memory.hitCount, `hits of ${memory.id}`).toBe(hits.get(memory.id) ?? 0);

        // The full-text index followed every write: each live memory is found by its words.
        const found = await store.searchText({ scopes: [scope], terms: ['writer', 'memory'], limit: 100_000 });
        const active = stored.filter((memory) => !memory.archived && memory.invalidAt === null);
        expect(found.map((hit) => hit.memory.id).sort()).toEqual(active.map((memory) => memory.id).sort());
      },
    );

    it(
      'a process killed with SIGKILL mid-transaction leaves no partial memory and no lock behind',
      { timeout: 180_000 },
      async () => {
        const batchSize = 1_000;
        const { store, url } = await freshStore('killed', 'application_name=engram_killed_writer');
        const scope = 'project:killed-writer';
        const child = spawnPostgresWorker({ mode: 'batches', url, scope, tag: 'doomed', batchSize });
        const begun: number[] = [];
        const done: number[] = [];
        const exited = collectStoreWriteWorker(child, (line) => {
          const [word, batch] = line.split(' ');
          (word === 'begin' ? begun : done).push(Number(batch));
        });

        // Wait for two whole batches and the start of a third, then for the server to show the writer
        // inside its transaction, and kill it there.
        let inTransaction = false;
        for (const started = Date.now(); Date.now() - started < 120_000 && !inTransaction; await sleep(5)) {
          if (done.length < 2 || begun.length < 3) continue;
          inTransaction = await withServerClient(serverUrl, async (client) => {
            const result = await client.query(
              "SELECT 1 FROM pg_stat_activity WHERE application_name = 'engram_killed_writer' AND xact_start IS NOT NULL AND state <> 'idle'",
            );
            return (result.rowCount ?? 0) > 0;
          });
        }
        expect(inTransaction, 'the writer was seen inside a transaction').toBe(true);
        child.kill('SIGKILL');
        const result = await exited;
        expect({ signal: result.signal, stderr: unexpectedStderr(result.stderr) }).toEqual({
          signal: 'SIGKILL',
          stderr: '',
        });

        // The server ends the dead writer's session: a statement it was running either commits whole
        // (a single statement is its own transaction) or rolls back whole. Wait for that, then look.
        await expect
          .poll(
            () =>
              withServerClient(
                serverUrl,
                async (client) =>
                  (await client.query("SELECT 1 FROM pg_stat_activity WHERE application_name = 'engram_killed_writer'"))
                    .rowCount,
              ),
            {
              timeout: 10_000,
            },
          )
          .toBe(0);
        // Every batch is all there or not there at all.
        const memories = await store.list(everything([scope]));
        const perBatch = new Map<number, number>();
        for (const memory of memories) {
          const batch = Number(/-b(\d+)-/.exec(memory.name)![1]);
          perBatch.set(batch, (perBatch.get(batch) ?? 0) + 1);
        }
        for (const batch of done) expect(perBatch.get(batch), `batch ${batch}`).toBe(batchSize);
        const cut = begun.filter((batch) => !done.includes(batch));
        expect(cut).toHaveLength(1);
        expect([0, batchSize], `the batch cut short (${cut[0]}) holds all or nothing`).toContain(
          perBatch.get(cut[0]!) ?? 0,
        );
        for (const [batch, count] of perBatch) expect(count, `batch ${batch}`).toBe(batchSize);

        // No history without its memory, no memory without its history, and the index matches.
        const historyCount = await withServerClient(serverUrl, async (client) => {
          const schema = new URL(url).searchParams.get('schema')!;
          const row = await client.query(`SELECT count(*)::int AS n FROM "${schema}".memory_history`);
          return (row.rows[0] as { n: number }).n;
        });
        expect(historyCount).toBe(memories.length);
        const found = await store.searchText({ scopes: [scope], terms: ['batch'], limit: 100_000 });
        expect(found).toHaveLength(memories.length);

        // Its row locks went with its session: the rows it wrote can be changed at once.
        const survivor = memories[0]!;
        expect((await store.update(survivor.id, { importance: 0.9 }, { actor: 'test' })).importance).toBe(0.9);
      },
    );

    it('the change feed from head() lists no change made before it while another transaction stays open', async () => {
      // Any open transaction on the server (another database's too) holds the snapshot's xmin back;
      // a cursor that was only that xmin read every change after it again, the ones before head() too.
      const { store } = await freshStore('feedopen');
      await withServerClient(serverUrl, async (other) => {
        await other.query('BEGIN');
        await other.query('SELECT pg_current_xact_id()');
        try {
          const early = await store.create(
            { scope: 'project:feed', content: 'Written before the cursor.' },
            { actor: 't' },
          );
          const head = await store.changes.head();
          const later = await store.create(
            { scope: 'project:feed', content: 'Written after the cursor.' },
            { actor: 't' },
          );
          const page = await store.changes.read(head, 100);
          expect(page.changes.map((change) => change.memoryId)).toEqual([later.id]);
          expect(page.changes.map((change) => change.memoryId)).not.toContain(early.id);
          // From the page's cursor: nothing again while nothing changed.
          expect((await store.changes.read(page.cursor, 100)).changes).toEqual([]);
          // An older engram's cursor (the xmin alone) is still read, at least once.
          const xmin = /^postgres:snapshot:(\d+):/.exec(head)![1]!;
          const old = await store.changes.read(`postgres:${xmin}`, 100);
          expect(old.changes.map((change) => change.memoryId)).toEqual(expect.arrayContaining([early.id, later.id]));
          expect(old.cursor).toMatch(/^postgres:snapshot:/);
        } finally {
          await other.query('ROLLBACK');
        }
      });
    });
  },
);
