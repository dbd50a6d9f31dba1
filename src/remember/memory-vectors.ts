import type { WarningCode } from '../kernel/warnings.js';
import { EngramError } from '../kernel/errors.js';
import type { Memory } from '../memory/memory.js';
import type { VectorIndex, VectorSpace } from '../contracts/memory-store-vectors.js';
import { hasDirection } from '../contracts/store-checks/vector-input.js';
import type { Embedder } from '../contracts/embedder.js';

/** What vector maintenance works with: the store's vectors role and the embedder. */
export interface VectorDependencies {
  vectors: VectorIndex;
  embedder: Embedder;
}

/** The text a memory's vector is computed from: its name, description and content. */
export function memoryEmbeddingText(memory: Pick<Memory, 'name' | 'description' | 'content'>): string {
  return [memory.name.replace(/[-_.]+/g, ' '), memory.description, memory.content]
    .filter((part) => part.trim() !== '')
    .join('\n');
}

/** What a best-effort vector write did. */
export interface StoreVectorsResult {
  stored: number;
  /** `embedding-failed` or `vector-space-differs`: the memories stay without vectors until `engram reindex`. */
  warnings: WarningCode[];
  /** The embedder's error, when it failed. */
  error?: unknown;
}

/**
 * Computes and stores the vectors of memories just written. Best effort: the write has already
 * happened, so a failing embedder or a store in another vector space only yields a warning, and
 * the memories wait for `engram reindex`. A store without a space takes this embedder's.
 */
export async function storeMemoryVectors(
  dependencies: VectorDependencies,
  memories: readonly Memory[],
): Promise<StoreVectorsResult> {
  const { vectors: index, embedder } = dependencies;
  if (memories.length === 0) return { stored: 0, warnings: [] };
  let vectors: Float32Array[];
  try {
    vectors = await embedder.embed(memories.map(memoryEmbeddingText));
  } catch (error) {
    return { stored: 0, warnings: ['embedding-failed'], error };
  }
  const dimensions = vectors[0]?.length ?? 0;
  const space = await index.space();
  if (space === undefined) {
    await index.setSpace({ model: embedder.model, dimensions });
  } else if (space.model !== embedder.model || space.dimensions !== dimensions) {
    return { stored: 0, warnings: ['vector-space-differs'] };
  }
  const entries = memories
    .map((memory, index) => ({ id: memory.id, vector: vectors[index]!, updatedAt: memory.updatedAt }))
    .filter((entry) => entry.vector.length === dimensions && hasDirection(entry.vector));
  const stored = await index.put(entries);
  return { stored, warnings: entries.length < memories.length ? ['embedding-failed'] : [] };
}

export interface ReindexOptions {
  /** Memories embedded per round (default: the embedder's own batching over this many). */
  batchSize: number;
  signal?: AbortSignal;
  /** Called after each batch with how many memories are done of how many lacked a vector. */
  onProgress?: (progress: { done: number; total: number }) => void;
}

export interface ReindexReport {
  model: string;
  dimensions: number;
  /** The space the store had before, when it had one. */
  previousSpace: VectorSpace | undefined;
  /** Whether the model or length changed, so every vector was dropped and recomputed. */
  spaceChanged: boolean;
  /** Vectors of the old space that were dropped. */
  dropped: number;
  /** Memories without a vector when the run started (after any drop). */
  total: number;
  embedded: number;
  /** Memories left without a vector (changed meanwhile, or the embedder answered a zero vector). */
  skipped: number;
}

/**
 * Backfills vectors for every memory that has none, in batches. If the embedder's model or vector
 * length differs from the store's space, the space changes first, which drops all old vectors, so
 * everything is re-embedded rather than mixing two spaces. Safe to interrupt and rerun.
 */
export async function reindexVectors(
  dependencies: VectorDependencies,
  options: ReindexOptions,
): Promise<ReindexReport> {
  const { vectors: index, embedder } = dependencies;
  const batchSize = options.batchSize;
  if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 10_000) {
    throw new EngramError(
      'INVALID_INPUT',
      `Invalid batch size ${JSON.stringify(batchSize)}: a whole number from 1 to 10000.`,
    );
  }
  const previousSpace = await index.space();
  // One small request first: it learns the vector length, and a broken embedder fails here, before
  // a space change has dropped any vector.
  const [probe] = await embedder.embed(['engram'], options.signal ? { signal: options.signal } : {});
  const dimensions = probe!.length;
  const { dropped } = await index.setSpace({ model: embedder.model, dimensions });
  const spaceChanged =
    previousSpace !== undefined && (previousSpace.model !== embedder.model || previousSpace.dimensions !== dimensions);
  const total = (await index.counts()).missing;
  let embedded = 0;
  const skippedIds = new Set<string>();
  options.onProgress?.({ done: 0, total });
  for (;;) {
    options.signal?.throwIfAborted();
    const batch = (await index.missing({ limit: batchSize + skippedIds.size }))
      .filter((memory) => !skippedIds.has(memory.id))
      .slice(0, batchSize);
    if (batch.length === 0) break;
    const vectors = await embedder.embed(
      batch.map(memoryEmbeddingText),
      options.signal ? { signal: options.signal } : {},
    );
    const entries = batch.map((memory, index) => ({
      id: memory.id,
      vector: vectors[index]!,
      updatedAt: memory.updatedAt,
    }));
    if (entries.some((entry) => entry.vector.length !== dimensions)) {
      throw new EngramError(
        'EMBEDDING_FAILED',
        `The embedder ${JSON.stringify(embedder.model)} changed its vector length during reindex; run engram reindex again.`,
      );
    }
    const usable = entries.filter((entry) => hasDirection(entry.vector));
    const stored = await index.put(usable);
    embedded += stored;
    // Whatever was not stored (zero vector, changed meanwhile) is not retried in this run.
    if (stored < batch.length) {
      const still = new Set(
        (await index.missing({ limit: batchSize + skippedIds.size + batch.length })).map((memory) => memory.id),
      );
      for (const memory of batch) if (still.has(memory.id)) skippedIds.add(memory.id);
    }
    options.onProgress?.({ done: Math.min(total, embedded + skippedIds.size), total });
  }
  return {
    model: embedder.model,
    dimensions,
    previousSpace,
    spaceChanged,
    dropped,
    total,
    embedded,
    skipped: skippedIds.size,
  };
}
