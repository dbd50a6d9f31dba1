/**
 * Another process holding a SQLite store's write lock (BEGIN IMMEDIATE), as a second engram writing a
 * long transaction, a backup tool or a `sqlite3` shell would: prints `locked` once it holds it; the
 * line `release` on stdin rolls back and prints `released`, `lock` takes it again; stdin's end exits.
 *
 *   node --import tsx test/support/write-lock-holder.ts <database path>
 */
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { closeSqlite, openSqlite } from '../../src/adapters/sqlite/sqlite-driver.js';

/** The holder process, seen from the test. */
export interface WriteLockHolder {
  /** Rolls back: the lock is free until `lock()`. */
  release(): Promise<void>;
  /** Takes the write lock again. */
  lock(): Promise<void>;
  /** Ends the process (its lock goes with it). */
  stop(): Promise<void>;
}

/** Starts a process that holds the write lock of the SQLite file at `path`; resolves once it holds it. */
export async function holdWriteLock(path: string): Promise<WriteLockHolder> {
  const child: ChildProcessByStdio<Writable, Readable, null> = spawn(
    process.execPath,
    ['--import', 'tsx', fileURLToPath(import.meta.url), path],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  const lines = createInterface({ input: child.stdout });
  const waiting: Array<{ line: string; resolve: () => void; reject: (error: Error) => void }> = [];
  lines.on('line', (line) => {
    const index = waiting.findIndex((entry) => entry.line === line);
    if (index !== -1) waiting.splice(index, 1)[0]!.resolve();
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  void exited.then(() => {
    for (const entry of waiting.splice(0)) entry.reject(new Error('the write-lock holder exited'));
  });
  const next = (line: string): Promise<void> =>
    new Promise((resolve, reject) => waiting.push({ line, resolve, reject }));
  const locked = next('locked');
  await locked;
  return {
    release: () => {
      const released = next('released');
      child.stdin.write('release\n');
      return released;
    },
    lock: () => {
      const again = next('locked');
      child.stdin.write('lock\n');
      return again;
    },
    stop: async () => {
      child.stdin.end();
      await exited;
    },
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const db = openSqlite(process.argv[2]!);
  // The test's own writes may hold the lock for a moment when this one starts.
  db.exec('PRAGMA busy_timeout = 30000');
  db.exec('BEGIN IMMEDIATE');
  process.stdout.write('locked\n');
  let held = true;
  const commands = createInterface({ input: process.stdin });
  commands.on('line', (line) => {
    if (line === 'release' && held) {
      db.exec('ROLLBACK');
      held = false;
      process.stdout.write('released\n');
    } else if (line === 'lock' && !held) {
      db.exec('BEGIN IMMEDIATE');
      held = true;
      process.stdout.write('locked\n');
    }
  });
  commands.on('close', () => {
    if (held) db.exec('ROLLBACK');
    closeSqlite(db);
  });
}
