import type { SqliteConnection } from './sqlite-driver.js';

export interface SqliteMigration {
  version: number;
  name: string;
  up(db: SqliteConnection): void;
}

/** Versioned schema changes, applied in order inside one transaction each and recorded in `schema_migrations`. */
export const SQLITE_MIGRATIONS: readonly SqliteMigration[] = [
  {
    version: 1,
    name: 'memories and history',
    up(db) {
      db.exec(`
        CREATE TABLE memories (
          rowid INTEGER PRIMARY KEY,
          id TEXT NOT NULL UNIQUE,
          scope TEXT NOT NULL,
          type TEXT NOT NULL,
          name TEXT NOT NULL,
          description TEXT NOT NULL,
          content TEXT NOT NULL,
          importance REAL NOT NULL,
          source TEXT,
          created_at INTEGER NOT NULL,
          updated_at INTEGER NOT NULL,
          last_accessed_at INTEGER,
          hit_count INTEGER NOT NULL DEFAULT 0,
          valid_from INTEGER NOT NULL,
          invalid_at INTEGER,
          superseded_by TEXT,
          archived INTEGER NOT NULL DEFAULT 0
        );
        CREATE INDEX memories_by_scope ON memories (scope, archived, updated_at);
        CREATE TABLE memory_history (
          seq INTEGER PRIMARY KEY,
          id TEXT NOT NULL UNIQUE,
          memory_id TEXT NOT NULL,
          action TEXT NOT NULL,
          actor TEXT NOT NULL,
          at INTEGER NOT NULL,
          before TEXT,
          after TEXT,
          undo_of TEXT
        );
        CREATE INDEX memory_history_by_memory ON memory_history (memory_id, seq);
      `);
    },
  },
  {
    version: 2,
    name: 'full-text index with stemming',
    up(db) {
      // External-content FTS5: the text lives once, in `memories`; triggers keep the index in the
      // same transaction as every write. Only text changes touch the index (not hit counts).
      db.exec(`
        CREATE VIRTUAL TABLE memories_fts USING fts5(
          name, description, content,
          content = 'memories', content_rowid = 'rowid',
          tokenize = 'porter unicode61 remove_diacritics 2'
        );
        CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
          INSERT INTO memories_fts (rowid, name, description, content)
          VALUES (new.rowid, new.name, new.description, new.content);
        END;
        CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
          INSERT INTO memories_fts (memories_fts, rowid, name, description, content)
          VALUES ('delete', old.rowid, old.name, old.description, old.content);
        END;
        CREATE TRIGGER memories_fts_update AFTER UPDATE OF name, description, content ON memories BEGIN
          INSERT INTO memories_fts (memories_fts, rowid, name, description, content)
          VALUES ('delete', old.rowid, old.name, old.description, old.content);
          INSERT INTO memories_fts (rowid, name, description, content)
          VALUES (new.rowid, new.name, new.description, new.content);
        END;
        INSERT INTO memories_fts (memories_fts) VALUES ('rebuild');
      `);
    },
  },
  {
    version: 3,
    name: 'memory vectors',
    up(db) {
      // Plain tables, so the schema opens even where sqlite-vec cannot load. A vector is derived
      // from its memory's text: it goes when the memory goes or its text changes (same transaction),
      // and `vector_space` (one row) names the model and length every stored vector shares.
      db.exec(`
        CREATE TABLE memory_vectors (
          memory_rowid INTEGER PRIMARY KEY,
          vector BLOB NOT NULL
        );
        CREATE TABLE vector_space (
          id INTEGER PRIMARY KEY CHECK (id = 1),
          model TEXT NOT NULL,
          dimensions INTEGER NOT NULL,
          set_at INTEGER NOT NULL
        );
        CREATE TRIGGER memory_vectors_delete AFTER DELETE ON memories BEGIN
          DELETE FROM memory_vectors WHERE memory_rowid = old.rowid;
        END;
        CREATE TRIGGER memory_vectors_stale AFTER UPDATE OF name, description, content ON memories
          WHEN old.name IS NOT new.name OR old.description IS NOT new.description OR old.content IS NOT new.content
        BEGIN
          DELETE FROM memory_vectors WHERE memory_rowid = old.rowid;
        END;
      `);
    },
  },
  {
    version: 4,
    name: 'jobs, checkpoints and store locks',
    up(db) {
      // Coordination between processes sharing the file. Jobs: one per (queue, key), so enqueueing
      // the same source twice is one job; `seq` keeps enqueue order for ties. The claim index
      // answers "the first due job of a queue in a state" without a sort. Locks: one row per held
      // name, with a holder token, the holder's host and pid (a dead holder on this host is taken
      // over at once) and a lease the holder renews.
      db.exec(`
        CREATE TABLE jobs (
          seq INTEGER PRIMARY KEY,
          id TEXT NOT NULL UNIQUE,
          queue TEXT NOT NULL,
          key TEXT NOT NULL,
          payload TEXT NOT NULL,
          state TEXT NOT NULL CHECK (state IN ('pending', 'running', 'done', 'failed')),
          attempts INTEGER NOT NULL DEFAULT 0,
          max_attempts INTEGER NOT NULL,
          run_at INTEGER NOT NULL,
          locked_by TEXT,
          locked_until INTEGER,
          last_error TEXT,
          created_at INTEGER NOT NULL,
          updated_at INTEGER NOT NULL,
          UNIQUE (queue, key)
        );
        CREATE INDEX jobs_due ON jobs (queue, state, run_at);
        CREATE TABLE checkpoints (
          name TEXT PRIMARY KEY,
          value TEXT NOT NULL,
          updated_at INTEGER NOT NULL
        );
        CREATE TABLE store_locks (
          name TEXT PRIMARY KEY,
          holder TEXT NOT NULL,
          host TEXT NOT NULL,
          pid INTEGER NOT NULL,
          locked_until INTEGER NOT NULL,
          acquired_at INTEGER NOT NULL
        );
      `);
    },
  },
  {
    version: 5,
    name: 'job lease holders',
    up(db) {
      // The process holding a running job's lease (host and pid, as store_locks keeps them): a job
      // whose worker died on this host is claimed again at once, not after its lease.
      db.exec(`
        ALTER TABLE jobs ADD COLUMN locked_host TEXT;
        ALTER TABLE jobs ADD COLUMN locked_pid INTEGER;
      `);
    },
  },
];

export const LATEST_SQLITE_VERSION = SQLITE_MIGRATIONS.at(-1)!.version;
