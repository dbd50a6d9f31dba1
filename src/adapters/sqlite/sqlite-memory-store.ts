import { storeFullTextParameters, type Bm25Parameters } from '../../recall/bm25-scoring.js';
import { EngramError } from '../../kernel/errors.js';
import {
  DEFAULT_MEMORY_LIMITS,
  normalizeNewMemory,
  normalizePatch,
  type Memory,
  type MemoryLimits,
  type MemoryPatch,
  type NewMemory,
} from '../../memory/memory.js';
import { applyPatch, archiveMemory, changeTime, invalidateMemory, restoreMemory } from '../../memory/memory-changes.js';
import type { Scope } from '../../memory/scope.js';
import type { PurgeOptions, PurgeReport } from '../../memory/memory-purge.js';
import { purgeSqliteMemory } from './sqlite-purge.js';
import { DEFAULT_SETTINGS, type Settings } from '../../kernel/settings.js';
import type { ChangeAction, ChangeContext, HistoryEntry } from '../../memory/memory-history.js';
import type {
  ImportOptions,
  ImportReport,
  MemoryFilter,
  MemoryStore,
  StoreInfo,
  StoreStats,
  TextHit,
  TextSearch,
} from '../../contracts/memory-store.js';
import {
  checkActor,
  checkExpectedVersions,
  checkImportOptions,
  checkInstant,
  checkMemoryFilter,
  checkScopes,
  checkTextSearch,
  checkUnchangedSince,
  memoryNotFound,
  refuseRepeatedIds,
} from '../../contracts/store-checks/store-input.js';
import { createSortableId } from '../../kernel/ids.js';
import { guard, guardWaiting, waitingTransaction } from './sqlite-database.js';
import { openStoreFile } from './sqlite-store-file.js';
import { closeSqlite, type SqliteConnection, type SqliteStatement } from './sqlite-driver.js';
import { LATEST_SQLITE_VERSION } from './sqlite-migrations.js';
import { filterClause, ORDER_BY, placeholders } from './sqlite-queries.js';
import { SqliteFullTextIndex } from './sqlite-full-text-index.js';
import { SqliteVectorIndex } from './sqlite-vector-index.js';
import { SqliteRecordCopy } from './sqlite-record-copy.js';
import { SqliteChangeFeed } from './sqlite-change-feed.js';
import { SqliteCheckpoints } from './sqlite-checkpoints.js';
import { SqliteJobQueue } from './sqlite-job-queue.js';
import { SqliteStoreLock } from './sqlite-store-lock.js';
import { sqliteStats } from './sqlite-stats.js';
import { writeSqliteImport } from './sqlite-import.js';
import { undoSqliteChange } from './sqlite-undo.js';
import { insertMemoryRow, memoryRow, recordChange, replaceMemoryRow } from './sqlite-memory-rows.js';
import { MEMORY_COLUMNS, rowToHistory, rowToMemory, type HistoryRow, type MemoryRow } from './sqlite-rows.js';

export interface SqliteMemoryStoreOptions {
  /** The database file; created with its folder on first open. */
  path: string;
  busyTimeoutMs?: number;
  /** Migrate only up to this schema version (tests of upgrades). */
  targetVersion?: number;
  limits?: MemoryLimits;
  now?: () => Date;
  generateId?: () => string;
  /** Loads sqlite-vec into the connection (tests replace it to check the fallback). */
  loadVectorExtension?: (db: SqliteConnection) => void;
  /** Receives warnings (sqlite-vec unavailable); default: process.emitWarning. */
  onWarning?: (message: string) => void;
  /** BM25 parameters full-text hits are scored with; default settings `recall.fullTextK1` and `recall.fullTextB`. */
  fullText?: Bm25Parameters;
  /** Waits, leases and polling of store locks; default settings `locks`. */
  locks?: Settings['locks'];
  /** Default attempts and largest payload of jobs; default settings `jobs`. */
  jobs?: Settings['jobs'];
}

/**
 * The embedded store: one SQLite file in WAL mode with an FTS5 index and a history table. The
 * ledger is this class; every other role is an object over the same connection.
 */
