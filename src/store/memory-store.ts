import type { Memory, MemoryPatch, MemoryType, NewMemory } from '../core/memory.js';
import type { Scope } from '../core/scope.js';

/** How many memories an import created, replaced and skipped, and the ones it wrote. */
export interface ImportReport {
  created: number;
  replaced: number;
  skipped: number;
  written: Memory[];
}

/** Who or what made a change: recorded in history with every write. */
export interface ChangeContext {
  actor: string;
}

export const CHANGE_ACTIONS = ['create', 'update', 'invalidate', 'archive', 'restore', 'delete'] as const;
export type ChangeAction = (typeof CHANGE_ACTIONS)[number];

/** One row of the history table: a change to one memory, with its state before and after. */
export interface HistoryEntry {
  id: string;
  memoryId: string;
  action: ChangeAction;
  actor: string;
  at: string;
  before: Memory | null;
  after: Memory | null;
  /** The change this one undid, when it was made by `undo`. */
  undoOf: string | null;
}

/** Filters for `list` and `count`. Scopes are required: every read names the scopes it may see. */
export interface MemoryFilter {
  scopes: readonly Scope[];
  types?: readonly MemoryType[];
  /** `exclude` (default), `include` or `only`. */
  archived?: 'exclude' | 'include' | 'only';
  /** `exclude` (default), `include` or `only` memories that were invalidated. */
  invalid?: 'exclude' | 'include' | 'only';
  /** Only memories whose updatedAt is before this instant (ISO-8601). */
  updatedBefore?: string;
  /** Only memories whose last access (or creation, if never accessed) is before this instant. */
  accessedBefore?: string;
  /** Only memories with importance below this value. */
  importanceBelow?: number;
  limit?: number;
  offset?: number;
  /** Sort order; default `updated-desc`. */
  order?: 'updated-desc' | 'created-asc' | 'created-desc' | 'importance-desc';
}

/** A full-text query. `terms` are plain words: the store quotes them, so no user text is ever query syntax. */
export interface TextSearch {
  scopes: readonly Scope[];
  terms: readonly string[];
  /** `any` ranks by how many and how rare the matched terms are (OR); `all` requires every term. */
  match?: 'any' | 'all';
  types?: readonly MemoryType[];
  limit: number;
  /**
   * The number of hits the caller will keep in the end (its top_k). When set, a backend may search
   * without terms found in a large share of the scopes' memories (over 5% and 1,000 of them) once
   * this many hits hold the rarer terms: common terms barely move BM25 but make an OR query score
   * most of a large store. Unset, `any` is exact OR semantics.
   */
  sufficientHits?: number;
}

/** A full-text hit: the memory and its relevance (higher is better; BM25-like, not normalized). */
export interface TextHit {
  memory: Memory;
  relevance: number;
}

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

export interface StoreStats {
  total: number;
  active: number;
  archived: number;
  invalid: number;
  byType: Record<MemoryType, number>;
  byScope: Record<string, number>;
  historyEntries: number;
}

export interface StoreInfo {
  backend: string;
  location: string;
  schemaVersion: number;
}

/**
 * The ledger: where memories live. Every backend (SQLite, Postgres) implements this and passes
 * `runMemoryStoreSuite`. Every read names its scopes and the backend filters in the query itself.
 */
export interface MemoryStore {
  /** Opens the connection and migrates the schema; no I/O happens before this. */
  open(): Promise<void>;
  close(): Promise<void>;
  info(): StoreInfo;

  /** Creates one memory (validated, defaults filled) and records a `create` change. */
  create(input: NewMemory, change: ChangeContext): Promise<Memory>;
  /** Creates many memories in one transaction: all or none. */
  createMany(inputs: readonly NewMemory[], change: ChangeContext): Promise<Memory[]>;
  /**
   * Writes memories that carry their own ids, in one transaction, all or nothing. An id already in
   * the same scope is skipped, replaced whole (recorded as an update) or refused, per `onExisting`;
   * an id that exists in another scope is always refused with CONFLICT.
   */
  importMany(inputs: readonly NewMemory[], options: { onExisting: 'skip' | 'replace' | 'fail' }, change: ChangeContext): Promise<ImportReport>;
  /** Reads one memory by id; with scopes given, a memory outside them is not found. */
  get(id: string, scopes?: readonly Scope[]): Promise<Memory | undefined>;
  update(id: string, patch: MemoryPatch, change: ChangeContext): Promise<Memory>;
  /** Marks a memory no longer true (invalidAt = now), optionally linking what superseded it. */
  invalidate(id: string, options: { supersededBy?: string }, change: ChangeContext): Promise<Memory>;
  archive(id: string, change: ChangeContext): Promise<Memory>;
  restore(id: string, change: ChangeContext): Promise<Memory>;
  /** Deletes a memory for good; its history keeps the last state so the delete can be undone. */
  delete(id: string, change: ChangeContext): Promise<void>;

  list(filter: MemoryFilter): Promise<Memory[]>;
  count(filter: MemoryFilter): Promise<number>;
  /** Full-text search over name, description and content, active memories only, best first. */
  searchText(query: TextSearch): Promise<TextHit[]>;
  /** Records that memories were recalled: hit count + 1, last accessed = at. Not a history change. */
  recordAccess(ids: readonly string[], at: string): Promise<void>;

  /** The space of the stored vectors, or undefined before any was set. */
  vectorSpace(): Promise<VectorSpace | undefined>;
  /** Sets the vector space; a different model or length drops every stored vector, so spaces never mix. */
  setVectorSpace(space: VectorSpace): Promise<{ dropped: number }>;
  /**
   * Stores vectors (replacing old ones) in one transaction. Each must have the space's length;
   * ids that no longer exist, or whose `updatedAt` moved on, are skipped. Returns how many were stored.
   * Vectors are derived data: deleting a memory or changing its text drops its vector.
   */
  putVectors(entries: readonly VectorEntry[]): Promise<number>;
  /** Nearest active memories by cosine similarity, best first; the scope filter is in the query. */
  searchVector(query: VectorSearch): Promise<VectorHit[]>;
  /** Memories of any state (archived and invalid too) that have no vector yet, oldest first: the backfill queue. */
  memoriesMissingVectors(options: { limit: number }): Promise<Memory[]>;
  vectorCounts(): Promise<VectorCounts>;

  history(memoryId: string): Promise<HistoryEntry[]>;
  getChange(changeId: string): Promise<HistoryEntry | undefined>;
  /** Reverts one change; refused with UNDO_CONFLICT if the memory changed since. */
  undo(changeId: string, change: ChangeContext): Promise<HistoryEntry>;

  stats(scopes?: readonly Scope[]): Promise<StoreStats>;
}
