/**
 * A child process of the Postgres concurrency tests (run with `node --import tsx`): opens a store by
 * URL and runs one task, printing one JSON line per operation only after it has returned, so the
 * parent can compare what was printed with what the store holds, even after killing it.
 *
 *   node --import tsx test/support/postgres-store-worker.ts '<task JSON>'
 *
 * Tasks:
 * - `mixed`: `count` operations drawn from a seeded random source: creates, updates, archives,
 *   restores, invalidations, deletes of its own memories; content updates, archive toggles and
 *   recorded hits on memories every worker shares. Refusals a race can cause (NOT_FOUND, CONFLICT)
 *   are printed as such.
 * - `batches`: writes memories `batchSize` at a time with importMany, printing `begin` before and
 *   `done` after each batch, until killed.
 */
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Readable } from 'node:stream';
import { openStore } from '../../src/node/open-store.js';
import type { MemoryStore } from '../../src/contracts/memory-store.js';
import { createRandomSource } from '../../src/testing/store-suite-support.js';

export type PostgresWorkerTask =
  | {
      mode: 'mixed';
      url: string;
      scope: string;
      tag: string;
      seed: number;
      count: number;
      shared: string[];
      startAt: number;
    }
  | { mode: 'batches'; url: string; scope: string; tag: string; batchSize: number };

/** One line of a `mixed` worker: the operation, the memory (or memories) it touched, and how it ended. */
export interface MixedLine {
  op: 'create' | 'update' | 'archive' | 'restore' | 'invalidate' | 'delete' | 'access';
  ids: string[];
  outcome: 'ok' | string;
}

export type PostgresWorker = ChildProcessByStdio<null, Readable, Readable>;

/** Starts a worker process running `task`. */
export function spawnPostgresWorker(task: PostgresWorkerTask): PostgresWorker {
  return spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), JSON.stringify(task)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

async function runMixed(
  store: MemoryStore,
  task: Extract<PostgresWorkerTask, { mode: 'mixed' }>,
  print: (line: MixedLine) => void,
): Promise<void> {
  const random = createRandomSource(task.seed);
  const actor = { actor: `mixed-writer:${task.tag}` };
  const own: string[] = [];
  const attempt = async (op: MixedLine['op'], ids: string[], action: () => Promise<unknown>): Promise<void> => {
    try {
      await action();
      print({ op, ids, outcome: 'ok' });
    } catch (error) {
      const code = (error as { code?: string }).code;
      // A race with another writer may refuse an operation; anything else is a failure of the test.
      if (code !== 'NOT_FOUND' && code !== 'CONFLICT') throw error;
      print({ op, ids, outcome: code });
    }
  };
  for (let index = 0; index < task.count; index += 1) {
    const roll = random.next();
    const target = own.length > 0 ? random.pick(own) : undefined;
    const shared = random.pick(task.shared);
    if (roll < 0.3 || target === undefined) {
      const memory = await store.create(
        { scope: task.scope, name: `${task.tag}-${index}`, content: `Writer ${task.tag} created memory ${index}.` },
        actor,
      );
      own.push(memory.id);
      print({ op: 'create', ids: [memory.id], outcome: 'ok' });
    } else if (roll < 0.45) {
      await attempt('update', [target], () =>
        store.update(
          target,
          { content: `Writer ${task.tag} rewrote its memory at step ${index}.`, importance: random.next() },
          actor,
        ),
      );
    } else if (roll < 0.6) {
      await attempt('update', [shared], () =>
        store.update(shared, { content: `Writer ${task.tag} rewrote the shared memory at step ${index}.` }, actor),
      );
    } else if (roll < 0.67) {
      await attempt('archive', [target], () => store.archive(target, actor));
    } else if (roll < 0.72) {
      await attempt('restore', [target], () => store.restore(target, actor));
    } else if (roll < 0.77) {
      // Another writer may toggle it in between: then this one is refused with CONFLICT.
      const archived = (await store.get(shared))?.archived ?? false;
      await attempt(archived ? 'restore' : 'archive', [shared], () =>
        archived ? store.restore(shared, actor) : store.archive(shared, actor),
      );
    } else if (roll < 0.82) {
      await attempt('invalidate', [target], () => store.invalidate(target, {}, actor));
    } else if (roll < 0.87) {
      own.splice(own.indexOf(target), 1);
      await attempt('delete', [target], () => store.delete(target, actor));
    } else {
      const ids = [shared, random.pick(task.shared), target];
      await attempt('access', ids, () => store.recordAccess(ids, new Date().toISOString()));
    }
  }
}

async function runBatches(
  store: MemoryStore,
  task: Extract<PostgresWorkerTask, { mode: 'batches' }>,
  print: (line: string) => void,
): Promise<void> {
  for (let batch = 0; ; batch += 1) {
    print(`begin ${batch}`);
    // importMany is one explicit transaction of many statements: a kill lands between them, before COMMIT.
    await store.importMany(
      Array.from({ length: task.batchSize }, (_, index) => ({
        scope: task.scope,
        name: `${task.tag}-b${batch}-${index}`,
        content: `Batch ${batch} item ${index} of ${task.tag}.`,
      })),
      { onExisting: 'fail' },
      { actor: `batch-writer:${task.tag}` },
    );
    print(`done ${batch}`);
  }
}

async function main(): Promise<void> {
  const task = JSON.parse(process.argv[2] ?? '') as PostgresWorkerTask;
  const store = await openStore(task.url, { onWarning: () => undefined });
  try {
    if (task.mode === 'mixed') {
      if (task.startAt > Date.now()) await new Promise((resolve) => setTimeout(resolve, task.startAt - Date.now()));
      await runMixed(store, task, (line) => process.stdout.write(`${JSON.stringify(line)}\n`));
    } else {
      await runBatches(store, task, (line) => process.stdout.write(`${line}\n`));
    }
  } finally {
    await store.close();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  main().catch((error: unknown) => {
    const { code, message } = error as { code?: string; message?: string };
    process.stderr.write(`${code ?? 'ERROR'}: ${message ?? String(error)}\n`);
    process.exitCode = 1;
  });
}
