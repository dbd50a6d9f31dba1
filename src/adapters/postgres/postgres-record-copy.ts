import type { Memory, MemoryLimits } from '../../memory/memory.js';
import {
  JOB_COLUMNS,
  restoredJobValues,
  rowToCheckpoint,
  rowToJob,
  type CheckpointRow,
  type JobRow,
} from '../sql/job-rows.js';
import type { HistoryEntry } from '../../memory/memory-history.js';
import type { Job } from '../../contracts/memory-store-jobs.js';
import type {
  CheckpointRecord,
  ExportPage,
  RecordCopy,
  RestoreReport,
  StoreRecords,
} from '../../contracts/memory-store-records.js';
import type { VectorEntry, VectorSpace } from '../../contracts/memory-store-vectors.js';
import {
  checkExportPage,
  checkRestoredVectors,
  checkStoreRecords,
  differentRecord,
  sameCheckpoint,
  sameHistoryEntry,
  sameJob,
  sameMemory,
  type RestoredJob,
  sameVector,
  vectorWithoutMemory,
} from '../../contracts/store-checks/record-copy-input.js';
import type { PostgresAccess, PostgresQueryable } from './postgres-database.js';
import { insertHistory, insertMemories } from './postgres-writes.js';
import { MEMORY_COLUMNS, rowToHistory, rowToMemory, type HistoryRow, type MemoryRow } from './postgres-rows.js';
import { vectorBytes, vectorFromBytes } from './postgres-vector-index.js';

const HISTORY_COLUMNS = 'id, memory_id, action, actor, at, before, after, undo_of';
const JOB_COLUMN_TYPES = [
  'text',
  'text',
  'text',
  'text',
  'text',
  'int4',
  'int4',
  'int8',
  'text',
  'int8',
  'text',
  'int8',
  'int8',
];
const INSERT_JOBS = `INSERT INTO jobs (${JOB_COLUMNS}) SELECT * FROM unnest(${JOB_COLUMN_TYPES.map((type, index) => `$${index + 1}::${type}[]`).join(', ')})`;

/** What the record copy needs from the store besides its connection. */
export interface PostgresRecordCopyOptions {
  limits: () => MemoryLimits;
  /** The largest job payload the store takes (setting jobs.maxPayloadBytes). */
  maxPayloadBytes: () => number;
  /** Copies written vectors into the pgvector column, where there is one. */
  mirrorVectors: (transaction: PostgresQueryable, entries: VectorEntry[]) => Promise<void>;
}

/**
 * The store's record copy role, for copying it whole (`engram migrate`): every record by id, in pages (ids are
 * COLLATE "C", so the order is byte order, as in SQLite), and the receiving end that writes
 * records verbatim in one transaction.
 */
export class PostgresRecordCopy implements RecordCopy {
  readonly #database: PostgresAccess;
  readonly #options: PostgresRecordCopyOptions;

  constructor(database: PostgresAccess, options: PostgresRecordCopyOptions) {
    this.#database = database;
    this.#options = options;
  }

