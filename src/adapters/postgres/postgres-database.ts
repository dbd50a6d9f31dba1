import { createHash } from 'node:crypto';
import pg from 'pg';
import { EngramError } from '../../kernel/errors.js';
import type { PostgresConnectionSettings } from './postgres-connection-url.js';
import { toStoreError, type PostgresErrorContext } from './postgres-errors.js';
import { LATEST_POSTGRES_VERSION, POSTGRES_MIGRATIONS } from './postgres-migrations.js';

// The connection side of the Postgres store: a pool whose sessions all use the store's schema and
// statement timeout, queries and transactions that turn driver errors into engram's codes, and
// opening safely (refuse a newer schema before writing anything, migrate under a lock).

/** The oldest server engram runs on (Postgres 13: the oldest with upstream support when this was written). */
const MINIMUM_SERVER_VERSION = 130_000;

/** A query's rows and how many rows it touched. */
export interface QueryOutcome<Row> {
  rows: Row[];
  rowCount: number;
}

export interface QueryOptions {
  prepared?: boolean;
}

/** Something that runs SQL: the pool, or one transaction's connection. */
export interface PostgresQueryable {
  /** With `prepared`, the statement is parsed and planned once per connection (for fixed, hot statements). */
  query<Row = Record<string, unknown>>(
    sql: string,
    parameters?: readonly unknown[],
    options?: QueryOptions,
  ): Promise<QueryOutcome<Row>>;
}

/** What the store's parts (full text, vectors, jobs, locks, record copy) use to reach the database. */
export interface PostgresAccess extends PostgresQueryable {
  /** Runs `work` in one transaction (READ COMMITTED, rows locked explicitly); rolls back if it throws. */
  transaction<T>(work: (transaction: PostgresQueryable) => Promise<T>): Promise<T>;
  /** A connection of its own, outside the pool the queries use (session locks hold one while they last). */
  dedicatedConnection(): Promise<PostgresDedicatedConnection>;
  /** Turns a driver error into an EngramError. */
  storeError(error: unknown): EngramError;
}

/** A connection held by one caller; `release(broken)` closes it instead of reusing it when broken. */
export interface PostgresDedicatedConnection extends PostgresQueryable {
  release(broken?: boolean): void;
}

// int8 (counts, epoch milliseconds, identities) as numbers: every value engram stores there is
// below 2^53. The driver's default is a string.
const types = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === pg.types.builtins.INT8
      ? (value: string) => Number(value)
      : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
};

/** The pool and migrations of one Postgres store. */
export class PostgresDatabase implements PostgresAccess {
  readonly #settings: PostgresConnectionSettings;
  readonly #context: PostgresErrorContext;
  readonly #onWarning: (message: string) => void;
  #pool: pg.Pool | undefined;
  #lockPool: pg.Pool | undefined;
  #schemaVersion = 0;

