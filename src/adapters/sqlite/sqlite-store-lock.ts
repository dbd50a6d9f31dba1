import type { SqliteStatement } from './sqlite-driver.js';
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { EngramError, isEngramError } from '../../kernel/errors.js';
import type { StoreLocks } from '../../contracts/memory-store-locks.js';
import { checkLockRequest } from '../../contracts/store-checks/lock-input.js';
import { createSortableId } from '../../kernel/ids.js';
import { guard } from './sqlite-database.js';

/** How long a held lock's lease lasts, how long callers wait by default, and the longest pause between tries. */
export interface SqliteLockSettings {
  waitMs: number;
  leaseMs: number;
  pollMaxMs: number;
}

export interface SqliteStoreLockDependencies {
  statement: (sql: string) => SqliteStatement;
  /** Runs `work` in one BEGIN IMMEDIATE transaction, waiting for the write lock without blocking the event loop. */
  transaction: (work: () => void) => Promise<void>;
  now: () => Date;
  settings: () => SqliteLockSettings;
  onWarning: (message: string) => void;
}

interface LockRow {
  holder: string;
  host: string;
  pid: number;
  locked_until: number;
}

const FIRST_POLL_MS = 2;

/**
 * The store's locks role: named locks shared by every process that opens the file. Within this store, callers of one name
 * queue in order (no polling); across processes, a row in `store_locks` holds the name: taken with
 * one statement that succeeds only if no row is there or its lease ran out, renewed while `fn`
 * runs, and deleted (only if still ours) when it ends. A holder that died on this host is taken
 * over at once; elsewhere, when its lease runs out.
 */
export class SqliteStoreLock implements StoreLocks {
  readonly #dependencies: SqliteStoreLockDependencies;
  /** The end of each name's in-process queue: resolves when the last caller in it is done. */
  readonly #tails = new Map<string, Promise<void>>();
  /** This machine's name, read on first use (no I/O in constructors). */
  #hostName: string | undefined;

  constructor(dependencies: SqliteStoreLockDependencies) {
    this.#dependencies = dependencies;
  }

