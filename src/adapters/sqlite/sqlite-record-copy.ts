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
  sameVector,
  vectorWithoutMemory,
} from '../../contracts/store-checks/record-copy-input.js';
import {
  MEMORY_COLUMNS,
  memoryToParameters,
  rowToHistory,
  rowToMemory,
  type HistoryRow,
  type MemoryRow,
} from './sqlite-rows.js';
import { guard, guardWaiting } from './sqlite-database.js';
import type { SqliteAccess } from './sqlite-vector-index.js';

/** What the record copy needs from the store besides its connection. */
export interface SqliteRecordCopyAccess extends SqliteAccess {
  limits(): MemoryLimits;
  /** The largest job payload the store takes (setting jobs.maxPayloadBytes). */
  maxPayloadBytes(): number;
}

const INSERT_MEMORY = `INSERT INTO memories (${MEMORY_COLUMNS}) VALUES (${MEMORY_COLUMNS.split(', ')
  .map((column) => `@${column}`)
  .join(', ')})`;
const INSERT_HISTORY =
  'INSERT INTO memory_history (id, memory_id, action, actor, at, before, after, undo_of) VALUES (?, ?, ?, ?, ?, ?, ?, ?)';
const INSERT_JOB = `INSERT INTO jobs (${JOB_COLUMNS}) VALUES (${JOB_COLUMNS.split(', ')
  .map(() => '?')
  .join(', ')})`;

/**
 * The store's record copy role, for copying it whole (`engram migrate`): every record by id, in pages, and the receiving
 * end that writes records verbatim. Ids compare as bytes (SQLite's BINARY collation), which for
 * engram's ASCII ids is the order JavaScript sorts strings in, the order every backend exports in.
 */
export class SqliteRecordCopy implements RecordCopy {
  readonly #access: SqliteRecordCopyAccess;

  constructor(access: SqliteRecordCopyAccess) {
    this.#access = access;
  }

  async exportMemories(input: ExportPage): Promise<Memory[]> {
    return guard(() => {
      const page = checkExportPage(input);
      const rows = this.#access
        .statement(`SELECT ${MEMORY_COLUMNS} FROM memories WHERE id > ? ORDER BY id LIMIT ?`)
        .all(page.after, page.limit) as MemoryRow[];
      return rows.map(rowToMemory);
    });
  }

  async exportHistory(input: ExportPage): Promise<HistoryEntry[]> {
    return guard(() => {
      const page = checkExportPage(input);
      const rows = this.#access
        .statement('SELECT * FROM memory_history WHERE id > ? ORDER BY id LIMIT ?')
        .all(page.after, page.limit) as HistoryRow[];
      return rows.map(rowToHistory);
    });
  }

  async exportVectors(input: ExportPage): Promise<VectorEntry[]> {
    return guard(() => {
      const page = checkExportPage(input);
      const rows = this.#access
        .statement(
          `SELECT m.id AS id, m.updated_at AS updated_at, v.vector AS vector
           FROM memory_vectors v JOIN memories m ON m.rowid = v.memory_rowid
           WHERE m.id > ? ORDER BY m.id LIMIT ?`,
        )
        .all(page.after, page.limit) as Array<{ id: string; updated_at: number; vector: Uint8Array }>;
      return rows.map((row) => ({
        id: row.id,
        vector: vectorFromBlob(row.vector),
        updatedAt: new Date(row.updated_at).toISOString(),
      }));
    });
  }

  async exportJobs(input: ExportPage): Promise<Job[]> {
    return guard(() => {
      const page = checkExportPage(input);
      const rows = this.#access
        .statement(`SELECT ${JOB_COLUMNS} FROM jobs WHERE id > ? ORDER BY id LIMIT ?`)
        .all(page.after, page.limit) as JobRow[];
      return rows.map(rowToJob);
    });
  }

  async exportCheckpoints(input: ExportPage): Promise<CheckpointRecord[]> {
    return guard(() => {
      const page = checkExportPage(input, 'name');
      const rows = this.#access
        .statement('SELECT name, value, updated_at FROM checkpoints WHERE name > ? ORDER BY name LIMIT ?')
        .all(page.after, page.limit) as CheckpointRow[];
      return rows.map(rowToCheckpoint);
    });
  }