  constructor(settings: PostgresConnectionSettings, onWarning: (message: string) => void) {
    this.#settings = settings;
    this.#onWarning = onWarning;
    this.#context = {
      target: settings.target,
      user: settings.user,
      schema: settings.schema,
      statementTimeoutMs: settings.statementTimeoutMs,
    };
  }

  get schemaVersion(): number {
    return this.#schemaVersion;
  }

  /** Connects, checks the server, refuses a newer schema and migrates up to `targetVersion`. */
  async open(targetVersion: number): Promise<void> {
    if (this.#pool) return;
    const pool = this.#createPool(this.#settings.poolSize);
    try {
      const [{ version }] = (
        await this.#run(pool, 'SELECT current_setting($1)::int AS version', ['server_version_num'])
      ).rows as [{ version: number }];
      if (version < MINIMUM_SERVER_VERSION) {
        throw new EngramError(
          'STORE_UNSUPPORTED',
          `Postgres at ${this.#settings.target} runs version ${version}; engram needs PostgreSQL 13 or newer.`,
        );
      }
      // Read-only: a schema from a newer engram is refused before anything writes to it.
      const found = await this.#storedVersion(pool);
      if (found > LATEST_POSTGRES_VERSION) throw this.#newerSchema(found);
      this.#schemaVersion = found >= targetVersion ? found : await this.#migrate(pool, targetVersion);
    } catch (error) {
      await pool.end().catch(() => undefined);
      throw toStoreError(error, this.#context);
    }
    this.#pool = pool;
  }

  async close(): Promise<void> {
    const pools = [this.#pool, this.#lockPool];
    this.#pool = undefined;
    this.#lockPool = undefined;
    await Promise.all(pools.map((pool) => pool?.end().catch(() => undefined)));
  }

  async query<Row = Record<string, unknown>>(
    sql: string,
    parameters: readonly unknown[] = [],
    options: QueryOptions = {},
  ): Promise<QueryOutcome<Row>> {
    return this.#run<Row>(this.#openPool(), sql, parameters, options);
  }

  async transaction<T>(work: (transaction: PostgresQueryable) => Promise<T>): Promise<T> {
    const client = await this.#connect(this.#openPool());
    const transaction: PostgresQueryable = {
      query: (sql, parameters = [], options = {}) => this.#run(client, sql, parameters, options),
    };
    let broken = false;
    try {
      await transaction.query('BEGIN');
      const result = await work(transaction);
      await transaction.query('COMMIT');
      return result;
    } catch (error) {
      try {
        await client.query('ROLLBACK');
      } catch {
        // The connection is gone (the server closes a broken session's transaction itself).
        broken = true;
      }
      throw toStoreError(error, this.#context);
    } finally {
      client.release(broken);
    }
  }

  async dedicatedConnection(): Promise<PostgresDedicatedConnection> {
    this.#openPool();
    // Session locks hold a connection while their work runs; their own pool keeps them from
    // starving the queries that work makes.
    this.#lockPool ??= this.#createPool(this.#settings.poolSize);
    const client = await this.#connect(this.#lockPool);
    return {
      query: (sql, parameters = [], options = {}) => this.#run(client, sql, parameters, options),
      release: (broken = false) => client.release(broken),
    };
  }

  storeError(error: unknown): EngramError {
    return toStoreError(error, this.#context);
  }

  /** STORE_CLOSED unless open. */
  assertOpen(): void {
    this.#openPool();
  }

  #openPool(): pg.Pool {
    if (!this.#pool) throw new EngramError('STORE_CLOSED', 'The store is not open: call open() first.');
    return this.#pool;
  }

  #createPool(size: number): pg.Pool {
    const { driverUrl, schema, statementTimeoutMs, connectTimeoutMs } = this.#settings;
    const pool = new pg.Pool({
      connectionString: driverUrl,
      max: size,
      connectionTimeoutMillis: connectTimeoutMs,
      idleTimeoutMillis: 10_000,
      // A CLI run that forgets close() still exits.
      allowExitOnIdle: true,
      application_name: 'engram',
      // Every session of this store sees its schema first and has the statement timeout.
      options: `-c search_path=${schema} -c statement_timeout=${statementTimeoutMs}`,
      types,
    });
    // An idle connection dropped by the server (restart, idle timeout) must not crash the process.
    pool.on('error', (error) =>
      this.#onWarning(`A Postgres connection of the store closed: ${toStoreError(error, this.#context).message}`),
    );
    return pool;
  }

  async #connect(pool: pg.Pool): Promise<pg.PoolClient> {
    try {
      return await pool.connect();
    } catch (error) {
      throw toStoreError(error, this.#context);
    }
  }

  async #run<Row>(
    target: pg.Pool | pg.PoolClient,
    sql: string,
    parameters: readonly unknown[] = [],
    options: QueryOptions = {},
  ): Promise<QueryOutcome<Row>> {
    try {
      const result = await target.query({
        text: sql,
        values: parameters as unknown[],
        ...(options.prepared && { name: statementName(sql) }),
      });
      return { rows: result.rows as Row[], rowCount: result.rowCount ?? 0 };
    } catch (error) {
      throw toStoreError(error, this.#context);
    }
  }

  async #storedVersion(target: pg.Pool | pg.PoolClient): Promise<number> {
    const table = `${this.#settings.schema}.schema_migrations`;
    const [{ exists }] = (await this.#run(target, 'SELECT to_regclass($1) IS NOT NULL AS exists', [table])).rows as [
      { exists: boolean },
    ];
    if (!exists) return 0;
    const [{ version }] = (
      await this.#run(
        target,
        `SELECT COALESCE(MAX(version), 0) AS version FROM ${quoteIdentifier(this.#settings.schema)}.schema_migrations`,
      )
    ).rows as [{ version: number }];
    return version;
  }

  async #migrate(pool: pg.Pool, targetVersion: number): Promise<number> {
    const client = await this.#connect(pool);
    const schema = quoteIdentifier(this.#settings.schema);
    try {
      await client.query('BEGIN');
      // Processes opening a fresh schema at once: one migrates, the others wait and find it done.
      await client.query("SELECT pg_advisory_xact_lock(hashtextextended('engram-migrate:' || $1, 0))", [
        this.#settings.schema,
      ]);
      const [{ present }] = (
        await client.query('SELECT to_regnamespace($1) IS NOT NULL AS present', [this.#settings.schema])
      ).rows as [{ present: boolean }];
      // Only when missing: CREATE SCHEMA needs CREATE on the database even when the schema exists.
      if (!present) await client.query(`CREATE SCHEMA ${schema}`);
      await client.query(`SET LOCAL search_path TO ${schema}`);
      await client.query(
        'CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at bigint NOT NULL)',
      );
      const start = await this.#storedVersion(client);
      if (start > LATEST_POSTGRES_VERSION) throw this.#newerSchema(start);
      let version = start;
      for (const migration of POSTGRES_MIGRATIONS) {
        if (migration.version <= start || migration.version > targetVersion) continue;
        await client.query(migration.sql);
        await client.query('INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)', [
          migration.version,
          migration.name,
          Date.now(),
        ]);
        version = migration.version;
      }
      await client.query('COMMIT');
      return version;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }

  #newerSchema(found: number): EngramError {
    return new EngramError(
      'STORE_SCHEMA_NEWER',
      `The Postgres schema ${this.#settings.schema} at ${this.#settings.target} has schema version ${found}, newer than this engram understands (${LATEST_POSTGRES_VERSION}). Upgrade engram.`,
    );
  }
}

/** Names of the prepared statements seen so far: a hot statement is hashed once, not on every run. */
const statementNames = new Map<string, string>();

/** A stable name for a prepared statement: the same SQL text gets the same name on every connection. */
function statementName(sql: string): string {
  let name = statementNames.get(sql);
  if (name === undefined) {
    name = `engram_${createHash('sha1').update(sql).digest('hex').slice(0, 20)}`;
    // Prepared statements are fixed texts, a few dozen; the bound keeps a misuse from growing without end.
    if (statementNames.size < 1_000) statementNames.set(sql, name);
  }
  return name;
}

/** A Postgres identifier in double quotes (names engram chose or checked, quoted anyway). */
export function quoteIdentifier(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
