import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { createPrivateFile, PRIVATE_DIRECTORY_MODE, tightenMode } from '../../kernel/node/private-files.js';
import { assertLooksLikeSqlite, assertSchemaNotNewer, guard, migrate } from './sqlite-database.js';
import { closeSqlite, openSqlite, type SqliteConnection } from './sqlite-driver.js';
import { loadVectorFunctions } from './sqlite-vector-index.js';

/**
 * `SqliteMemoryStore.open`: the store's file (or `:memory:`) opened private to its owner, checked,
 * in WAL mode, migrated to `targetVersion`, with sqlite-vec loaded when it can be. A connection
 * that fails any step is closed before the error goes on.
 */
export function openStoreFile(
  path: string,
  options: {
    busyTimeoutMs: number;
    targetVersion: number;
    loadVectorExtension?: (db: SqliteConnection) => void;
    onWarning?: (message: string) => void;
  },
): SqliteConnection {
  if (path !== ':memory:') {
    assertLooksLikeSqlite(path);
    mkdirSync(dirname(path), { recursive: true, mode: PRIVATE_DIRECTORY_MODE });
    // SQLite gives -wal and -shm the mode of the database file: make that 0600 first, whatever the umask.
    guard(() => createPrivateFile(path));
    tightenStoreFiles(path);
  }
  const db = guard(() => openSqlite(path));
  try {
    guard(() => db.exec(`PRAGMA busy_timeout = ${Math.floor(options.busyTimeoutMs)}`));
    // Refuse a newer schema before anything (even the journal mode) writes to the file.
    guard(() => assertSchemaNotNewer(db, path));
    guard(() => {
      db.exec('PRAGMA journal_mode = WAL');
      db.exec('PRAGMA synchronous = NORMAL');
      // 64 MB of page cache per connection (the default is 2 MB): recall at 100K memories reads
      // the same index and vector pages over and over.
      db.exec('PRAGMA cache_size = -65536');
    });
    guard(() => migrate(db, options.targetVersion));
    if (path !== ':memory:') tightenStoreFiles(path);
    loadVectorFunctions(db, {
      ...(options.loadVectorExtension && { load: options.loadVectorExtension }),
      ...(options.onWarning && { onWarning: options.onWarning }),
    });
  } catch (error) {
    closeSqlite(db);
    throw error;
  }
  return db;
}

/** The database file and the two SQLite keeps beside it in WAL mode, tightened to the owner (files of older versions or other tools). */
function tightenStoreFiles(path: string): void {
  for (const file of [path, `${path}-wal`, `${path}-shm`]) tightenMode(file);
}