  async hold<T>(name: string, fn: () => Promise<T>, options?: { waitMs?: number }): Promise<T> {
    const settings = this.#dependencies.settings();
    const request = checkLockRequest(name, fn, options, settings.waitMs);
    const deadline = performance.now() + request.waitMs;

    let finish!: () => void;
    const done = new Promise<void>((resolve) => {
      finish = resolve;
    });
    const previous = this.#tails.get(request.name);
    // The next caller waits for this one AND the one before it, even if this one gives up early.
    const tail = previous ? previous.then(() => done) : done;
    this.#tails.set(request.name, tail);
    void tail.then(() => {
      if (this.#tails.get(request.name) === tail) this.#tails.delete(request.name);
    });

    try {
      if (previous && !(await settlesBefore(previous, deadline)))
        throw timeout(request.name, request.waitMs, settings.leaseMs);
      const holder = await this.#acquire(request.name, deadline, request.waitMs, settings);
      const renewal = this.#keepRenewed(request.name, holder, settings.leaseMs);
      try {
        return await fn();
      } finally {
        clearInterval(renewal);
        await this.#release(request.name, holder);
      }
    } finally {
      finish();
    }
  }

  /** Takes the row for `name`, polling with growing pauses until the deadline; returns the holder token. */
  async #acquire(name: string, deadline: number, waitMs: number, settings: SqliteLockSettings): Promise<string> {
    const holder = createSortableId('lock');
    let pause = FIRST_POLL_MS;
    for (;;) {
      if (await this.#tryTake(name, holder, settings.leaseMs)) return holder;
      const left = deadline - performance.now();
      if (left <= 0) throw timeout(name, waitMs, settings.leaseMs);
      await sleep(Math.min(pause, left));
      pause = Math.min(pause * 2, settings.pollMaxMs);
    }
  }

  async #tryTake(name: string, holder: string, leaseMs: number): Promise<boolean> {
    const now = this.#dependencies.now().getTime();
    const current = guard(
      () =>
        this.#dependencies
          .statement('SELECT holder, host, pid, locked_until FROM store_locks WHERE name = ?')
          .get(name) as LockRow | undefined,
    );
    if (current && current.locked_until > now && !this.#holderDied(current)) return false;
    // One statement: it inserts, or replaces the row it read (a lease run out or a dead holder),
    // and does nothing if another process took the lock since.
    let changes = 0;
    await this.#dependencies.transaction(() => {
      changes = this.#dependencies
        .statement(
          `INSERT INTO store_locks (name, holder, host, pid, locked_until, acquired_at) VALUES (@name, @holder, @host, @pid, @until, @now)
             ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, host = excluded.host, pid = excluded.pid,
               locked_until = excluded.locked_until, acquired_at = excluded.acquired_at
             WHERE store_locks.holder = @previous AND store_locks.locked_until = @previousUntil`,
        )
        .run({
          name,
          holder,
          host: this.#host(),
          pid: process.pid,
          until: now + leaseMs,
          now,
          previous: current?.holder ?? null,
          previousUntil: current?.locked_until ?? null,
        }).changes;
    });
    return changes === 1;
  }

  /** Whether the holder was a process on this host that no longer exists (killed, crashed). */
  #holderDied(row: LockRow): boolean {
    if (row.host !== this.#host() || row.pid === process.pid) return false;
    try {
      process.kill(row.pid, 0);
      return false;
    } catch (error) {
      return (error as NodeJS.ErrnoException).code === 'ESRCH';
    }
  }

  #host(): string {
    this.#hostName ??= hostname();
    return this.#hostName;
  }

  /** Extends the lease a third of the way through, so a live holder never loses the lock to a slow `fn`. */
  #keepRenewed(name: string, holder: string, leaseMs: number): NodeJS.Timeout {
    let warned = false;
    const timer = setInterval(
      () => {
        let changes = 1;
        this.#dependencies
          .transaction(() => {
            changes = this.#dependencies
              .statement('UPDATE store_locks SET locked_until = ? WHERE name = ? AND holder = ?')
              .run(this.#dependencies.now().getTime() + leaseMs, name, holder).changes;
          })
          .then(
            () => {
              if (changes === 0 && !warned) {
                warned = true;
                this.#dependencies.onWarning(
                  `engram: the store lock ${JSON.stringify(name)} was taken over while held (this process stalled past its ${leaseMs} ms lease).`,
                );
              }
            },
            () => {
              // Busy or closed: the next tick tries again, and the lease covers the gap.
            },
          );
      },
      Math.max(1, Math.floor(leaseMs / 3)),
    );
    timer.unref();
    return timer;
  }

  async #release(name: string, holder: string): Promise<void> {
    try {
      await this.#dependencies.transaction(() => {
        this.#dependencies.statement('DELETE FROM store_locks WHERE name = ? AND holder = ?').run(name, holder);
      });
    } catch (error) {
      // A closed store cannot delete the row: its lease ends it. Anything else is worth a word.
      if (!(isEngramError(error) && error.code === 'STORE_CLOSED')) {
        this.#dependencies.onWarning(
          `engram: could not release the store lock ${JSON.stringify(name)} (${(error as Error).message}); it expires with its lease.`,
        );
      }
    }
  }
}

/** Whether `promise` settles before the deadline (a performance.now() instant). */
async function settlesBefore(promise: Promise<void>, deadline: number): Promise<boolean> {
  const left = deadline - performance.now();
  if (left <= 0) {
    // Already settled callers still count: give the queue one turn to say so.
    return Promise.race([promise.then(() => true), Promise.resolve().then(() => Promise.resolve(false))]);
  }
  const controller = new AbortController();
  try {
    return await Promise.race([promise.then(() => true), sleep(left, false, { signal: controller.signal })]);
  } finally {
    controller.abort();
  }
}

function timeout(name: string, waitMs: number, leaseMs: number): EngramError {
  return new EngramError(
    'LOCK_TIMEOUT',
    `Waited ${waitMs} ms for the store lock ${JSON.stringify(name)}, held by another caller. Try again; a holder that stopped loses the lock within ${leaseMs} ms.`,
    { details: { lock: name, waitMs } },
  );
}
