import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';

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
        throw new Error(`The store write worker is missing at ${worker}: run \`npm run build\` first (npm test does it for you).`);
      }
      return worker;
    }
    const parent = dirname(directory);
    if (parent === directory) {
      throw new Error(`No package.json named "engram" above ${fileURLToPath(from)}: cannot find ${WORKER_PATH}; run \`npm run build\` in the engram package.`);
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
  /** Epoch milliseconds at which to start writing, once the store is open (for overlapping writers). */
  startAt?: number;
}

export type StoreWriteWorker = ChildProcessByStdio<null, Readable, Readable>;

/** Starts a write worker as a child process of the current Node binary. */
export function spawnStoreWriteWorker(options: StoreWriteWorkerOptions): StoreWriteWorker {
  const worker = locateStoreWriteWorker();
  return spawn(
    process.execPath,
    [
      worker,
      ...['--url', options.url, '--scope', options.scope, '--count', String(options.count), '--tag', options.tag],
      ...(options.startAt === undefined ? [] : ['--start-at', String(options.startAt)]),
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
}

export interface StoreWriteWorkerResult {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  /** Ids from complete lines of stdout only: a line cut short by a kill is not an id. */
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
export function collectStoreWriteWorker(child: StoreWriteWorker, onId?: (id: string, printed: number) => void): Promise<StoreWriteWorkerResult> {
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
