import { closeSync, existsSync, openSync, readSync, statSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { EngramError, isEngramError } from '../../kernel/errors.js';
import type { SqliteConnection } from './sqlite-driver.js';
import { LATEST_SQLITE_VERSION, SQLITE_MIGRATIONS } from './sqlite-migrations.js';

// Opening an engram database safely: refuse what is not one, refuse a newer schema before
// writing anything, migrate under a write lock, and name corruption as such.

const SQLITE_HEADER = 'SQLite format 3\u0000';

/** Refuses, before SQLite touches it, a non-empty file that does not start with SQLite's header. */
export function assertLooksLikeSqlite(path: string): void {
  if (!existsSync(path)) return;
  const stats = statSync(path);
  if (stats.isDirectory())
    throw new EngramError('STORE_CORRUPT', `The store path ${path} is a directory, not a database file.`);
  if (stats.size === 0) return;
  const header = Buffer.alloc(16);
  const descriptor = openSync(path, 'r');
  try {
    readSync(descriptor, header, 0, 16, 0);
  } finally {
    closeSync(descriptor);
  }
  if (header.toString('latin1') !== SQLITE_HEADER) {
    throw new EngramError(
      'STORE_CORRUPT',
      `${path} is not an engram database (not a SQLite file). engram will not overwrite it: move it away or set ENGRAM_STORE to another path.`,
    );
  }
}

function schemaVersion(db: SqliteConnection): number {
  const exists = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'").get();
  if (!exists) return 0;
  return (
    (db.prepare('SELECT MAX(version) AS version FROM schema_migrations').get() as { version: number | null }).version ??
    0
  );
}

export function assertSchemaNotNewer(db: SqliteConnection, path: string): void {
  const found = schemaVersion(db);
  if (found > LATEST_SQLITE_VERSION) {
    throw new EngramError(
      'STORE_SCHEMA_NEWER',
      `${path} has schema version ${found}, newer than this engram understands (${LATEST_SQLITE_VERSION}). Upgrade engram.`,
    );
  }
}

export function migrate(db: SqliteConnection, targetVersion: number): void {
  const current = (): number => schemaVersion(db);
  if (current() >= targetVersion) return;
  immediateTransaction(db, () => {
    db.exec(
      'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)',
    );
    // Another process may have migrated while this one waited for the lock.
    const start = current();
    for (const migration of SQLITE_MIGRATIONS) {
      if (migration.version <= start || migration.version > targetVersion) continue;
      migration.up(db);
      db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(
        migration.version,
        migration.name,
        Date.now(),
      );
    }
  });
}

const depths = new WeakMap<SqliteConnection, number>();

/**
 * Runs `work` in one BEGIN IMMEDIATE transaction (the write lock taken up front, so no other
 * process writes in between): committed if it returns, rolled back if it throws. A call inside
 * another one is a savepoint of it.
 */
export function immediateTransaction(db: SqliteConnection, work: () => void, options?: { begun?: boolean }): void {
  const depth = depths.get(db) ?? 0;
  const savepoint = `engram_${depth}`;
  if (depth > 0) db.exec(`SAVEPOINT ${savepoint}`);
  else if (options?.begun !== true) db.exec('BEGIN IMMEDIATE');
  depths.set(db, depth + 1);
  try {
    work();
    db.exec(depth === 0 ? 'COMMIT' : `RELEASE ${savepoint}`);
  } catch (error) {
    try {
      db.exec(depth === 0 ? 'ROLLBACK' : `ROLLBACK TO ${savepoint}; RELEASE ${savepoint}`);
    } catch {
      // SQLite already rolled the transaction back (a failed COMMIT, an I/O error): nothing left to undo.
    }
    throw error;
  } finally {
    depths.set(db, depth);
  }
}

/** The pauses between tries for a write lock another connection holds: SQLite's own busy handler's. */
const BUSY_PAUSES_MS = [1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50, 100];

/**
 * `immediateTransaction` for a connection other processes write to: a write lock another connection
 * holds is waited for on a timer, never in SQLite's busy handler, which would block the event loop
 * (every request, stream and timer of the process) for up to `waitMs`. BEGIN IMMEDIATE is tried
 * without the busy handler (`busy_timeout` 0, then back to `busyTimeoutMs` for the reads), with
 * SQLite's pauses between tries; once `waitMs` has passed SQLite's own "database is locked" error
 * is thrown. Once BEGIN succeeds, `work` and COMMIT run without a pause, as before. Inside a
 * transaction already open on the connection, it is a savepoint of it, run at once.
 */
export async function waitingTransaction(
  connection: () => SqliteConnection,
  work: () => void,
  options: { waitMs: number; busyTimeoutMs: number },
): Promise<void> {
  const started = performance.now();
  for (let attempt = 0; ; attempt += 1) {
    // Read again after each pause: the store may have been closed meanwhile.
    const db = connection();
    if ((depths.get(db) ?? 0) > 0 || tryBegin(db, options, started + options.waitMs)) {
      immediateTransaction(db, work, { begun: true });
      return;
    }
    const left = started + options.waitMs - performance.now();
    await sleep(Math.max(0, Math.min(BUSY_PAUSES_MS[Math.min(attempt, BUSY_PAUSES_MS.length - 1)]!, left)));
  }
}

/** BEGIN IMMEDIATE without waiting: false when another connection holds the write lock and `deadline` has not come. */
function tryBegin(db: SqliteConnection, options: { waitMs: number; busyTimeoutMs: number }, deadline: number): boolean {
  db.exec('PRAGMA busy_timeout = 0');
  try {
    db.exec('BEGIN IMMEDIATE');
    return true;
  } catch (error) {
    if (sqliteErrorName(error) !== 'SQLITE_BUSY') throw error;
    if (performance.now() < deadline) return false;
    throw new EngramError(
      'STORE_ERROR',
      `Store error: database is locked: another process held the store's write lock for ${Math.floor(options.waitMs)} ms (store.busyTimeoutMs). Nothing was written; try again.`,
      { cause: error, details: { sqlite: 'SQLITE_BUSY' } },
    );
  } finally {
    db.exec(`PRAGMA busy_timeout = ${Math.floor(options.busyTimeoutMs)}`);
  }
}

/** SQLite's primary result codes engram names (the low byte of an extended code). */
const SQLITE_CODE_NAMES: Record<number, string> = {
  5: 'SQLITE_BUSY',
  6: 'SQLITE_LOCKED',
  10: 'SQLITE_IOERR',
  11: 'SQLITE_CORRUPT',
  13: 'SQLITE_FULL',
  14: 'SQLITE_CANTOPEN',
  26: 'SQLITE_NOTADB',
};

/** The SQLITE_* name of a driver error engram tells apart: node:sqlite carries a number (`errcode`), extended codes included. */
export function sqliteErrorName(error: unknown): string | undefined {
  const errcode = typeof error === 'object' && error !== null ? (error as { errcode?: unknown }).errcode : undefined;
  return typeof errcode === 'number' ? SQLITE_CODE_NAMES[errcode & 0xff] : undefined;
}

/** Runs SQLite work, turning driver errors into engram's codes: corruption is STORE_CORRUPT, the rest STORE_ERROR. */
/** `guard` for work that waits: the same codes for what it rejects with. */
export async function guardWaiting<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    return guard(() => {
      throw error;
    });
  }
}

export function guard<T>(work: () => T): T {
  try {
    return work();
  } catch (error) {
    if (isEngramError(error)) throw error;
    const code = sqliteErrorName(error) ?? '';
    if (code === 'SQLITE_CORRUPT' || code === 'SQLITE_NOTADB') {
      throw new EngramError(
        'STORE_CORRUPT',
        `The database file is corrupt (${code}); engram will not modify it. Restore a backup or move it away.`,
        { cause: error },
      );
    }
    // Busy and locked (another process held the write lock past busy_timeout), full disk, I/O:
    // STORE_ERROR as before, with SQLite's name in the details for whoever retries or reports.
    throw new EngramError('STORE_ERROR', `Store error: ${(error as Error).message}`, {
      cause: error,
      ...(code !== '' && { details: { sqlite: code } }),
    });
  }
}
