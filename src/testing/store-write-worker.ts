/**
 * A child process of the store tests: opens a store by URL (any backend `openStore` knows) and
 * runs one task on it (see store-write-worker-tasks.ts), printing a line per unit of work done.
 *
 *   node dist/testing/store-write-worker.js --url <store url> --task <task as JSON> [--start-at <epoch ms>] [--start-signal <checkpoint>]
 *
 * With --start-signal, the worker prints `ready` once the store is open and starts the task when
 * that checkpoint is set in the store (by the parent, once every worker is ready).
 *
 * Exits 0 when done; on any error prints the error's code and message to stderr and exits 1.
 */
import { parseArgs } from 'node:util';
import { openStore } from '../node/open-store.js';
import { runStoreWorkerTask, warmUpStoreWorkerTask, type StoreWorkerTask } from './store-write-worker-tasks.js';

const USAGE =
  'usage: store-write-worker --url <store url> --task <task JSON> [--start-at <epoch ms>] [--start-signal <checkpoint>]';
/** How often a worker waiting for its start signal looks for it. */
const SIGNAL_POLL_MS = 1;

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      url: { type: 'string' },
      task: { type: 'string' },
      'start-at': { type: 'string' },
      'start-signal': { type: 'string' },
    },
  });
  const { url } = values;
  if (url === undefined || values.task === undefined) throw new Error(USAGE);
  const task = JSON.parse(values.task) as StoreWorkerTask;

  const store = await openStore(url, { busyTimeoutMs: 30_000 });
  await warmUpStoreWorkerTask(store, task);
  // Workers started together wait for one agreed moment, so their work really overlaps.
  const startAt = Number(values['start-at'] ?? 0);
  if (startAt > Date.now()) await new Promise((resolve) => setTimeout(resolve, startAt - Date.now()));
  try {
    const signal = values['start-signal'];
    if (signal !== undefined) {
      process.stdout.write('ready\n');
      while ((await store.checkpoints.get(signal)) === undefined)
        await new Promise((resolve) => setTimeout(resolve, SIGNAL_POLL_MS));
    }
    await runStoreWorkerTask(store, task, (line) => process.stdout.write(`${line}\n`));
  } finally {
    await store.close();
  }
}

main().catch((error: unknown) => {
  const { code, message } = error as { code?: string; message?: string };
  process.stderr.write(`${code ?? 'ERROR'}: ${message ?? String(error)}\n`);
  process.exitCode = 1;
});
