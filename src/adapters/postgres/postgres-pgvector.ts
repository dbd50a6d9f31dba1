import type { PostgresQueryable } from './postgres-database.js';
import { quoteIdentifier } from './postgres-database.js';

// pgvector, where the server has it: the store's vectors are mirrored into a `vector` column with
// an HNSW cosine index, and searched in the database. Without it, vectors stay float32 bytes and
// engram computes cosine itself (postgres-vector-index.ts). The bytes stay the record either way
// (export, restore, the fallback), so a store moves between servers with and without pgvector.

/** HNSW indexes `vector` columns of at most this many dimensions (pgvector's limit). */
const MAX_INDEXED_DIMENSIONS = 2_000;
/** Below this many stored vectors a search is exact (a full scan in C is fast); above, it uses the HNSW index. */
export const EXACT_SEARCH_BELOW = 20_000;

/** Where the extension lives, for qualified names: its type and its cosine distance operator. */
export interface Pgvector {
  schema: string;
  version: string;
  /** pgvector 0.8 and later keep scanning the index until enough rows pass the scope filter. */
  iterativeScans: boolean;
}

/** How vectors are searched on this server, and why (for the warning). */
export type VectorSearchMode = { kind: 'pgvector'; pgvector: Pgvector } | { kind: 'engram'; reason: string };

/**
 * Finds pgvector in the store's database, creating the extension when the server has it and the
 * role may (CREATE EXTENSION); otherwise says why vector search falls back to engram's own cosine.
 */
export async function detectPgvector(database: PostgresQueryable): Promise<VectorSearchMode> {
  const installed = async (): Promise<Pgvector | undefined> => {
    const [row] = (
      await database.query<{ schema: string; version: string }>(
        "SELECT n.nspname AS schema, e.extversion AS version FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'vector'",
      )
    ).rows;
    if (!row) return undefined;
    const [major = 0, minor = 0] = row.version.split('.').map(Number);
    return { schema: row.schema, version: row.version, iterativeScans: major > 0 || minor >= 8 };
  };
  const found = await installed();
  if (found) return { kind: 'pgvector', pgvector: found };
  const [available] = (await database.query("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")).rows;
  if (!available) return { kind: 'engram', reason: 'pgvector is not installed on this Postgres server' };
  try {
    // In public, not the store's schema: dropping one store's schema must not take the type from the others.
    await database.query('CREATE EXTENSION IF NOT EXISTS vector SCHEMA public');
  } catch (error) {
    return {
      kind: 'engram',
      reason: `pgvector is on the server but could not be enabled in this database (${(error as Error).message}); run CREATE EXTENSION vector as its owner`,
    };
  }
  const created = await installed();
  return created
    ? { kind: 'pgvector', pgvector: created }
    : { kind: 'engram', reason: 'pgvector could not be enabled in this database' };
}

/** The SQL names of pgvector's objects, qualified by the extension's schema. */
export function pgvectorNames(pgvector: Pgvector): { type: string; distance: string; operatorClass: string } {
  const schema = quoteIdentifier(pgvector.schema);
  return {
    type: `${schema}.vector`,
    distance: `OPERATOR(${schema}.<=>)`,
    operatorClass: `${schema}.vector_cosine_ops`,
  };
}

/**
 * Creates the mirror table (idempotent): one embedding per stored vector, gone with it (foreign key
 * to memory_vectors, which goes with its memory or a change of its text).
 */
export async function ensureEmbeddingTable(database: PostgresQueryable, pgvector: Pgvector): Promise<void> {
  const { type } = pgvectorNames(pgvector);
  await database.query(
    `CREATE TABLE IF NOT EXISTS memory_embeddings (
       memory_id text COLLATE "C" PRIMARY KEY REFERENCES memory_vectors (memory_id) ON DELETE CASCADE,
       embedding ${type} NOT NULL
     )`,
  );
}

/** Rebuilds the HNSW index for the space's length (none past pgvector's 2,000 dimensions: searches are then exact). */
export async function indexEmbeddings(
  database: PostgresQueryable,
  pgvector: Pgvector,
  dimensions: number,
): Promise<void> {
  const { type, operatorClass } = pgvectorNames(pgvector);
  await database.query('DROP INDEX IF EXISTS memory_embeddings_hnsw');
  if (dimensions > MAX_INDEXED_DIMENSIONS) return;
  await database.query(
    `CREATE INDEX memory_embeddings_hnsw ON memory_embeddings USING hnsw ((embedding::${type}(${dimensions})) ${operatorClass})`,
  );
}

/** A float32 vector in pgvector's text form. */
export function vectorLiteral(vector: Float32Array): string {
  return `[${Array.from(vector).join(',')}]`;
}
