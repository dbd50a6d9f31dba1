import type { SqliteConnection, SqliteStatement } from './sqlite-driver.js';
import { createRequire } from 'node:module';
import type { Memory } from '../../memory/memory.js';
import type {
  VectorCounts,
  VectorEntry,
  VectorHit,
  VectorIndex,
  VectorSearch,
  VectorSpace,
} from '../../contracts/memory-store-vectors.js';
import {
  checkBackfillLimit,
  checkVectorEntries,
  checkVectorSearch,
  checkVectorSpace,
  hasDirection,
} from '../../contracts/store-checks/vector-input.js';
import { guard, guardWaiting } from './sqlite-database.js';
import { MEMORY_COLUMNS, rowToMemory, type MemoryRow } from './sqlite-rows.js';

/** How the store reaches its connection: cached statements and immediate transactions. */
export interface SqliteAccess {
  statement(sql: string): SqliteStatement;
  transaction(work: () => void): Promise<void>;
}

/**
 * Loads sqlite-vec into a connection. If it cannot load (no build for this platform), registers
 * an equivalent `vec_distance_cosine` written in JavaScript and warns: vector search gets slower,
 * never wrong, and the store still opens.
 */
export function loadVectorFunctions(
  db: SqliteConnection,
  options: { load?: (db: SqliteConnection) => void; onWarning?: (message: string) => void } = {},
): 'sqlite-vec' | 'javascript' {
  try {
    // Extension loading is on only for this call: no SQL can reach load_extension() afterwards.
    db.enableLoadExtension(true);
    try {
      // Loaded here, not imported: without the package (a plugin copy whose npm ci did not run) the
      // store still opens, with the JavaScript cosine below.
      (options.load ?? (createRequire(import.meta.url)('sqlite-vec') as { load(db: SqliteConnection): void }).load)(db);
    } finally {
      db.enableLoadExtension(false);
    }
    return 'sqlite-vec';
  } catch (error) {
    const warn = options.onWarning ?? ((message: string) => process.emitWarning(message, 'EngramWarning'));
    warn(
      `sqlite-vec could not be loaded (${(error as Error).message}); vector search uses a slower JavaScript cosine.`,
    );
    db.function('vec_distance_cosine', { deterministic: true }, (left, right) => cosineDistance(left, right));
    return 'javascript';
  }
}

const MEMBER_COLUMNS = MEMORY_COLUMNS.split(', ')
  .map((column) => `m.${column}`)
  .join(', ');

/** What the vector index needs from the store besides its connection: the clock a new space is stamped with. */
export interface SqliteVectorAccess extends SqliteAccess {
  now(): Date;
}

/** The store's vectors role: vectors in `memory_vectors`, cosine via sqlite-vec, scope filter in SQL. */
export class SqliteVectorIndex implements VectorIndex {
  readonly #access: SqliteVectorAccess;

  constructor(access: SqliteVectorAccess) {
    this.#access = access;
  }

