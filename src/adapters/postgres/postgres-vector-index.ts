import type { Memory } from '../../memory/memory.js';
import { cosineSimilarity } from '../../recall/vector-similarity.js';
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
import type { PostgresAccess, PostgresQueryable } from './postgres-database.js';
import { SqlParameters } from './postgres-queries.js';
import {
  EXACT_SEARCH_BELOW,
  ensureEmbeddingTable,
  indexEmbeddings,
  pgvectorNames,
  vectorLiteral,
  type VectorSearchMode,
} from './postgres-pgvector.js';
import { MEMORY_COLUMNS, memoryColumns, rowToMemory, type MemoryRow } from './postgres-rows.js';

// Vectors on Postgres. The record is float32 bytes in `memory_vectors` (as in SQLite). Where the
// server has pgvector, each vector is mirrored into `memory_embeddings` with an HNSW cosine index
// and searched in the database (postgres-pgvector.ts). Without it, engram reads the vectors of the
// asked scopes' active memories and computes cosine itself: exact, and as fast as reading them,
// fine for tens of thousands of vectors per scope. Either way the scope and state filter is in the
// query, so no other scope's vector is ever read.

/** A float32 vector as bytes (little-endian on every platform Node runs engram on). */
export function vectorBytes(vector: Float32Array): Buffer {
  return Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength);
}

/** A float32 vector from bytes, copied so it is aligned and owned. */
export function vectorFromBytes(bytes: Buffer): Float32Array {
  return new Float32Array(new Uint8Array(bytes).buffer);
}

/** What the vector index needs from the store: its database, its clock, and a hook run before each vector call. */
export interface PostgresVectorIndexDependencies {
  database: PostgresAccess;
  /** Stamps a new vector space. */
  now: () => Date;
  /** Runs before each vector call (the store warns once when search runs in engram). */
  beforeUse: (mode: VectorSearchMode) => void;
}

/** The store's vectors role on Postgres (see above). */
export class PostgresVectorIndex implements VectorIndex {
  readonly #database: PostgresAccess;
  readonly #now: () => Date;
  readonly #beforeUse: (mode: VectorSearchMode) => void;
  #mode: VectorSearchMode = { kind: 'engram', reason: 'the store is not open' };

  constructor(dependencies: PostgresVectorIndexDependencies) {
    this.#database = dependencies.database;
    this.#now = dependencies.now;
    this.#beforeUse = dependencies.beforeUse;
  }

