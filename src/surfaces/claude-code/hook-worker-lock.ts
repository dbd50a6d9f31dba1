import {
  closeSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { spoolFolder } from './hook-spool.js';

/**
 * One hooks' worker per store at a time: `spool/worker-<store>.pid`, holding the worker's pid. Many
 * hooks end at once (several sessions, a SessionEnd right after a Stop), and each would start a
 * worker that loads all of engram, costing every hook running beside it its start-up time; so the
 * hook that starts the worker takes the lock for it first (one O_EXCL create: one hook of many
 * wins), empty, and writes the started worker's pid into it. A lock that is empty for a moment is a
 * worker starting; one whose pid is gone, or that its worker has not touched for
 * WORKER_LOCK_STALE_MS (the pid may be another process's by now), is a dead worker's and is taken
 * over. Only node:fs here: the hook loads this.
 */

/** A worker lock not touched for this long is a dead or stuck worker's (its pid may be another process's by now). */
export const WORKER_LOCK_STALE_MS = 2 * 60_000;
/** How often a running worker touches its lock. */
export const WORKER_LOCK_HEARTBEAT_MS = 20_000;
/** A lock still without a pid after this long was left by a hook that died between taking it and starting the worker. */
export const WORKER_START_GRACE_MS = 10_000;

function workerLockPath(home: string, store: string): string {
  return join(spoolFolder(home), `worker-${store.replace(/[^a-z0-9]/gi, '')}.pid`);
}

interface LockState {
  /** The pid written in the lock, or undefined while the hook that took it starts the worker. */
  pid?: number;
  touchedAt: number;
}

function readLock(path: string): LockState | undefined {
  try {
    const text = readFileSync(path, 'utf8').trim();
    const touchedAt = statSync(path).mtimeMs;
    const pid = Number(text);
    return Number.isInteger(pid) && pid > 0 ? { pid, touchedAt } : { touchedAt };
  } catch {
    return undefined;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

/** Whether a lock belongs to a worker that runs, or is being started, now (not to this process). */
function isHeld(state: LockState | undefined, now: number): boolean {
  if (state === undefined) return false;
  if (state.pid === undefined) return now - state.touchedAt <= WORKER_START_GRACE_MS;
  if (state.pid === process.pid || !isAlive(state.pid)) return false;
  return now - state.touchedAt <= WORKER_LOCK_STALE_MS;
}

/**
 * Whether a worker for this store runs, or is being started, now: its lock held by a live process
 * that touched it within WORKER_LOCK_STALE_MS, or taken by a hook within WORKER_START_GRACE_MS.
 */
export function isWorkerRunning(home: string, store: string, now = Date.now()): boolean {
  return isHeld(readLock(workerLockPath(home, store)), now);
}

/** A hook's claim on the worker lock, for the worker it is about to start. */
export interface WorkerStart {
  /** Writes the started worker's pid into the lock (it is the worker's from then on). */
  started(pid: number): void;
  /** The worker could not be started: the lock goes, so the next hook tries. */
  abandon(): void;
}

/**
 * The hook side: takes the store's worker lock for a worker it is about to start, or undefined when
 * a worker runs or another hook is starting one (of many hooks at once exactly one gets it). A dead
 * worker's lock is moved away first (one rename: one hook of many succeeds) and then taken as usual.
 */
export function claimWorkerStart(home: string, store: string, now = Date.now()): WorkerStart | undefined {
  const path = workerLockPath(home, store);
  mkdirSync(spoolFolder(home), { recursive: true, mode: 0o700 });
  for (let attempt = 0; attempt < 2; attempt += 1) {
    let fd: number;
    try {
      fd = openSync(path, 'wx', 0o600);
    } catch (error) {
      // No lock to be had (a read-only folder): start the worker anyway, jobs are leased.
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST')
        return { started: () => undefined, abandon: () => undefined };
      if (isHeld(readLock(path), now)) return undefined;
      const aside = `${path}.${process.pid}.stale`;
      try {
        renameSync(path, aside);
        rmSync(aside, { force: true });
      } catch {
        // Another hook moved it first: the create above decides again.
      }
      continue;
    }
    let open = true;
    const close = (): void => {
      if (open) closeSync(fd);
      open = false;
    };
    return {
      started(pid) {
        try {
          writeSync(fd, String(pid));
        } finally {
          close();
        }
      },
      abandon() {
        close();
        if (readLock(path)?.pid === undefined) rmSync(path, { force: true });
      },
    };
  }
  return undefined;
}

/**
 * The worker side: takes the store's worker lock, or finds it already handed over by the hook that
 * started this worker (its pid in it; while the lock is still empty the hook is writing it, waited
 * for up to WORKER_START_GRACE_MS). False when another live worker holds it.
 */
export async function acquireWorkerLock(home: string, store: string): Promise<boolean> {
  const path = workerLockPath(home, store);
  for (const started = Date.now(); ;) {
    const state = readLock(path);
    if (state?.pid === process.pid) return true;
    if (state === undefined || state.pid !== undefined || Date.now() - started > WORKER_START_GRACE_MS) break;
    await sleep(20);
  }
  return takeWorkerLock(home, store);
}

/** Takes the store's worker lock at once (or a dead worker's); false when a live worker holds it. */
export function takeWorkerLock(home: string, store: string): boolean {
  const path = workerLockPath(home, store);
  mkdirSync(spoolFolder(home), { recursive: true, mode: 0o700 });
  try {
    const fd = openSync(path, 'wx', 0o600);
    writeSync(fd, String(process.pid));
    closeSync(fd);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') return true; // No lock to be had: run anyway (jobs are leased).
  }
  if (isHeld(readLock(path), Date.now())) return false;
  const temporary = `${path}.${process.pid}`;
  try {
    const fd = openSync(temporary, 'w', 0o600);
    writeSync(fd, String(process.pid));
    closeSync(fd);
    renameSync(temporary, path);
  } catch {
    rmSync(temporary, { force: true });
  }
  return readLock(path)?.pid === process.pid;
}

/** The running worker says it is alive (every WORKER_LOCK_HEARTBEAT_MS). */
export function touchWorkerLock(home: string, store: string): void {
  const path = workerLockPath(home, store);
  if (readLock(path)?.pid !== process.pid) return;
  try {
    const now = new Date();
    utimesSync(path, now, now);
  } catch {
    // Gone: the next look finds no worker and a hook starts one.
  }
}

/** Lets go of the store's worker lock (only when this process holds it). */
export function releaseWorkerLock(home: string, store: string): void {
  const path = workerLockPath(home, store);
  if (readLock(path)?.pid === process.pid) rmSync(path, { force: true });
}
