import type { Memory, MemoryPatch, MemoryType, NewMemory } from '../memory/memory.js';
import type { Scope } from '../memory/scope.js';

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
  /**
   * Applies the change only if the memory's `updatedAt` still equals this (compare-and-set, in
   * the change's own transaction); otherwise CONFLICT and nothing changes. For editors that
   * read a memory, let a person change it, and write it back.
   */
  ifUpdatedAt?: string;
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

export const JOB_STATES = ['pending', 'running', 'done', 'failed'] as const;
/** pending: waiting for its run time; running: leased by a worker; done; failed: retries used up (visible, retryable by hand). */
export type JobState = (typeof JOB_STATES)[number];

/**
 * A durable background job (extraction of a turn, for one): it survives crashes because it lives in
 * the store. `key` makes enqueueing idempotent within a queue: the same source turn is one job.
 */
export interface Job {
  id: string;
  queue: string;
  key: string;
  /** Any JSON value, stored verbatim. */
  payload: unknown;
  state: JobState;
  /** Runs started so far (a claim counts as one). */
  attempts: number;
  maxAttempts: number;
  /** Not claimed before this instant (ISO-8601): backoff after a failure. */
  runAt: string;
  /** The worker holding the lease while running, else null. */
  lockedBy: string | null;
  /** When the lease runs out; a running job past it can be claimed again (its worker died). */
  lockedUntil: string | null;
  lastError: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface NewJob {
  queue: string;
  key: string;
  payload: unknown;
  /** Default 5. */
  maxAttempts?: number;
  /** Default now. */
  runAt?: string;
}

export interface JobFilter {
  queue?: string;
  states?: readonly JobState[];
  limit?: number;
}

/** A page of records for copying a store whole, ordered by id, starting after `after`. */
export interface ExportPage {
  after?: string;
  limit: number;
}

/** A checkpoint as stored, with when it was last set: what `exportCheckpoints` returns and `restoreRecords` takes. */
export interface CheckpointRecord {
  name: string;
  value: string;
  updatedAt: string;
}

/** Records copied verbatim into a store (no new history): what `restoreRecords` writes. */
export interface StoreRecords {
  memories?: readonly Memory[];
  history?: readonly HistoryEntry[];
  /** Vectors with the `updatedAt` of the memory version they were computed from. */
  vectors?: readonly VectorEntry[];
  /** Jobs in any state, with their attempts, leases and errors. */
  jobs?: readonly Job[];
  checkpoints?: readonly CheckpointRecord[];
}

/** How many records of each kind one `restoreRecords` call handled. */
export interface RestoreCounts {
  memories: number;
  history: number;
  vectors: number;
  jobs: number;
  checkpoints: number;
}

/** How many records `restoreRecords` wrote, and how many it skipped because an identical id was there. */
export interface RestoreReport {
  written: RestoreCounts;
  skipped: RestoreCounts;
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

  /**
   * Runs `fn` while holding a named lock shared by every process that uses this store (every
   * machine, for a server store). Writers that must check-then-write (dedupe on write) hold
   * `memory-write:<scope>`. Waits at most `waitMs` (default 10,000) for the lock, then rejects with
   * LOCK_TIMEOUT; a holder that died releases it (connection closed, or its lease ran out).
   */
  withLock<T>(name: string, fn: () => Promise<T>, options?: { waitMs?: number }): Promise<T>;

  /** Reads a named checkpoint (an extraction cursor, a schedule's last run); undefined if never set. */
  getCheckpoint(name: string): Promise<string | undefined>;
  /**
   * Sets a named checkpoint. With `expected` given (undefined-as-absent is `null`), it is a
   * compare-and-set: returns false and changes nothing when the stored value differs.
   */
  setCheckpoint(name: string, value: string, options?: { expected?: string | null }): Promise<boolean>;

  /** Adds a job unless the queue already has one with this key (any state): then returns that one, created false. */
  enqueueJob(input: NewJob): Promise<{ job: Job; created: boolean }>;
  /**
   * Leases the oldest due job of a queue to `worker` for `leaseMs`: a pending job whose runAt has
   * come, or a running one whose lease ran out. Attempts + 1. Two workers never hold the same job.
   */
  claimJob(options: { queue: string; worker: string; leaseMs: number }): Promise<Job | undefined>;
  /** Marks a leased job done; JOB_LEASE_LOST if `worker` no longer holds it. */
  completeJob(id: string, worker: string): Promise<Job>;
  /**
   * Records a failed run of a leased job: back to pending at `retryAt` while attempts remain and
   * `retryAt` is given, else `failed`. JOB_LEASE_LOST if `worker` no longer holds it.
   */
  failJob(id: string, worker: string, failure: { error: string; retryAt?: string }): Promise<Job>;
  /** Puts a failed job back to pending now with attempts reset (the user's retry); NOT_FOUND / CONFLICT otherwise. */
  retryJob(id: string): Promise<Job>;
  getJob(id: string): Promise<Job | undefined>;
  /** Jobs by state and queue, oldest first. */
  listJobs(filter: JobFilter): Promise<Job[]>;
  jobCounts(queue?: string): Promise<Record<JobState, number>>;
  /** Deletes finished jobs (`done`, and `failed` when named) of a queue last changed before `updatedBefore`; returns how many. */
  deleteJobs(filter: { queue: string; states: readonly ('done' | 'failed')[]; updatedBefore: string }): Promise<number>;
  /** Deletes checkpoints whose name starts with `prefix` (taken literally) and that were last set before `updatedBefore`. */
  deleteCheckpoints(filter: { prefix: string; updatedBefore: string }): Promise<number>;

  /** Every memory in any state and scope, by id: for copying a store (`engram migrate`), never for recall. */
  exportMemories(page: ExportPage): Promise<Memory[]>;
  /** Every history entry, by id, including those of deleted memories. */
  exportHistory(page: ExportPage): Promise<HistoryEntry[]>;
  /** Every stored vector of the current space, by memory id, with that memory's updatedAt. */
  exportVectors(page: ExportPage): Promise<VectorEntry[]>;
  /** Every job in any state, by id (byte order). */
  exportJobs(page: ExportPage): Promise<Job[]>;
  /** Every checkpoint, by name (byte order of its UTF-8); `after` is the last name of the previous page. */
  exportCheckpoints(page: ExportPage): Promise<CheckpointRecord[]>;
  /**
   * Writes records exactly as given (ids, timestamps, counters, history, jobs, checkpoints), in one transaction, with
   * no new history: the receiving end of `engram migrate`. An id already present is skipped when
   * identical and refused with CONFLICT when it differs (so a resumed copy is idempotent).
   * Vectors need the vector space set first.
   */
  restoreRecords(records: StoreRecords): Promise<RestoreReport>;
}
