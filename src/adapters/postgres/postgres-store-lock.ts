import { EngramError, isEngramError } from '../../kernel/errors.js';
import type { StoreLocks } from '../../contracts/memory-store-locks.js';
import { checkLockRequest } from '../../contracts/store-checks/lock-input.js';
import type { PostgresAccess } from './postgres-database.js';
import { errorCode } from './postgres-errors.js';

export interface PostgresStoreLockDependencies {
  database: PostgresAccess;
  /** The store's schema: locks of different stores in one database never meet. */
  schema: string;
  defaultWaitMs: () => number;
  onWarning: (message: string) => void;
}

/**
 * The store's locks role: named locks shared by every process on the database: a session advisory lock on a connection
 * held for the duration of `fn` (its own pool, so held locks never starve `fn`'s queries). The
 * server queues waiters and gives up after `waitMs` (lock_timeout); a holder that dies closes its
 * connection, and the server releases its locks at once.
 */
export class PostgresStoreLock implements StoreLocks {
  readonly #dependencies: PostgresStoreLockDependencies;

  constructor(dependencies: PostgresStoreLockDependencies) {
    this.#dependencies = dependencies;
  }

  async hold<T>(name: string, fn: () => Promise<T>, options?: { waitMs?: number }): Promise<T> {
    const request = checkLockRequest(name, fn, options, this.#dependencies.defaultWaitMs());
    const key = `engram-lock:${this.#dependencies.schema}:${request.name}`;
    const connection = await this.#dependencies.database.dedicatedConnection();
    let broken = false;
    try {
      try {
        await this.#acquire(connection, key, request.name, request.waitMs);
      } catch (error) {
        // A timed-out wait leaves a healthy connection; anything else may not.
        broken = !(isEngramError(error) && error.code === 'LOCK_TIMEOUT');
        throw error;
      }
      try {
        return await fn();
      } finally {
        try {
          await connection.query('SELECT pg_advisory_unlock(hashtextextended($1, 0))', [key], { prepared: true });
        } catch (error) {
          // Closing the connection releases the lock on the server.
          broken = true;
          this.#dependencies.onWarning(
            `engram: could not release the store lock ${JSON.stringify(request.name)} (${(error as Error).message}); its connection is closed instead.`,
          );
        }
      }
    } finally {
      connection.release(broken);
    }
  }

  async #acquire(
    connection: { query: PostgresAccess['query'] },
    key: string,
    name: string,
    waitMs: number,
  ): Promise<void> {
    // A free lock (the usual case) is taken in one round trip; only a busy one is waited for.
    const [row] = (
      await connection.query<{ taken: boolean }>(
        'SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS taken',
        [key],
        { prepared: true },
      )
    ).rows;
    if (row!.taken) return;
    if (waitMs === 0) throw timeout(name, waitMs);
    // The wait is the server's: lock_timeout cancels it; the statement timeout must not cut it shorter.
    await connection.query(
      "SELECT set_config('lock_timeout', $1, false), set_config('statement_timeout', '0', false)",
      [`${waitMs}ms`],
    );
    try {
      await connection.query('SELECT pg_advisory_lock(hashtextextended($1, 0))', [key]);
    } catch (error) {
      const cause = (error as { cause?: unknown }).cause ?? error;
      if (errorCode(cause) === '55P03') throw timeout(name, waitMs);
      throw error;
    } finally {
      await connection.query('RESET lock_timeout; RESET statement_timeout').catch(() => undefined);
    }
  }
}

function timeout(name: string, waitMs: number): EngramError {
  return new EngramError(
    'LOCK_TIMEOUT',
    `Waited ${waitMs} ms for the store lock ${JSON.stringify(name)}, held by another caller. Try again; a holder that stops releases it when its connection closes.`,
    { details: { lock: name, waitMs } },
  );
}
