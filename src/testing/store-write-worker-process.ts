import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import type { StoreWith } from '../contracts/memory-store.js';
import type { StoreWorkerTask } from './store-write-worker-tasks.js';

const WORKER_PATH = join('dist', 'testing', 'store-write-worker.js');

/**
 * Finds the compiled write worker: walks up from this module to the folder whose package.json
 * is named "engram", then takes `dist/testing/store-write-worker.js` there. Child processes run
 * plain JavaScript, so the worker must be built first (`npm test` builds in its pretest step).
 */
export function locateStoreWriteWorker(from: string = import.meta.url): string {
  let directory = dirname(fileURLToPath(from));
  for (;;) {
    const manifest = join(directory, 'package.json');
    if (existsSync(manifest) && readPackageName(manifest) === 'engram') {
      const worker = join(directory, WORKER_PATH);
      if (!existsSync(worker)) {
        throw new Error(
          `The store write worker is missing at ${worker}: run \`npm run build\` first (npm test does it for you).`,
        );
      }
      return worker;
    }
    const parent = dirname(directory);
    if (parent === directory) {
      throw new Error(
        `No package.json named "engram" above ${fileURLToPath(from)}: cannot find ${WORKER_PATH}; run \`npm run build\` in the engram package.`,
      );
    }
    directory = parent;
  }
}

function readPackageName(manifest: string): string | undefined {
  try {
    return (JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string }).name;
  } catch {
    return undefined;
  }
}

export interface StoreWriteWorkerOptions {
  url: string;
  scope: string;
  /** How many memories to write; `unbounded` writes until the process is killed. */
  count: number | 'unbounded';
  /** Names the worker in memory names and the history's actor. */
  tag: string;
  /** Memories per transaction (`createMany`); default 1 (`create`). */
  batchSize?: number;
  /** `each` (default): print each id once written; `end`: all at the end, then a `timing:` line (see the write task). */
  report?: 'each' | 'end';
  /** Untimed memories written before `startAt` (see warmUpStoreWorkerTask). */
  warmup?: number;
  /** Epoch milliseconds at which to start writing, once the store is open (for overlapping writers). */
  startAt?: number;
}

export interface StoreWorkerOptions {
  /** The store to open: a SQLite path or any URL `openStore` accepts (postgres://…). */
  url: string;
  task: StoreWorkerTask;
  /** Epoch milliseconds at which to start the task, once the store is open (for overlapping workers). */
  startAt?: number;
  /** A checkpoint the worker waits for (after printing `ready`) before it starts; see runStoreWorkersTogether. */
  startSignal?: string;
}

export type StoreWriteWorker = ChildProcessByStdio<null, Readable, Readable>;

/** Starts a store worker running `task` as a child process of the current Node binary. */
export function spawnStoreWorker(options: StoreWorkerOptions): StoreWriteWorker {
  const worker = locateStoreWriteWorker();
  return spawn(
    process.execPath,
    [
      worker,
      ...['--url', options.url, '--task', JSON.stringify(options.task)],
      ...(options.startAt === undefined ? [] : ['--start-at', String(options.startAt)]),
      ...(options.startSignal === undefined ? [] : ['--start-signal', options.startSignal]),
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
}

/**
 * Runs tasks in child processes that all start at once: each opens the store and says `ready`,
 * and when every one has, a checkpoint set in `store` starts them together. Process start-up
 * varies by seconds on a busy machine; a fixed start time would let the first finish alone.
 * Returns each worker's output without the `ready` line.
 */
export async function runStoreWorkersTogether(
  store: StoreWith<'checkpoints'>,
  workers: ReadonlyArray<Omit<StoreWorkerOptions, 'startSignal' | 'startAt'>>,
): Promise<StoreWriteWorkerResult[]> {
  const signal = `store-worker-start:${randomUUID()}`;
  let waiting = workers.length;
  let started = false;
  const start = (): void => {
    if (started) return;
    started = true;
    void store.checkpoints.set(signal, 'go');
  };
  const results = await Promise.all(
    workers.map(async (options) => {
      let ready = false;
      const result = await collectStoreWriteWorker(spawnStoreWorker({ ...options, startSignal: signal }), (line) => {
        if (line === 'ready' && !ready) {
          ready = true;
          waiting -= 1;
          if (waiting === 0) start();
        }
      });
      // A worker that died before it was ready must not leave the others waiting for ever.
      start();
      const index = result.ids.indexOf('ready');
      return { ...result, ids: index === -1 ? result.ids : result.ids.filter((_, position) => position !== index) };
    }),
  );
  return results;
}

/** Starts a write worker (the `write` task) as a child process of the current Node binary. */
export function spawnStoreWriteWorker(options: StoreWriteWorkerOptions): StoreWriteWorker {
  const { url, startAt, ...task } = options;
  return spawnStoreWorker({ url, task: { mode: 'write', ...task }, ...(startAt !== undefined && { startAt }) });
}

/** Runs a task in a child process to the end and returns its output; see collectStoreWriteWorker. */
export function runStoreWorker(options: StoreWorkerOptions): Promise<StoreWriteWorkerResult> {
  return collectStoreWriteWorker(spawnStoreWorker(options));
}

export interface StoreWriteWorkerResult {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  /** Complete lines of stdout only (ids, for the write task): a line cut short by a kill is not one. */
  ids: string[];
  stderr: string;
}

/**
 * What a worker wrote to stderr beyond Node's own process warnings (`(node:1234) Warning: …`),
 * which a runtime may print for reasons unrelated to the store.
 */
export function unexpectedStderr(stderr: string): string {
  return stderr
    .split('\n')
    .filter((line) => line.trim().length > 0 && !/^\(node:\d+\) /.test(line) && !line.startsWith('(Use `node --trace-'))
    .join('\n');
}

/**
 * Collects a worker's output until it exits. `onId` sees each id as it is printed, so a caller
 * can act (e.g. kill the worker) part-way through.
 */
export function collectStoreWriteWorker(
  child: StoreWriteWorker,
  onId?: (id: string, printed: number) => void,
): Promise<StoreWriteWorkerResult> {
  return new Promise((resolve, reject) => {
    const ids: string[] = [];
    let pending = '';
    let stderr = '';
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      pending += chunk;
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) {
        if (line.length === 0) continue;
        ids.push(line);
        onId?.(line, ids.length);
      }
    });
    child.stderr.on('data', (chunk: string) => {
      stderr += chunk;
    });
    child.once('error', reject);
    child.once('close', (exitCode, signal) => resolve({ exitCode, signal, ids, stderr }));
  });
}
