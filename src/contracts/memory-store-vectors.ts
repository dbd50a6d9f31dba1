import type { Memory, MemoryType } from '../memory/memory.js';
import type { Scope } from '../memory/scope.js';

/** The space stored vectors live in: the model that computed them and their length. Spaces never mix. */
export interface VectorSpace {
  model: string;
  dimensions: number;
}

/** A memory's vector. With `updatedAt`, it is stored only if the memory is still that version (the text it was computed from). */
export interface VectorEntry {
  id: string;
  vector: Float32Array;
  updatedAt?: string;
}

/** A nearest-neighbour query by cosine similarity, over active memories of the named scopes. */
export interface VectorSearch {
  scopes: readonly Scope[];
  vector: Float32Array;
  types?: readonly MemoryType[];
  limit: number;
}

/** A vector hit: the memory and its cosine similarity to the query (-1..1, higher is closer). */
export interface VectorHit {
  memory: Memory;
  similarity: number;
}

/** How many memories have a vector in the current space, and how many do not. */
export interface VectorCounts {
  stored: number;
  missing: number;
}

/**
 * The vectors role (`store.vectors`): one vector per memory, in one space, searched by cosine with
 * the scope filter in the query. Optional: a store without it recalls by full text alone
 * (`vector-search-unavailable`) and dedupes on write by words.
 */
export interface VectorIndex {
  /** The space of the stored vectors, or undefined before any was set. */
  space(): Promise<VectorSpace | undefined>;
  /** Sets the vector space; a different model or length drops every stored vector, so spaces never mix. */
  setSpace(space: VectorSpace): Promise<{ dropped: number }>;
  /**
   * Stores vectors (replacing old ones) in one transaction. Each must have the space's length;
   * ids that no longer exist, or whose `updatedAt` moved on, are skipped. Returns how many were stored.
   * Vectors are derived data: deleting a memory or changing its text drops its vector.
   */
  put(entries: readonly VectorEntry[]): Promise<number>;
  /** Nearest active memories by cosine similarity, best first; the scope filter is in the query. */
  search(query: VectorSearch): Promise<VectorHit[]>;
  /** Memories of any state (archived and invalid too) that have no vector yet, oldest first: the backfill queue. */
  missing(options: { limit: number }): Promise<Memory[]>;
  counts(): Promise<VectorCounts>;
}
