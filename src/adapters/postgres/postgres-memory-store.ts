import { storeFullTextParameters, type Bm25Parameters } from '../../recall/bm25-scoring.js';
import { EngramError, isEngramError } from '../../kernel/errors.js';
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
import { type PurgeOptions, type PurgeReport } from '../../memory/memory-purge.js';
import { purgePostgresMemory } from './postgres-purge.js';
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
import { parsePostgresUrl, redactPostgresUrl, type PostgresConnectionSettings } from './postgres-connection-url.js';
import { PostgresChangeFeed } from './postgres-change-feed.js';
import { PostgresCheckpoints } from './postgres-checkpoints.js';
import { PostgresDatabase, type PostgresQueryable } from './postgres-database.js';
import { PostgresFullTextIndex } from './postgres-full-text-index.js';
import { PostgresJobQueue } from './postgres-job-queue.js';
import { LATEST_POSTGRES_VERSION } from './postgres-migrations.js';
import { filterClause, ORDER_BY, SqlParameters } from './postgres-queries.js';
import { PostgresRecordCopy } from './postgres-record-copy.js';
import { MEMORY_COLUMNS, rowToHistory, rowToMemory, type HistoryRow, type MemoryRow } from './postgres-rows.js';
import { readStoreStats } from './postgres-store-stats.js';
import { PostgresStoreLock } from './postgres-store-lock.js';
import { detectPgvector, type VectorSearchMode } from './postgres-pgvector.js';
import { PostgresVectorIndex } from './postgres-vector-index.js';
import {
  historyEntry,
  HISTORY_SELECT,
  insertMemoriesWithHistory,
  lockedMemory,
  PREPARED,
  readChange,
  recordChange,
  replaceMemory,
} from './postgres-writes.js';
import { writePostgresImport } from './postgres-import.js';
import { undoPostgresChange } from './postgres-undo.js';

export interface PostgresMemoryStoreOptions {
  /** `postgres://user:password@host:port/database?schema=…` (see postgres-connection-url.ts for every parameter). */
  url: string;
  /** Connections kept at most; default setting store.poolSize. The URL's ?pool= wins. */
  poolSize?: number;
  /** Longest one statement may run (0: no limit); default setting store.statementTimeoutMs. The URL's ?statement_timeout= wins. */
  statementTimeoutMs?: number;
  /** How long to wait for a connection; default setting store.connectTimeoutMs. The URL's ?connect_timeout= (seconds) wins. */
  connectTimeoutMs?: number;
  /** Migrate only up to this schema version (tests of upgrades). */
  targetVersion?: number;
  limits?: MemoryLimits;
  now?: () => Date;
  generateId?: () => string;
  /** Receives warnings (vector search computed in engram, a connection dropped); default: process.emitWarning. */
  onWarning?: (message: string) => void;
  /** BM25 parameters full-text hits are scored with; default settings `recall.fullTextK1` and `recall.fullTextB`. */
  fullText?: Bm25Parameters;
  /** How long store locks are waited for by default; default settings `locks`. */
  locks?: Settings['locks'];
  /** Default attempts and largest payload of jobs; default settings `jobs`. */
  jobs?: Settings['jobs'];
}

/** The schema version that made the vector tables. */
const VECTOR_SCHEMA_VERSION = 2;

/**
 * The server store: one Postgres schema shared by every process and machine that names it. Same
 * behaviour as the SQLite store (it passes the same conformance suite); each write is one
 * transaction that locks the rows it changes, so concurrent writers never lose or duplicate work.
 * The ledger is this class; every other role is an object over the same pool.
 */