export class SqliteMemoryStore implements MemoryStore {
  /** Vectors in `memory_vectors`, searched with sqlite-vec (sqlite-vector-index.ts). */
  readonly vectors: SqliteVectorIndex;
  /** Durable jobs (sqlite-job-queue.ts). */
  readonly jobs: SqliteJobQueue;
  /** Named locks across processes (sqlite-store-lock.ts). */
  readonly locks: SqliteStoreLock;
  /** Named values with compare-and-set (sqlite-checkpoints.ts). */
  readonly checkpoints: SqliteCheckpoints;
  /** Copying the store whole, for engram migrate (sqlite-record-copy.ts). */
  readonly records: SqliteRecordCopy;
  /** Memories changed since a point, in commit order (sqlite-change-feed.ts). */
  readonly changes: SqliteChangeFeed;
  readonly #options: SqliteMemoryStoreOptions;
  readonly #now: () => Date;
  readonly #generateId: () => string;
  readonly #limits: MemoryLimits;
  #db: SqliteConnection | undefined;
  readonly #statements = new Map<string, SqliteStatement>();
  readonly #fullText: SqliteFullTextIndex;
  readonly #sql = (sql: string): SqliteStatement => this.#statement(sql);

  constructor(options: SqliteMemoryStoreOptions) {
    this.#options = options;
    this.#now = options.now ?? (() => new Date());
    this.#generateId = options.generateId ?? (() => createSortableId('mem'));
    this.#limits = options.limits ?? DEFAULT_MEMORY_LIMITS;
    const fullText = storeFullTextParameters(options.fullText);
    const access = {
      statement: (sql: string) => this.#statement(sql),
      transaction: (work: () => void) => this.#transaction(work),
    };
    const now = () => this.#now();
    this.#fullText = new SqliteFullTextIndex(access, fullText);
    this.vectors = new SqliteVectorIndex({ ...access, now });
    this.jobs = new SqliteJobQueue({ ...access, now, defaults: () => options.jobs ?? DEFAULT_SETTINGS.jobs });
    this.checkpoints = new SqliteCheckpoints({ ...access, now });
    this.locks = new SqliteStoreLock({
      statement: access.statement,
      transaction: access.transaction,
      now,
      settings: () => options.locks ?? DEFAULT_SETTINGS.locks,
      onWarning: (message) => (options.onWarning ?? ((text: string) => process.emitWarning(text)))(message),
    });
    this.changes = new SqliteChangeFeed({ statement: access.statement });
    this.records = new SqliteRecordCopy({
      ...access,
      limits: () => this.#limits,
      maxPayloadBytes: () => (options.jobs ?? DEFAULT_SETTINGS.jobs).maxPayloadBytes,
    });
  }

