/** One schema change of the Postgres store: SQL run in the migration's transaction, in the store's schema. */
export interface PostgresMigration {
  version: number;
  name: string;
  sql: string;
}

// Times are epoch milliseconds (bigint), as in SQLite, so every Memory round-trips exactly
// (ISO-8601 with milliseconds) and any instant JavaScript can hold fits. Ids and scopes compare
// as bytes (COLLATE "C"): the order SQLite's BINARY collation and JavaScript give engram's ASCII
// ids, so exports page through both backends in the same order. JSON (source, history states,
// job payloads) is kept as text, verbatim, as SQLite keeps it.

/** Versioned schema changes, applied in order in one transaction and recorded in `schema_migrations`. */
export const POSTGRES_MIGRATIONS: readonly PostgresMigration[] = [
  {
    version: 1,
    name: 'memories, history and full-text index',
    // `search_document` is a tsvector of engram's own tokens (see postgres-full-text-index.ts),
    // written with the row in the same statement; the GIN index finds candidates.
    sql: `
      CREATE TABLE memories (
        seq bigint GENERATED ALWAYS AS IDENTITY,
        id text COLLATE "C" PRIMARY KEY,
        scope text COLLATE "C" NOT NULL,
        type text NOT NULL,
        name text NOT NULL,
        description text NOT NULL,
        content text NOT NULL,
        importance double precision NOT NULL,
        source text,
        created_at bigint NOT NULL,
        updated_at bigint NOT NULL,
        last_accessed_at bigint,
        hit_count bigint NOT NULL DEFAULT 0,
        valid_from bigint NOT NULL,
        invalid_at bigint,
        superseded_by text COLLATE "C",
        archived boolean NOT NULL DEFAULT false,
        search_document tsvector NOT NULL
      );
      CREATE UNIQUE INDEX memories_by_seq ON memories (seq);
      CREATE INDEX memories_by_scope ON memories (scope, archived, updated_at);
      CREATE INDEX memories_search ON memories USING gin (search_document);
      CREATE TABLE memory_history (
        seq bigint GENERATED ALWAYS AS IDENTITY,
        id text COLLATE "C" PRIMARY KEY,
        memory_id text COLLATE "C" NOT NULL,
        action text NOT NULL,
        actor text NOT NULL,
        at bigint NOT NULL,
        before text,
        after text,
        undo_of text COLLATE "C"
      );
      CREATE INDEX memory_history_by_memory ON memory_history (memory_id, seq);
    `,
  },
  {
    version: 2,
    name: 'memory vectors',
    // A vector is derived from its memory's text: it goes when the memory goes (foreign key) or its
    // text changes (trigger), in the same transaction. Vectors are float32 little-endian bytes, as in
    // SQLite; `vector_space` (one row) names the model and length every stored vector shares.
    sql: `
      CREATE TABLE vector_space (
        id integer PRIMARY KEY CHECK (id = 1),
        model text NOT NULL,
        dimensions integer NOT NULL,
        set_at bigint NOT NULL
      );
      CREATE TABLE memory_vectors (
        memory_id text COLLATE "C" PRIMARY KEY REFERENCES memories (id) ON DELETE CASCADE,
        vector bytea NOT NULL
      );
      CREATE FUNCTION memory_vectors_drop_stale() RETURNS trigger LANGUAGE plpgsql
        SET search_path FROM CURRENT AS $$
        BEGIN
          DELETE FROM memory_vectors WHERE memory_id = OLD.id;
          RETURN NEW;
        END
      $$;
      CREATE TRIGGER memory_vectors_stale AFTER UPDATE OF name, description, content ON memories
        FOR EACH ROW
        WHEN (OLD.name IS DISTINCT FROM NEW.name OR OLD.description IS DISTINCT FROM NEW.description OR OLD.content IS DISTINCT FROM NEW.content)
        EXECUTE FUNCTION memory_vectors_drop_stale();
    `,
  },
  {
    version: 3,
    name: 'jobs and checkpoints',
    sql: `
      CREATE TABLE jobs (
        seq bigint GENERATED ALWAYS AS IDENTITY,
        id text COLLATE "C" PRIMARY KEY,
        queue text COLLATE "C" NOT NULL,
        key text COLLATE "C" NOT NULL,
        payload text NOT NULL,
        state text NOT NULL,
        attempts integer NOT NULL DEFAULT 0,
        max_attempts integer NOT NULL,
        run_at bigint NOT NULL,
        locked_by text,
        locked_until bigint,
        last_error text,
        created_at bigint NOT NULL,
        updated_at bigint NOT NULL,
        UNIQUE (queue, key)
      );
      CREATE INDEX jobs_due ON jobs (queue, state, run_at, seq);
      CREATE TABLE checkpoints (
        name text COLLATE "C" PRIMARY KEY,
        value text NOT NULL,
        updated_at bigint NOT NULL
      );
    `,
  },
  {
    version: 4,
    name: 'job lease holders',
    // The process holding a running job's lease: a job whose worker died on the claiming host is
    // claimed again at once, not after its lease.
    sql: `
      ALTER TABLE jobs ADD COLUMN locked_host text;
      ALTER TABLE jobs ADD COLUMN locked_pid integer;
    `,
  },
  {
    version: 5,
    name: 'change feed',
    // The transaction that wrote each history row, so the change feed can follow commits, which
    // seq (assigned at insert) does not. Rows written before this migration carry 0: a reader
    // starting from nothing compares in full anyway.
    sql: `
      ALTER TABLE memory_history ADD COLUMN tx xid8 NOT NULL DEFAULT '0';
      ALTER TABLE memory_history ALTER COLUMN tx SET DEFAULT pg_current_xact_id();
      CREATE INDEX memory_history_by_tx ON memory_history (tx, seq);
    `,
  },
];

export const LATEST_POSTGRES_VERSION = POSTGRES_MIGRATIONS.at(-1)!.version;