export class PostgresMemoryStore implements MemoryStore {
  /** Vectors in `memory_vectors`, searched with pgvector where the server has it (postgres-vector-index.ts). */
  readonly vectors: PostgresVectorIndex;
  /** Durable jobs, claimed with SKIP LOCKED (postgres-job-queue.ts). */
  readonly jobs: PostgresJobQueue;
  /** Named locks: session advisory locks (postgres-store-lock.ts). */
  readonly locks: PostgresStoreLock;
  /** Named values with compare-and-set (postgres-checkpoints.ts). */
  readonly checkpoints: PostgresCheckpoints;
  /** Copying the store whole, for engram migrate (postgres-record-copy.ts). */
  readonly records: PostgresRecordCopy;
  /** Memories changed since a point, following commits (postgres-change-feed.ts). */
  readonly changes: PostgresChangeFeed;
  readonly #options: PostgresMemoryStoreOptions;
  readonly #settings: PostgresConnectionSettings;
  readonly #now: () => Date;
  readonly #generateId: () => string;
  readonly #limits: MemoryLimits;
  readonly #warn: (message: string) => void;
  readonly #database: PostgresDatabase;
  readonly #fullText: PostgresFullTextIndex;
  #warnedAboutVectors = false;

  constructor(options: PostgresMemoryStoreOptions) {
    this.#options = options;
    this.#settings = parsePostgresUrl(options.url, {
      poolSize: options.poolSize ?? DEFAULT_SETTINGS.store.poolSize,
      statementTimeoutMs: options.statementTimeoutMs ?? DEFAULT_SETTINGS.store.statementTimeoutMs,
      connectTimeoutMs: options.connectTimeoutMs ?? DEFAULT_SETTINGS.store.connectTimeoutMs,
    });
    this.#now = options.now ?? (() => new Date());
    this.#generateId = options.generateId ?? (() => createSortableId('mem'));
    this.#limits = options.limits ?? DEFAULT_MEMORY_LIMITS;
    this.#warn = options.onWarning ?? ((message: string) => process.emitWarning(message, 'EngramWarning'));
    const fullText = storeFullTextParameters(options.fullText);
    this.#database = new PostgresDatabase(this.#settings, this.#warn);
    this.#fullText = new PostgresFullTextIndex(this.#database, fullText);
    const now = () => this.#now();
    this.vectors = new PostgresVectorIndex({
      database: this.#database,
      now,
      beforeUse: (mode) => this.#warnAboutVectorsOnce(mode),
    });
    this.jobs = new PostgresJobQueue({
      database: this.#database,
      now,
      defaults: () => options.jobs ?? DEFAULT_SETTINGS.jobs,
    });
    this.checkpoints = new PostgresCheckpoints({ database: this.#database, now });
    this.locks = new PostgresStoreLock({
      database: this.#database,
      schema: this.#settings.schema,
      defaultWaitMs: () => (options.locks ?? DEFAULT_SETTINGS.locks).waitMs,
      onWarning: this.#warn,
    });
    this.changes = new PostgresChangeFeed(this.#database);
    this.records = new PostgresRecordCopy(this.#database, {
      limits: () => this.#limits,
      maxPayloadBytes: () => (options.jobs ?? DEFAULT_SETTINGS.jobs).maxPayloadBytes,
      mirrorVectors: (transaction, entries) => this.vectors.mirror(transaction, entries),
    });
  }

  async open(): Promise<void> {
    const targetVersion = this.#options.targetVersion ?? LATEST_POSTGRES_VERSION;
    await this.#database.open(targetVersion);
    if (targetVersion < VECTOR_SCHEMA_VERSION) return;
    try {
      await this.vectors.configure(await detectPgvector(this.#database));
    } catch (error) {
      await this.#database.close();
      throw error;
    }
  }

  async close(): Promise<void> {
    await this.#database.close();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  info(): StoreInfo {
    return {
      backend: 'postgres',
      location: redactPostgresUrl(this.#options.url),
      schemaVersion: this.#database.schemaVersion,
    };
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
    const actor = checkActor(change);
    if (memories.length === 0) return [];
    const entries = memories.map((memory) => historyEntry('create', memory.id, null, memory, actor, now, null));
    // One statement: every memory and its history entry, or none of them.
    await insertMemoriesWithHistory(this.#database, memories, entries).catch((error: unknown) => {
      if (!(isEngramError(error) && error.code === 'CONFLICT')) throw error;
      const id = /\(id\)=\((.*)\) already exists/.exec(
        String((error.cause as { detail?: unknown } | undefined)?.detail),
      )?.[1];
      throw new EngramError('CONFLICT', `A memory with id ${id ?? 'of this batch'} already exists.`, { cause: error });
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
    const actor = checkActor(change);
    if (memories.length === 0) return { created: 0, replaced: 0, skipped: 0, written: [] };
    return this.#database.transaction((transaction) =>
      writePostgresImport(transaction, memories, { onExisting: options.onExisting, expected }, actor, now),
    );
  }

  async get(id: string, scopes?: readonly Scope[]): Promise<Memory | undefined> {
    if (scopes === undefined) {
      const [row] = (
        await this.#database.query<MemoryRow>(`SELECT ${MEMORY_COLUMNS} FROM memories WHERE id = $1`, [id], PREPARED)
      ).rows;
      return row && rowToMemory(row);
    }
    const checked = checkScopes(scopes);
    if (checked.length === 0) return undefined;
    const [row] = (
      await this.#database.query<MemoryRow>(
        `SELECT ${MEMORY_COLUMNS} FROM memories WHERE id = $1 AND scope = ANY($2::text[])`,
        [id, checked],
        PREPARED,
      )
    ).rows;
    return row && rowToMemory(row);
  }

  async update(id: string, patch: MemoryPatch, change: ChangeContext): Promise<Memory> {
    const clean = normalizePatch(patch, this.#limits);
    return this.#change(id, change, 'update', async (memory, now) => applyPatch(memory, clean, now));
  }

  async invalidate(id: string, options: { supersededBy?: string }, change: ChangeContext): Promise<Memory> {
    return this.#change(id, change, 'invalidate', async (memory, now, transaction) => {
      if (options.supersededBy !== undefined) {
        const [successor] = (await transaction.query('SELECT 1 FROM memories WHERE id = $1', [options.supersededBy]))
          .rows;
        if (!successor)
          throw new EngramError('INVALID_INPUT', `The superseding memory ${options.supersededBy} does not exist.`);
      }
      return invalidateMemory(memory, now, options.supersededBy);
    });
  }

  async archive(id: string, change: ChangeContext): Promise<Memory> {
    return this.#change(id, change, 'archive', async (memory, now) => archiveMemory(memory, now));
  }

  async restore(id: string, change: ChangeContext): Promise<Memory> {
    return this.#change(id, change, 'restore', async (memory, now) => restoreMemory(memory, now));
  }

  async delete(id: string, change: ChangeContext): Promise<void> {
    const actor = checkActor(change);
    await this.#database.transaction(async (transaction) => {
      const before = await lockedMemory(transaction, id);
      if (!before) throw memoryNotFound(id);
      checkUnchangedSince(before, change);
      await transaction.query('DELETE FROM memories WHERE id = $1', [id], PREPARED);
      await recordChange(
        transaction,
        'delete',
        id,
        before,
        null,
        actor,
        changeTime(before, this.#now().toISOString()),
        null,
      );
    });
  }

  async purge(id: string, change: ChangeContext, options: PurgeOptions = {}): Promise<PurgeReport> {
    return purgePostgresMemory(
      this.#database,
      { now: () => this.#now(), warn: (message) => this.#warn(message) },
      id,
      change,
      options,
    );
  }

  async list(filter: MemoryFilter): Promise<Memory[]> {
    const checked = checkMemoryFilter(filter);
    const parameters = new SqlParameters();
    const where = filterClause(checked, parameters);
    const limit = checked.limit === undefined ? '' : ` LIMIT ${parameters.add(checked.limit)}`;
    const sql = `SELECT ${MEMORY_COLUMNS} FROM memories WHERE ${where} ORDER BY ${ORDER_BY[checked.order]}${limit} OFFSET ${parameters.add(checked.offset ?? 0)}`;
    return (await this.#database.query<MemoryRow>(sql, parameters.values)).rows.map(rowToMemory);
  }

  async count(filter: MemoryFilter): Promise<number> {
    const parameters = new SqlParameters();
    const where = filterClause(checkMemoryFilter(filter), parameters);
    const [row] = (
      await this.#database.query<{ n: number }>(`SELECT count(*) AS n FROM memories WHERE ${where}`, parameters.values)
    ).rows;
    return row!.n;
  }

  async searchText(search: TextSearch): Promise<TextHit[]> {
    const checked = checkTextSearch(search);
    // Closed is closed, even for a query that needs no SQL.
    this.#database.assertOpen();
    return this.#fullText.search(checked);
  }

  async recordAccess(ids: readonly string[], at: string): Promise<void> {
    const milliseconds = checkInstant(at, 'at');
    if (!Array.isArray(ids) || ids.some((id) => typeof id !== 'string'))
      throw new EngramError('INVALID_INPUT', 'recordAccess takes an array of memory ids.');
    if (ids.length === 0) return;
    // Rows are locked in id order first, so two recalls recording overlapping hits never deadlock.
    // An id given twice counts twice, as two recorded hits.
    await this.#database.query(
      `WITH locked AS (SELECT id FROM memories WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE),
            hits AS (SELECT id, count(*) AS n FROM unnest($1::text[]) AS id GROUP BY id)
       UPDATE memories m SET hit_count = m.hit_count + hits.n, last_accessed_at = $2
       FROM hits, locked WHERE m.id = hits.id AND m.id = locked.id`,
      [ids, milliseconds],
      PREPARED,
    );
  }

  async history(memoryId: string): Promise<HistoryEntry[]> {
    const rows = (
      await this.#database.query<HistoryRow>(
        `SELECT ${HISTORY_SELECT} FROM memory_history WHERE memory_id = $1 ORDER BY seq`,
        [memoryId],
        PREPARED,
      )
    ).rows;
    return rows.map(rowToHistory);
  }

  async getChange(changeId: string): Promise<HistoryEntry | undefined> {
    return readChange(this.#database, changeId);
  }

  async undo(changeId: string, change: ChangeContext): Promise<HistoryEntry> {
    const actor = checkActor(change);
    return this.#database.transaction((transaction) =>
      undoPostgresChange(transaction, changeId, actor, () => this.#now()),
    );
  }

  async stats(scopes?: readonly Scope[]): Promise<StoreStats> {
    return readStoreStats(this.#database, scopes === undefined ? undefined : checkScopes(scopes));
  }

  /** Reads a memory, applies a transition, and writes it with its history entry, the row locked throughout. */
  async #change(
    id: string,
    change: ChangeContext,
    action: ChangeAction,
    transition: (memory: Memory, now: string, transaction: PostgresQueryable) => Promise<Memory>,
  ): Promise<Memory> {
    const actor = checkActor(change);
    return this.#database.transaction(async (transaction) => {
      const before = await lockedMemory(transaction, id);
      if (!before) throw memoryNotFound(id);
      checkUnchangedSince(before, change);
      const now = changeTime(before, this.#now().toISOString());
      const after = await transition(before, now, transaction);
      if (after === before) return after;
      await replaceMemory(transaction, after);
      await recordChange(transaction, action, id, before, after, actor, now, null);
      return after;
    });
  }

  #warnAboutVectorsOnce(mode: VectorSearchMode): void {
    if (this.#warnedAboutVectors || mode.kind === 'pgvector') return;
    this.#warnedAboutVectors = true;
    this.#warn(
      `Postgres vectors: ${mode.reason}, so vector search reads the vectors of the asked scopes and computes cosine similarity in engram (exact; slower past tens of thousands of vectors per scope).`,
    );
  }
}
