import type { Memory, MemoryLimits } from '../../core/memory.js';
import type { ExportPage, HistoryEntry, RestoreReport, StoreRecords, VectorEntry, VectorSpace } from '../../store/memory-store.js';
import {
  checkExportPage,
  checkRestoredVectors,
  checkStoreRecords,
  differentRecord,
  sameHistoryEntry,
  sameMemory,
  sameVector,
  vectorWithoutMemory,
} from '../../store/record-copy-input.js';
import type { PostgresAccess, PostgresQueryable } from './postgres-database.js';
import { insertHistory, insertMemories } from './postgres-writes.js';
import { MEMORY_COLUMNS, rowToHistory, rowToMemory, type HistoryRow, type MemoryRow } from './postgres-rows.js';
import { vectorBytes, vectorFromBytes } from './postgres-vector-index.js';

const HISTORY_COLUMNS = 'id, memory_id, action, actor, at, before, after, undo_of';

/**
 * Copying a Postgres store whole (`engram migrate`): every record by id, in pages (ids are
 * COLLATE "C", so the order is byte order, as in SQLite), and the receiving end that writes
 * records verbatim in one transaction.
 */
export class PostgresRecordCopy {
  readonly #database: PostgresAccess;
  readonly #limits: () => MemoryLimits;
  readonly #mirrorVectors: (transaction: PostgresQueryable, entries: VectorEntry[]) => Promise<void>;

  /** `mirrorVectors` copies written vectors into the pgvector column, where there is one. */
  constructor(database: PostgresAccess, limits: () => MemoryLimits, mirrorVectors: (transaction: PostgresQueryable, entries: VectorEntry[]) => Promise<void>) {
    this.#database = database;
    this.#limits = limits;
    this.#mirrorVectors = mirrorVectors;
  }

  async exportMemories(input: ExportPage): Promise<Memory[]> {
    const page = checkExportPage(input);
    const rows = (await this.#database.query<MemoryRow>(`SELECT ${MEMORY_COLUMNS} FROM memories WHERE id > $1 ORDER BY id LIMIT $2`, [page.after, page.limit])).rows;
    return rows.map(rowToMemory);
  }

  async exportHistory(input: ExportPage): Promise<HistoryEntry[]> {
    const page = checkExportPage(input);
    const rows = (await this.#database.query<HistoryRow>(`SELECT ${HISTORY_COLUMNS} FROM memory_history WHERE id > $1 ORDER BY id LIMIT $2`, [page.after, page.limit])).rows;
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
    return rows.map((row) => ({ id: row.id, vector: vectorFromBytes(row.vector), updatedAt: new Date(row.updated_at).toISOString() }));
  }

  /** Writes memories, then history, then vectors, in one transaction; identical ids are skipped, differing ones refused. */
  async restore(records: StoreRecords): Promise<RestoreReport> {
    const checked = checkStoreRecords(records, this.#limits());
    const report: RestoreReport = { written: { memories: 0, history: 0, vectors: 0 }, skipped: { memories: 0, history: 0, vectors: 0 } };
    return this.#database.transaction(async (transaction) => {
      // Each kind: read what is there under the given ids in one query, then write the new ones in one.
      const storedMemories = new Map(
        (await transaction.query<MemoryRow>(`SELECT ${MEMORY_COLUMNS} FROM memories WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE`, [checked.memories.map((memory) => memory.id)])).rows.map(
          (row) => [row.id, rowToMemory(row)] as const,
        ),
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
        (await transaction.query<HistoryRow>(`SELECT ${HISTORY_COLUMNS} FROM memory_history WHERE id = ANY($1::text[])`, [checked.history.map((entry) => entry.id)])).rows.map(
          (row) => [row.id, rowToHistory(row)] as const,
        ),
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
        else if (!sameVector({ id: entry.id, vector: vectorFromBytes(row.vector), updatedAt: entry.updatedAt }, entry)) throw differentRecord('vector', entry.id);
      }
      if (newVectors.length > 0) {
        await transaction.query('INSERT INTO memory_vectors (memory_id, vector) SELECT * FROM unnest($1::text[], $2::bytea[])', [
          newVectors.map((entry) => entry.id),
          newVectors.map((entry) => vectorBytes(entry.vector)),
        ]);
      }
      await this.#mirrorVectors(transaction, newVectors);
      report.written.vectors = newVectors.length;
      report.skipped.vectors = vectors.length - newVectors.length;
      return report;
    });
  }

  async #space(transaction: PostgresQueryable): Promise<VectorSpace | undefined> {
    const [row] = (await transaction.query<VectorSpace>('SELECT model, dimensions FROM vector_space WHERE id = 1 FOR SHARE')).rows;
    return row && { model: row.model, dimensions: row.dimensions };
  }
}