  /** Sets how vectors are searched (found at open); with pgvector, mirrors any vector stored without it. */
  async configure(mode: VectorSearchMode): Promise<void> {
    this.#mode = mode;
    if (mode.kind !== 'pgvector') return;
    await this.#database.transaction(async (transaction) => {
      await transaction.query('LOCK TABLE vector_space IN SHARE ROW EXCLUSIVE MODE');
      await ensureEmbeddingTable(transaction, mode.pgvector);
      const space = await this.space(transaction);
      const indexed =
        (
          await transaction.query(
            "SELECT 1 FROM pg_class WHERE relname = 'memory_embeddings_hnsw' AND relnamespace = current_schema()::regnamespace",
          )
        ).rows.length > 0;
      if (space && !indexed) await indexEmbeddings(transaction, mode.pgvector, space.dimensions);
      // Vectors stored while pgvector was missing (or by a copy): mirror them now, a page at a time.
      for (;;) {
        const missing = (
          await transaction.query<{ memory_id: string; vector: Buffer }>(
            'SELECT v.memory_id, v.vector FROM memory_vectors v WHERE NOT EXISTS (SELECT 1 FROM memory_embeddings e WHERE e.memory_id = v.memory_id) LIMIT 1000',
          )
        ).rows;
        if (missing.length === 0) break;
        await this.mirror(
          transaction,
          missing.map((row) => ({ id: row.memory_id, vector: vectorFromBytes(row.vector) })),
        );
      }
    });
  }

  /** Copies stored vectors into the pgvector column (no-op without pgvector); part of the caller's transaction. */
  async mirror(
    transaction: PostgresQueryable,
    entries: ReadonlyArray<{ id: string; vector: Float32Array }>,
  ): Promise<void> {
    if (this.#mode.kind !== 'pgvector' || entries.length === 0) return;
    const { type } = pgvectorNames(this.#mode.pgvector);
    await transaction.query(
      `INSERT INTO memory_embeddings (memory_id, embedding) SELECT id, literal::${type} FROM unnest($1::text[], $2::text[]) AS t(id, literal)
       ON CONFLICT (memory_id) DO UPDATE SET embedding = excluded.embedding`,
      [entries.map((entry) => entry.id), entries.map((entry) => vectorLiteral(entry.vector))],
    );
  }

  async space(queryable: PostgresQueryable = this.#database): Promise<VectorSpace | undefined> {
    const [row] = (await queryable.query<VectorSpace>('SELECT model, dimensions FROM vector_space WHERE id = 1')).rows;
    return row && { model: row.model, dimensions: row.dimensions };
  }

  async setSpace(input: VectorSpace): Promise<{ dropped: number }> {
    const now = this.#now().getTime();
    const space = checkVectorSpace(input);
    this.#beforeUse(this.#mode);
    return this.#database.transaction(async (transaction) => {
      // Writers of vectors hold the space row FOR SHARE: a change of space waits for them, and they for it.
      await transaction.query('LOCK TABLE vector_space IN SHARE ROW EXCLUSIVE MODE');
      const current = await this.space(transaction);
      if (current && current.model === space.model && current.dimensions === space.dimensions) return { dropped: 0 };
      // Embeddings go with their vectors (foreign key).
      const dropped = (await transaction.query('DELETE FROM memory_vectors')).rowCount;
      await transaction.query(
        `INSERT INTO vector_space (id, model, dimensions, set_at) VALUES (1, $1, $2, $3)
         ON CONFLICT (id) DO UPDATE SET model = excluded.model, dimensions = excluded.dimensions, set_at = excluded.set_at`,
        [space.model, space.dimensions, now],
      );
      if (this.#mode.kind === 'pgvector') {
        // Emptied for good before the new index: an index build would still read the rows deleted
        // above (this transaction may yet roll back) and fail to cast them to the new length.
        await transaction.query('TRUNCATE memory_embeddings');
        await indexEmbeddings(transaction, this.#mode.pgvector, space.dimensions);
      }
      return { dropped };
    });
  }

  async put(entries: readonly VectorEntry[]): Promise<number> {
    this.#beforeUse(this.#mode);
    return this.#database.transaction(async (transaction) => {
      const [spaceRow] = (
        await transaction.query<VectorSpace>('SELECT model, dimensions FROM vector_space WHERE id = 1 FOR SHARE')
      ).rows;
      const checked = checkVectorEntries(
        entries,
        spaceRow && { model: spaceRow.model, dimensions: spaceRow.dimensions },
      );
      if (checked.length === 0) return 0;
      // FOR SHARE: the memories cannot change text or go away before this transaction ends, so a
      // vector is never attached to text it was not computed from.
      const rows = (
        await transaction.query<{ id: string; updated_at: number }>(
          'SELECT id, updated_at FROM memories WHERE id = ANY($1::text[]) ORDER BY id FOR SHARE',
          [checked.map((entry) => entry.id)],
        )
      ).rows;
      const versions = new Map(rows.map((row) => [row.id, row.updated_at]));
      // Computed from an older version of the text: storing it would attach a stale meaning.
      const current = checked.filter(
        (entry) =>
          versions.has(entry.id) &&
          (entry.updatedAt === undefined || versions.get(entry.id) === Date.parse(entry.updatedAt)),
      );
      if (current.length === 0) return 0;
      await transaction.query(
        `INSERT INTO memory_vectors (memory_id, vector) SELECT * FROM unnest($1::text[], $2::bytea[])
         ON CONFLICT (memory_id) DO UPDATE SET vector = excluded.vector`,
        [current.map((entry) => entry.id), current.map((entry) => vectorBytes(entry.vector))],
      );
      await this.mirror(transaction, current);
      return current.length;
    });
  }

  async search(input: VectorSearch): Promise<VectorHit[]> {
    this.#beforeUse(this.#mode);
    const space = await this.space();
    const query = checkVectorSearch(input, space);
    if (space === undefined || query.limit === 0 || query.scopes.length === 0 || !hasDirection(query.vector)) return [];
    const parameters = new SqlParameters();
    const clauses = [
      `m.scope = ANY(${parameters.add(query.scopes)}::text[])`,
      'NOT m.archived',
      'm.invalid_at IS NULL',
    ];
    if (query.types && query.types.length > 0) clauses.push(`m.type = ANY(${parameters.add(query.types)}::text[])`);
    const nearest =
      this.#mode.kind === 'pgvector'
        ? await this.#nearestInDatabase(query.vector, query.limit, space.dimensions, clauses, parameters)
        : await this.#nearestInEngram(query.vector, query.limit, clauses, parameters);
    if (nearest.length === 0) return [];
    const rows = (
      await this.#database.query<MemoryRow>(`SELECT ${MEMORY_COLUMNS} FROM memories WHERE id = ANY($1::text[])`, [
        nearest.map((hit) => hit.id),
      ])
    ).rows;
    const byId = new Map(rows.map((row) => [row.id, rowToMemory(row)]));
    // A memory deleted between the two reads is left out rather than returned half-read.
    return nearest.flatMap((hit) => {
      const memory = byId.get(hit.id);
      return memory ? [{ memory, similarity: hit.similarity }] : [];
    });
  }

  /** Exact cosine over the filtered rows' vectors, computed here. */
  async #nearestInEngram(
    vector: Float32Array,
    limit: number,
    clauses: string[],
    parameters: SqlParameters,
  ): Promise<Array<{ id: string; similarity: number }>> {
    const candidates = (
      await this.#database.query<{ seq: number; id: string; vector: Buffer }>(
        `SELECT m.seq, m.id, v.vector FROM memories m JOIN memory_vectors v ON v.memory_id = m.id WHERE ${clauses.join(' AND ')}`,
        parameters.values,
      )
    ).rows;
    return candidates
      .map((candidate) => ({
        id: candidate.id,
        seq: candidate.seq,
        similarity: cosineSimilarity(vector, vectorFromBytes(candidate.vector)),
      }))
      .filter(
        (candidate): candidate is { id: string; seq: number; similarity: number } => candidate.similarity !== undefined,
      )
      .sort((a, b) => b.similarity - a.similarity || a.seq - b.seq)
      .slice(0, limit);
  }

  /**
   * pgvector's cosine distance in the database. A small store is searched exactly (ties by age);
   * a large one through the HNSW index (approximate), scanning on until `limit` rows pass the
   * scope filter where pgvector can (0.8 and later).
   */
  async #nearestInDatabase(
    vector: Float32Array,
    limit: number,
    dimensions: number,
    clauses: string[],
    parameters: SqlParameters,
  ): Promise<Array<{ id: string; similarity: number }>> {
    if (this.#mode.kind !== 'pgvector') return [];
    const { pgvector } = this.#mode;
    const { type, distance } = pgvectorNames(pgvector);
    const cast = `${type}(${dimensions})`;
    const query = parameters.add(vectorLiteral(vector));
    const limitParameter = parameters.add(limit);
    return this.#database.transaction(async (transaction) => {
      const [estimate] = (
        await transaction.query<{ rows: number }>(
          "SELECT reltuples::float8 AS rows FROM pg_class WHERE oid = 'memory_embeddings'::regclass",
        )
      ).rows;
      const indexed = dimensions <= 2_000 && (estimate?.rows ?? 0) >= EXACT_SEARCH_BELOW;
      if (indexed) {
        await transaction.query(`SET LOCAL hnsw.ef_search = ${Math.min(1_000, Math.max(40, limit))}`);
        if (pgvector.iterativeScans) await transaction.query("SET LOCAL hnsw.iterative_scan = 'strict_order'");
      }
      // Ordering by distance alone lets the planner use the index; adding the age makes it exact.
      const order = indexed ? 'distance' : 'distance, m.seq';
      const rows = (
        await transaction.query<{ id: string; distance: number }>(
          `SELECT m.id, (e.embedding::${cast} ${distance} ${query}::${cast}) AS distance
           FROM memories m JOIN memory_embeddings e ON e.memory_id = m.id
           WHERE ${clauses.join(' AND ')} ORDER BY ${order} LIMIT ${limitParameter}`,
          parameters.values,
        )
      ).rows;
      return rows
        .filter((row) => Number.isFinite(row.distance))
        .map((row) => ({ id: row.id, similarity: 1 - row.distance }));
    });
  }

  async missing(options: { limit: number }): Promise<Memory[]> {
    const limit = checkBackfillLimit(options);
    const rows = (
      await this.#database.query<MemoryRow>(
        `SELECT ${memoryColumns('m')} FROM memories m WHERE NOT EXISTS (SELECT 1 FROM memory_vectors v WHERE v.memory_id = m.id) ORDER BY m.seq LIMIT $1`,
        [limit],
      )
    ).rows;
    return rows.map(rowToMemory);
  }

  async counts(): Promise<VectorCounts> {
    const [row] = (
      await this.#database.query<{ stored: number; total: number }>(
        'SELECT (SELECT count(*) FROM memory_vectors) AS stored, (SELECT count(*) FROM memories) AS total',
      )
    ).rows;
    return { stored: row!.stored, missing: row!.total - row!.stored };
  }
}