  async open(): Promise<void> {
    if (this.#db) return;
    this.#db = openStoreFile(this.#options.path, {
      busyTimeoutMs: this.#options.busyTimeoutMs ?? DEFAULT_SETTINGS.store.busyTimeoutMs,
      targetVersion: this.#options.targetVersion ?? LATEST_SQLITE_VERSION,
      ...(this.#options.loadVectorExtension && { loadVectorExtension: this.#options.loadVectorExtension }),
      ...(this.#options.onWarning && { onWarning: this.#options.onWarning }),
    });
  }

  async close(): Promise<void> {
    this.#statements.clear();
    const db = this.#db;
    this.#db = undefined;
    if (db) closeSqlite(db);
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  info(): StoreInfo {
    const version = this.#db
      ? ((this.#db.prepare('SELECT MAX(version) AS version FROM schema_migrations').get() as { version: number })
          .version ?? 0)
      : 0;
    return { backend: 'sqlite', location: this.#options.path, schemaVersion: version };
  }

  async create(input: NewMemory, change: ChangeContext): Promise<Memory> {
    const [memory] = await this.createMany([input], change);
    return memory!;
  }

  async createMany(inputs: readonly NewMemory[], change: ChangeContext): Promise<Memory[]> {
    const now = this.#now().toISOString();
    const memories = inputs.map((input) =>
      normalizeNewMemory(input, { now, id: this.#generateId(), limits: this.#limits }),
    );
    refuseRepeatedIds(memories, 'batch');
    await this.#transaction(() => {
      for (const memory of memories) {
        if (memoryRow(this.#sql, memory.id))
          throw new EngramError('CONFLICT', `A memory with id ${memory.id} already exists.`);
        insertMemoryRow(this.#sql, memory);
        recordChange(this.#sql, 'create', memory.id, null, memory, change, now, null);
      }
    });
    return memories;
  }

  async importMany(inputs: readonly NewMemory[], options: ImportOptions, change: ChangeContext): Promise<ImportReport> {
    checkImportOptions(inputs, options);
    const expected = checkExpectedVersions(options.ifUpdatedAt);
    const now = this.#now().toISOString();
    const memories = inputs.map((input) =>
      normalizeNewMemory(input, { now, id: this.#generateId(), limits: this.#limits }),
    );
    refuseRepeatedIds(memories, 'import');
    let report: ImportReport | undefined;
    await this.#transaction(() => {
      report = writeSqliteImport(this.#sql, memories, { onExisting: options.onExisting, expected }, change, now);
    });
    return report!;
  }

  async get(id: string, scopes?: readonly Scope[]): Promise<Memory | undefined> {
    if (scopes === undefined) {
      const row = memoryRow(this.#sql, id);
      return row && rowToMemory(row);
    }
    const checked = checkScopes(scopes);
    if (checked.length === 0) return undefined;
    const row = guard(
      () =>
        this.#statement(
          `SELECT ${MEMORY_COLUMNS} FROM memories WHERE id = ? AND scope IN (${placeholders(checked.length)})`,
        ).get(id, ...checked) as MemoryRow | undefined,
    );
    return row && rowToMemory(row);
  }

  async update(id: string, patch: MemoryPatch, change: ChangeContext): Promise<Memory> {
    const clean = normalizePatch(patch, this.#limits);
    return this.#change(id, change, 'update', (memory, now) => applyPatch(memory, clean, now));
  }

  async invalidate(id: string, options: { supersededBy?: string }, change: ChangeContext): Promise<Memory> {
    return this.#change(id, change, 'invalidate', (memory, now) => {
      if (options.supersededBy !== undefined && !memoryRow(this.#sql, options.supersededBy)) {
        throw new EngramError('INVALID_INPUT', `The superseding memory ${options.supersededBy} does not exist.`);
      }
      return invalidateMemory(memory, now, options.supersededBy);
    });
  }

  async archive(id: string, change: ChangeContext): Promise<Memory> {
    return this.#change(id, change, 'archive', archiveMemory);
  }

  async restore(id: string, change: ChangeContext): Promise<Memory> {
    return this.#change(id, change, 'restore', restoreMemory);
  }

  async delete(id: string, change: ChangeContext): Promise<void> {
    await this.#transaction(() => {
      const row = memoryRow(this.#sql, id);
      if (!row) throw memoryNotFound(id);
      const before = rowToMemory(row);
      checkUnchangedSince(before, change);
      this.#statement('DELETE FROM memories WHERE id = ?').run(id);
      recordChange(this.#sql, 'delete', id, before, null, change, changeTime(before, this.#now().toISOString()), null);
    });
  }

  async purge(id: string, change: ChangeContext, options: PurgeOptions = {}): Promise<PurgeReport> {
    checkActor(change);
    return purgeSqliteMemory(
      {
        database: () => this.#database(),
        path: this.#options.path,
        statement: (sql) => this.#statement(sql),
        transaction: (work) => this.#transaction(work),
        current: (memoryId) => {
          const row = memoryRow(this.#sql, memoryId);
          return row && rowToMemory(row);
        },
        record: (memoryId, now) => recordChange(this.#sql, 'purge', memoryId, null, null, change, now, null),
        now: () => this.#now(),
        onWarning: this.#options.onWarning ?? ((text: string) => process.emitWarning(text)),
      },
      id,
      change,
      options,
    );
  }

  async list(filter: MemoryFilter): Promise<Memory[]> {
    const checked = checkMemoryFilter(filter);
    const { where, parameters } = filterClause(checked);
    const sql = `SELECT ${MEMORY_COLUMNS} FROM memories WHERE ${where} ORDER BY ${ORDER_BY[checked.order]} LIMIT ${checked.limit ?? -1} OFFSET ${checked.offset ?? 0}`;
    return guard(() => (this.#statement(sql).all(...parameters) as MemoryRow[]).map(rowToMemory));
  }

  async count(filter: MemoryFilter): Promise<number> {
    const { where, parameters } = filterClause(checkMemoryFilter(filter));
    return guard(
      () =>
        (this.#statement(`SELECT COUNT(*) AS n FROM memories WHERE ${where}`).get(...parameters) as { n: number }).n,
    );
  }

  async searchText(search: TextSearch): Promise<TextHit[]> {
    return guard(() => this.#fullText.search(checkTextSearch(search)));
  }

  async recordAccess(ids: readonly string[], at: string): Promise<void> {
    const milliseconds = checkInstant(at, 'at');
    if (!Array.isArray(ids) || ids.some((id) => typeof id !== 'string'))
      throw new EngramError('INVALID_INPUT', 'recordAccess takes an array of memory ids.');
    if (ids.length === 0) return;
    // Hit counts and access times change nothing full-text search counts: its counts are kept.
    await this.#transaction(() =>
      this.#fullText.keepingCounts(ids, () => {
        const statement = this.#statement(
          'UPDATE memories SET hit_count = hit_count + 1, last_accessed_at = ? WHERE id = ?',
        );
        for (const id of ids) statement.run(milliseconds, id);
      }),
    );
  }

  async history(memoryId: string): Promise<HistoryEntry[]> {
    const rows = guard(
      () =>
        this.#statement('SELECT * FROM memory_history WHERE memory_id = ? ORDER BY seq').all(memoryId) as HistoryRow[],
    );
    return rows.map(rowToHistory);
  }

  async getChange(changeId: string): Promise<HistoryEntry | undefined> {
    const row = guard(
      () => this.#statement('SELECT * FROM memory_history WHERE id = ?').get(changeId) as HistoryRow | undefined,
    );
    return row ? rowToHistory(row) : undefined;
  }

  async undo(changeId: string, change: ChangeContext): Promise<HistoryEntry> {
    let entryId = '';
    await this.#transaction(() => {
      entryId = undoSqliteChange(this.#sql, changeId, change, () => this.#now());
    });
    return (await this.getChange(entryId))!;
  }

  async stats(scopes?: readonly Scope[]): Promise<StoreStats> {
    return sqliteStats((sql) => this.#statement(sql), scopes);
  }

  async #change(
    id: string,
    change: ChangeContext,
    action: ChangeAction,
    transition: (memory: Memory, now: string) => Memory,
  ): Promise<Memory> {
    let result: Memory | undefined;
    await this.#transaction(() => {
      const row = memoryRow(this.#sql, id);
      if (!row) throw memoryNotFound(id);
      const before = rowToMemory(row);
      checkUnchangedSince(before, change);
      const now = changeTime(before, this.#now().toISOString());
      const after = transition(before, now);
      result = after;
      if (after === before) return;
      replaceMemoryRow(this.#sql, after);
      recordChange(this.#sql, action, id, before, after, change, now, null);
    });
    return result!;
  }

  /** A write transaction; a write lock another process holds is waited for without blocking the event loop (up to busyTimeoutMs). */
  #transaction(work: () => void): Promise<void> {
    const busyTimeoutMs = this.#options.busyTimeoutMs ?? DEFAULT_SETTINGS.store.busyTimeoutMs;
    return guardWaiting(() =>
      waitingTransaction(() => this.#database(), work, { waitMs: busyTimeoutMs, busyTimeoutMs }),
    );
  }

  #statement(sql: string): SqliteStatement {
    let statement = this.#statements.get(sql);
    if (!statement) {
      statement = guard(() => this.#database().prepare(sql));
      this.#statements.set(sql, statement);
    }
    return statement;
  }

  #database(): SqliteConnection {
    if (!this.#db) throw new EngramError('STORE_CLOSED', 'The store is not open: call open() first.');
    return this.#db;
  }
}