  async space(): Promise<VectorSpace | undefined> {
    return guard(() => this.#space());
  }

  async setSpace(input: VectorSpace): Promise<{ dropped: number }> {
    return guardWaiting(async () => {
      const space = checkVectorSpace(input);
      const now = this.#access.now().getTime();
      let dropped = 0;
      await this.#access.transaction(() => {
        const current = this.#space();
        if (current && current.model === space.model && current.dimensions === space.dimensions) return;
        dropped = this.#access.statement('DELETE FROM memory_vectors').run().changes;
        this.#access
          .statement(
            'INSERT INTO vector_space (id, model, dimensions, set_at) VALUES (1, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET model = excluded.model, dimensions = excluded.dimensions, set_at = excluded.set_at',
          )
          .run(space.model, space.dimensions, now);
      });
      return { dropped };
    });
  }

  async put(entries: readonly VectorEntry[]): Promise<number> {
    return guardWaiting(async () => {
      let stored = 0;
      await this.#access.transaction(() => {
        const checked = checkVectorEntries(entries, this.#space());
        const find = this.#access.statement('SELECT rowid, updated_at FROM memories WHERE id = ?');
        const write = this.#access.statement(
          'INSERT INTO memory_vectors (memory_rowid, vector) VALUES (?, ?) ON CONFLICT (memory_rowid) DO UPDATE SET vector = excluded.vector',
        );
        for (const entry of checked) {
          const row = find.get(entry.id) as { rowid: number; updated_at: number } | undefined;
          if (!row) continue;
          // Computed from an older version of the text: storing it would attach a stale meaning.
          if (entry.updatedAt !== undefined && row.updated_at !== Date.parse(entry.updatedAt)) continue;
          write.run(row.rowid, vectorBlob(entry.vector));
          stored += 1;
        }
      });
      return stored;
    });
  }

  async search(input: VectorSearch): Promise<VectorHit[]> {
    return guard(() => {
      const space = this.#space();
      const query = checkVectorSearch(input, space);
      if (space === undefined || query.limit === 0 || query.scopes.length === 0 || !hasDirection(query.vector))
        return [];
      const parameters: unknown[] = [vectorBlob(query.vector), ...query.scopes];
      let typeClause = '';
      if (query.types && query.types.length > 0) {
        typeClause = ` AND m.type IN (${placeholders(query.types.length)})`;
        parameters.push(...query.types);
      }
      // Exact search over the rows the scope filter leaves (measured: 10K rows of 384 floats in
      // about 9 ms); the filter is part of the query, so no other scope is ever scored.
      // The inner query sorts rowids and distances only; whole rows are read for the winners alone.
      const sql = `SELECT ${MEMBER_COLUMNS}, nearest.distance AS distance FROM (
          SELECT m.rowid AS memory_rowid, vec_distance_cosine(v.vector, ?) AS distance
          FROM memories m JOIN memory_vectors v ON v.memory_rowid = m.rowid
          WHERE m.scope IN (${placeholders(query.scopes.length)}) AND m.archived = 0 AND m.invalid_at IS NULL${typeClause}
          ORDER BY distance, m.rowid LIMIT ${query.limit}
        ) nearest JOIN memories m ON m.rowid = nearest.memory_rowid
        ORDER BY nearest.distance, m.rowid`;
      const rows = this.#access.statement(sql).all(...parameters) as Array<MemoryRow & { distance: number | null }>;
      return rows
        .filter((row) => row.distance !== null)
        .map((row) => ({ memory: rowToMemory(row), similarity: 1 - row.distance! }));
    });
  }

  async missing(options: { limit: number }): Promise<Memory[]> {
    const limit = checkBackfillLimit(options);
    const sql = `SELECT ${MEMBER_COLUMNS} FROM memories m
      WHERE NOT EXISTS (SELECT 1 FROM memory_vectors v WHERE v.memory_rowid = m.rowid)
      ORDER BY m.rowid LIMIT ?`;
    return guard(() => (this.#access.statement(sql).all(limit) as MemoryRow[]).map(rowToMemory));
  }

  async counts(): Promise<VectorCounts> {
    return guard(() => {
      const row = this.#access
        .statement('SELECT (SELECT COUNT(*) FROM memory_vectors) AS stored, (SELECT COUNT(*) FROM memories) AS total')
        .get() as { stored: number; total: number };
      return { stored: row.stored, missing: row.total - row.stored };
    });
  }

  #space(): VectorSpace | undefined {
    const row = this.#access.statement('SELECT model, dimensions FROM vector_space WHERE id = 1').get() as
      VectorSpace | undefined;
    return row ? { model: row.model, dimensions: row.dimensions } : undefined;
  }
}

function vectorBlob(vector: Float32Array): Uint8Array {
  return new Uint8Array(vector.buffer, vector.byteOffset, vector.byteLength);
}

function placeholders(count: number): string {
  return new Array(count).fill('?').join(', ');
}

/** 1 − cosine similarity of two float32 blobs, as sqlite-vec computes it; null when either has no direction. */
function cosineDistance(left: unknown, right: unknown): number | null {
  // Blobs arrive as Uint8Array (a Buffer is one too).
  if (
    !(left instanceof Uint8Array) ||
    !(right instanceof Uint8Array) ||
    left.length !== right.length ||
    left.length % 4 !== 0
  ) {
    throw new Error('vec_distance_cosine takes two float32 vectors of the same length.');
  }
  const a = new Float32Array(new Uint8Array(left).buffer);
  const b = new Float32Array(new Uint8Array(right).buffer);
  let dot = 0;
  let normA = 0;
  let normB = 0;
  for (let index = 0; index < a.length; index += 1) {
    dot += a[index]! * b[index]!;
    normA += a[index]! * a[index]!;
    normB += b[index]! * b[index]!;
  }
  if (normA === 0 || normB === 0) return null;
  return 1 - dot / Math.sqrt(normA * normB);
}