  /** Writes memories, history, vectors, jobs and checkpoints in one transaction; identical ids are skipped, differing ones refused. */
  async restore(records: StoreRecords): Promise<RestoreReport> {
    return guardWaiting(async () => {
      const checked = checkStoreRecords(records, this.#access.limits(), {
        maxPayloadBytes: this.#access.maxPayloadBytes(),
      });
      const report: RestoreReport = {
        written: { memories: 0, history: 0, vectors: 0, jobs: 0, checkpoints: 0 },
        skipped: { memories: 0, history: 0, vectors: 0, jobs: 0, checkpoints: 0 },
      };
      await this.#access.transaction(() => {
        const findMemory = this.#access.statement(`SELECT ${MEMORY_COLUMNS} FROM memories WHERE id = ?`);
        for (const memory of checked.memories) {
          const row = findMemory.get(memory.id) as MemoryRow | undefined;
          if (row === undefined) {
            this.#access.statement(INSERT_MEMORY).run(memoryToParameters(memory));
            report.written.memories += 1;
          } else if (sameMemory(rowToMemory(row), memory)) {
            report.skipped.memories += 1;
          } else {
            throw differentRecord('memory', memory.id);
          }
        }

        const findChange = this.#access.statement('SELECT * FROM memory_history WHERE id = ?');
        for (const entry of checked.history) {
          const row = findChange.get(entry.id) as HistoryRow | undefined;
          if (row === undefined) {
            this.#access
              .statement(INSERT_HISTORY)
              .run(
                entry.id,
                entry.memoryId,
                entry.action,
                entry.actor,
                Date.parse(entry.at),
                snapshot(entry.before),
                snapshot(entry.after),
                entry.undoOf,
              );
            report.written.history += 1;
          } else if (sameHistoryEntry(rowToHistory(row), entry)) {
            report.skipped.history += 1;
          } else {
            throw differentRecord('history entry', entry.id);
          }
        }

        // Read inside the transaction: the space cannot change between the check and the writes.
        const vectors = checkRestoredVectors(checked.vectors, this.#space());
        const findVector = this.#access.statement(
          'SELECT m.rowid AS memory_rowid, m.updated_at AS updated_at, v.vector AS vector FROM memories m LEFT JOIN memory_vectors v ON v.memory_rowid = m.rowid WHERE m.id = ?',
        );
        const insertVector = this.#access.statement('INSERT INTO memory_vectors (memory_rowid, vector) VALUES (?, ?)');
        for (const entry of vectors) {
          const row = findVector.get(entry.id) as
            { memory_rowid: number; updated_at: number; vector: Uint8Array | null } | undefined;
          // A vector belongs to one version of its memory's text: without that version it would attach a wrong meaning.
          if (row === undefined || row.updated_at !== Date.parse(entry.updatedAt)) throw vectorWithoutMemory(entry.id);
          if (row.vector === null) {
            insertVector.run(
              row.memory_rowid,
              new Uint8Array(entry.vector.buffer, entry.vector.byteOffset, entry.vector.byteLength),
            );
            report.written.vectors += 1;
          } else if (
            sameVector({ id: entry.id, vector: vectorFromBlob(row.vector), updatedAt: entry.updatedAt }, entry)
          ) {
            report.skipped.vectors += 1;
          } else {
            throw differentRecord('vector', entry.id);
          }
        }

        const findJob = this.#access.statement(`SELECT ${JOB_COLUMNS} FROM jobs WHERE id = ?`);
        const findJobKey = this.#access.statement('SELECT id FROM jobs WHERE queue = ? AND key = ?');
        for (const job of checked.jobs) {
          const row = findJob.get(job.id) as JobRow | undefined;
          if (row !== undefined) {
            if (!sameJob(rowToJob(row), job)) throw differentRecord('job', job.id);
            report.skipped.jobs += 1;
            continue;
          }
          // (queue, key) is unique: another job there for the same turn is not this copy's.
          if (findJobKey.get(job.queue, job.key) !== undefined) throw differentRecord('job', job.id);
          this.#access.statement(INSERT_JOB).run(...restoredJobValues(job));
          report.written.jobs += 1;
        }

        const findCheckpoint = this.#access.statement('SELECT name, value, updated_at FROM checkpoints WHERE name = ?');
        const insertCheckpoint = this.#access.statement(
          'INSERT INTO checkpoints (name, value, updated_at) VALUES (?, ?, ?)',
        );
        for (const checkpoint of checked.checkpoints) {
          const row = findCheckpoint.get(checkpoint.name) as CheckpointRow | undefined;
          if (row === undefined) {
            insertCheckpoint.run(checkpoint.name, checkpoint.value, Date.parse(checkpoint.updatedAt));
            report.written.checkpoints += 1;
          } else if (sameCheckpoint(rowToCheckpoint(row), checkpoint)) {
            report.skipped.checkpoints += 1;
          } else {
            throw differentRecord('checkpoint', checkpoint.name);
          }
        }
      });
      return report;
    });
  }

  #space(): VectorSpace | undefined {
    const row = this.#access.statement('SELECT model, dimensions FROM vector_space WHERE id = 1').get() as
      VectorSpace | undefined;
    return row && { model: row.model, dimensions: row.dimensions };
  }
}

function snapshot(memory: Memory | null): string | null {
  return memory === null ? null : JSON.stringify(memory);
}

/** A float32 vector from a blob, copied so it is aligned and owned (a blob's buffer may be shared). */
function vectorFromBlob(blob: Uint8Array): Float32Array {
  return new Float32Array(new Uint8Array(blob).buffer);
}