  async exportMemories(input: ExportPage): Promise<Memory[]> {
    const page = checkExportPage(input);
    const rows = (
      await this.#database.query<MemoryRow>(
        `SELECT ${MEMORY_COLUMNS} FROM memories WHERE id > $1 ORDER BY id LIMIT $2`,
        [page.after, page.limit],
      )
    ).rows;
    return rows.map(rowToMemory);
  }

  async exportHistory(input: ExportPage): Promise<HistoryEntry[]> {
    const page = checkExportPage(input);
    const rows = (
      await this.#database.query<HistoryRow>(
        `SELECT ${HISTORY_COLUMNS} FROM memory_history WHERE id > $1 ORDER BY id LIMIT $2`,
        [page.after, page.limit],
      )
    ).rows;
    return rows.map(rowToHistory);
  }

  async exportVectors(input: ExportPage): Promise<VectorEntry[]> {
    const page = checkExportPage(input);
    const rows = (
      await this.#database.query<{ id: string; updated_at: number; vector: Buffer }>(
        `SELECT m.id, m.updated_at, v.vector FROM memory_vectors v JOIN memories m ON m.id = v.memory_id
         WHERE m.id > $1 ORDER BY m.id LIMIT $2`,
        [page.after, page.limit],
      )
    ).rows;
    return rows.map((row) => ({
      id: row.id,
      vector: vectorFromBytes(row.vector),
      updatedAt: new Date(row.updated_at).toISOString(),
    }));
  }

  async exportJobs(input: ExportPage): Promise<Job[]> {
    const page = checkExportPage(input);
    const rows = (
      await this.#database.query<JobRow>(`SELECT ${JOB_COLUMNS} FROM jobs WHERE id > $1 ORDER BY id LIMIT $2`, [
        page.after,
        page.limit,
      ])
    ).rows;
    return rows.map(rowToJob);
  }

  async exportCheckpoints(input: ExportPage): Promise<CheckpointRecord[]> {
    const page = checkExportPage(input, 'name');
    const rows = (
      await this.#database.query<CheckpointRow>(
        'SELECT name, value, updated_at FROM checkpoints WHERE name > $1 ORDER BY name LIMIT $2',
        [page.after, page.limit],
      )
    ).rows;
    return rows.map(rowToCheckpoint);
  }

  /** Writes memories, history, vectors, jobs and checkpoints in one transaction; identical ids are skipped, differing ones refused. */
  async restore(records: StoreRecords): Promise<RestoreReport> {
    const checked = checkStoreRecords(records, this.#options.limits(), {
      maxPayloadBytes: this.#options.maxPayloadBytes(),
    });
    const report: RestoreReport = {
      written: { memories: 0, history: 0, vectors: 0, jobs: 0, checkpoints: 0 },
      skipped: { memories: 0, history: 0, vectors: 0, jobs: 0, checkpoints: 0 },
    };
    return this.#database.transaction(async (transaction) => {
      // Each kind: read what is there under the given ids in one query, then write the new ones in one.
      const storedMemories = new Map(
        (
          await transaction.query<MemoryRow>(
            `SELECT ${MEMORY_COLUMNS} FROM memories WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE`,
            [checked.memories.map((memory) => memory.id)],
          )
        ).rows.map((row) => [row.id, rowToMemory(row)] as const),
      );
      const newMemories: Memory[] = [];
      for (const memory of checked.memories) {
        const stored = storedMemories.get(memory.id);
        if (stored === undefined) newMemories.push(memory);
        else if (!sameMemory(stored, memory)) throw differentRecord('memory', memory.id);
      }
      await insertMemories(transaction, newMemories);
      report.written.memories = newMemories.length;
      report.skipped.memories = checked.memories.length - newMemories.length;

      const storedHistory = new Map(
        (
          await transaction.query<HistoryRow>(
            `SELECT ${HISTORY_COLUMNS} FROM memory_history WHERE id = ANY($1::text[])`,
            [checked.history.map((entry) => entry.id)],
          )
        ).rows.map((row) => [row.id, rowToHistory(row)] as const),
      );
      const newHistory: HistoryEntry[] = [];
      for (const entry of checked.history) {
        const stored = storedHistory.get(entry.id);
        if (stored === undefined) newHistory.push(entry);
        else if (!sameHistoryEntry(stored, entry)) throw differentRecord('history entry', entry.id);
      }
      await insertHistory(transaction, newHistory);
      report.written.history = newHistory.length;
      report.skipped.history = checked.history.length - newHistory.length;

      // Read inside the transaction and held: the space cannot change between the check and the writes.
      const vectors = checkRestoredVectors(checked.vectors, await this.#space(transaction));
      const storedVectors = new Map(
        (
          await transaction.query<{ id: string; updated_at: number; vector: Buffer | null }>(
            'SELECT m.id, m.updated_at, v.vector FROM memories m LEFT JOIN memory_vectors v ON v.memory_id = m.id WHERE m.id = ANY($1::text[]) ORDER BY m.id FOR SHARE OF m',
            [vectors.map((entry) => entry.id)],
          )
        ).rows.map((row) => [row.id, row] as const),
      );
      const newVectors: VectorEntry[] = [];
      for (const entry of vectors) {
        const row = storedVectors.get(entry.id);
        // A vector belongs to one version of its memory's text: without that version it would attach a wrong meaning.
        if (row === undefined || row.updated_at !== Date.parse(entry.updatedAt)) throw vectorWithoutMemory(entry.id);
        if (row.vector === null) newVectors.push(entry);
        else if (!sameVector({ id: entry.id, vector: vectorFromBytes(row.vector), updatedAt: entry.updatedAt }, entry))
          throw differentRecord('vector', entry.id);
      }
      if (newVectors.length > 0) {
        await transaction.query(
          'INSERT INTO memory_vectors (memory_id, vector) SELECT * FROM unnest($1::text[], $2::bytea[])',
          [newVectors.map((entry) => entry.id), newVectors.map((entry) => vectorBytes(entry.vector))],
        );
      }
      await this.#options.mirrorVectors(transaction, newVectors);
      report.written.vectors = newVectors.length;
      report.skipped.vectors = vectors.length - newVectors.length;

      const newJobs = await this.#newJobs(transaction, checked.jobs);
      if (newJobs.length > 0)
        await transaction.query(INSERT_JOBS, columns(newJobs.map(restoredJobValues), JOB_COLUMN_TYPES.length));
      report.written.jobs = newJobs.length;
      report.skipped.jobs = checked.jobs.length - newJobs.length;

      const storedCheckpoints = new Map(
        (
          await transaction.query<CheckpointRow>(
            'SELECT name, value, updated_at FROM checkpoints WHERE name = ANY($1::text[]) ORDER BY name FOR UPDATE',
            [checked.checkpoints.map((checkpoint) => checkpoint.name)],
          )
        ).rows.map((row) => [row.name, rowToCheckpoint(row)] as const),
      );
      const newCheckpoints: CheckpointRecord[] = [];
      for (const checkpoint of checked.checkpoints) {
        const stored = storedCheckpoints.get(checkpoint.name);
        if (stored === undefined) newCheckpoints.push(checkpoint);
        else if (!sameCheckpoint(stored, checkpoint)) throw differentRecord('checkpoint', checkpoint.name);
      }
      if (newCheckpoints.length > 0) {
        await transaction.query(
          'INSERT INTO checkpoints (name, value, updated_at) SELECT * FROM unnest($1::text[], $2::text[], $3::int8[])',
          [
            newCheckpoints.map((checkpoint) => checkpoint.name),
            newCheckpoints.map((checkpoint) => checkpoint.value),
            newCheckpoints.map((checkpoint) => Date.parse(checkpoint.updatedAt)),
          ],
        );
      }
      report.written.checkpoints = newCheckpoints.length;
      report.skipped.checkpoints = checked.checkpoints.length - newCheckpoints.length;
      return report;
    });
  }

  /** The jobs not there yet; CONFLICT for one whose id, or whose queue and key, another job holds. */
  async #newJobs(transaction: PostgresQueryable, jobs: readonly RestoredJob[]): Promise<RestoredJob[]> {
    if (jobs.length === 0) return [];
    const stored = (
      await transaction.query<JobRow>(
        `SELECT ${JOB_COLUMNS} FROM jobs WHERE id = ANY($1::text[]) OR (queue, key) IN (SELECT * FROM unnest($2::text[], $3::text[])) ORDER BY id FOR UPDATE`,
        [jobs.map((job) => job.id), jobs.map((job) => job.queue), jobs.map((job) => job.key)],
      )
    ).rows.map(rowToJob);
    const byId = new Map(stored.map((job) => [job.id, job]));
    const byKey = new Map(stored.map((job) => [JSON.stringify([job.queue, job.key]), job]));
    const fresh: RestoredJob[] = [];
    for (const job of jobs) {
      const same = byId.get(job.id);
      if (same !== undefined) {
        if (!sameJob(same, job)) throw differentRecord('job', job.id);
        continue;
      }
      // (queue, key) is unique: another job there for the same turn is not this copy's.
      if (byKey.has(JSON.stringify([job.queue, job.key]))) throw differentRecord('job', job.id);
      fresh.push(job);
    }
    return fresh;
  }

  async #space(transaction: PostgresQueryable): Promise<VectorSpace | undefined> {
    const [row] = (
      await transaction.query<VectorSpace>('SELECT model, dimensions FROM vector_space WHERE id = 1 FOR SHARE')
    ).rows;
    return row && { model: row.model, dimensions: row.dimensions };
  }
}

/** One array per column (what `unnest` takes) from rows of values. */
function columns(rows: readonly unknown[][], width: number): unknown[][] {
  return Array.from({ length: width }, (_, column) => rows.map((row) => row[column]));
}
