import { createRequire } from 'node:module';
import { EngramError } from '../../kernel/errors.js';

// Which SQLite library opens engram's file: Node's built-in `node:sqlite` where Node has it
// without a flag (22.13+, 23.4+, 24+), else @photostructure/sqlite, the same `DatabaseSync` API as
// an addon whose binaries ship inside its npm package (no install script needed). One process
// uses one of them for every store: two SQLite libraries in one process do not see each other's
// locks on the same file.

/** A value SQLite binds or returns; blobs come back as Uint8Array. */
export type SqliteValue = null | number | bigint | string | Uint8Array;

/** A prepared statement as `node:sqlite` has it (rows are null-prototype objects). */
export interface SqliteStatement {
  run(...parameters: unknown[]): { changes: number; lastInsertRowid: number | bigint };
  get(...parameters: unknown[]): unknown;
  all(...parameters: unknown[]): unknown[];
}

/** The part of `DatabaseSync` engram uses. */
export interface SqliteConnection {
  exec(sql: string): void;
  prepare(sql: string): SqliteStatement;
  close(): void;
  function(
    name: string,
    options: { deterministic?: boolean },
    fn: (...args: SqliteValue[]) => SqliteValue | undefined,
  ): void;
  loadExtension(path: string): void;
  enableLoadExtension(allow: boolean): void;
}

/** How a connection opens: read-only for tools that inspect a file (tests, checks). */
export interface SqliteOpenOptions {
  readOnly?: boolean;
}

interface DatabaseSyncConstructor {
  new (path: string, options?: { allowExtension?: boolean; readOnly?: boolean }): SqliteConnection;
}

/** The library in use, and whether its close() needs a checkpoint first. */
export interface SqliteDriver {
  name: 'node:sqlite' | '@photostructure/sqlite';
  version: string;
  open(path: string, options?: SqliteOpenOptions): SqliteConnection;
  /** Closes a connection, first moving the WAL into the file where the library's close() would leave it there. */
  close(db: SqliteConnection): void;
}

const require = createRequire(import.meta.url);
let chosen: SqliteDriver | undefined;

/** True where `node:sqlite` loads without --experimental-sqlite: 22.13+, 23.4+, 24 and later. */
export function hasUnflaggedNodeSqlite(version: string = process.versions.node): boolean {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  return major >= 24 || (major === 23 && minor >= 4) || (major === 22 && minor >= 13);
}

/** The SQLite library of this process, chosen on first use. */
export function sqliteDriver(): SqliteDriver {
  chosen ??= hasUnflaggedNodeSqlite() ? (builtinDriver() ?? addonDriver()) : addonDriver();
  return chosen;
}

/** Opens a connection with the process's SQLite library, extension loading allowed (sqlite-vec). */
export function openSqlite(path: string, options?: SqliteOpenOptions): SqliteConnection {
  return sqliteDriver().open(path, options);
}

/** Closes a connection opened by openSqlite. */
export function closeSqlite(db: SqliteConnection): void {
  sqliteDriver().close(db);
}

function builtinDriver(): SqliteDriver | undefined {
  let module: { DatabaseSync: DatabaseSyncConstructor };
  try {
    module = withoutSqliteExperimentalWarning(
      () => require('node:sqlite') as { DatabaseSync: DatabaseSyncConstructor },
    );
  } catch {
    return undefined;
  }
  const { DatabaseSync } = module;
  return {
    name: 'node:sqlite',
    version: process.versions.node,
    open: (path, options) => new DatabaseSync(path, { allowExtension: true, readOnly: options?.readOnly === true }),
    close: (db) => db.close(),
  };
}

function addonDriver(): SqliteDriver {
  let module: { DatabaseSync: DatabaseSyncConstructor };
  let version: string;
  try {
    module = require('@photostructure/sqlite') as { DatabaseSync: DatabaseSyncConstructor };
    version = (require('@photostructure/sqlite/package.json') as { version: string }).version;
  } catch (error) {
    throw new EngramError(
      'STORE_UNSUPPORTED',
      `No SQLite library could be loaded: Node ${process.versions.node} has no unflagged node:sqlite (22.13 or later has) and @photostructure/sqlite did not load (${(error as Error).message}). Reinstall engram, or use Node 22.13 or later.`,
      { cause: error },
    );
  }
  const { DatabaseSync } = module;
  // 1.x close() leaves the connection open until its statements are garbage collected, so the
  // last connection does not checkpoint and remove the WAL as SQLite's close does: old page
  // versions (text since edited or deleted) would stay in the -wal file. A checkpoint that never
  // waits (busy_timeout 0) moves the pages into the file and empties the WAL when no other
  // connection is using it, as close would.
  const checkpointFirst = Number(version.split('.')[0]) < 2;
  return {
    name: '@photostructure/sqlite',
    version,
    open: (path, options) => new DatabaseSync(path, { allowExtension: true, readOnly: options?.readOnly === true }),
    close: (db) => {
      if (checkpointFirst) {
        try {
          db.exec('PRAGMA busy_timeout = 0');
          db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
        } catch {
          // Busy, read-only or not a WAL file: the data is safe in the WAL either way.
        }
      }
      db.close();
    },
  };
}

type EmitWarning = (warning: string | Error, ...rest: unknown[]) => void;

/**
 * Runs `load` with only Node 22's "SQLite is an experimental feature" warning held back: engram
 * chose the built-in deliberately, and the warning would land in every CLI run's stderr. Every
 * other warning passes through.
 */
function withoutSqliteExperimentalWarning<T>(load: () => T): T {
  const original = process.emitWarning as EmitWarning;
  const filtered: EmitWarning = (warning, ...rest) => {
    const first = rest[0];
    const type =
      typeof first === 'string'
        ? first
        : typeof first === 'object' && first !== null
          ? (first as { type?: unknown }).type
          : warning instanceof Error
            ? warning.name
            : undefined;
    const text = typeof warning === 'string' ? warning : warning.message;
    if (type === 'ExperimentalWarning' && /\bSQLite\b/i.test(text)) return;
    original.call(process, warning, ...rest);
  };
  process.emitWarning = filtered as typeof process.emitWarning;
  try {
    return load();
  } finally {
    process.emitWarning = original as typeof process.emitWarning;
  }
}
