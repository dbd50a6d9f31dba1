import { EngramError } from '../kernel/errors.js';
import type { Memory, MemoryPatch, MemoryType, NewMemory } from '../memory/memory.js';
import type { ChangeContext, HistoryEntry } from '../memory/memory-history.js';
import type { Scope } from '../memory/scope.js';
import type { PurgeOptions, PurgeReport } from '../memory/memory-purge.js';
import type { ChangeFeed } from './memory-store-changes.js';
import type { Checkpoints } from './memory-store-checkpoints.js';
import type { JobQueue } from './memory-store-jobs.js';
import type { StoreLocks } from './memory-store-locks.js';
import type { RecordCopy } from './memory-store-records.js';
import type { VectorIndex } from './memory-store-vectors.js';

// The store seam, composed of roles: the ledger (memories and their history) every backend
// implements, and optional roles a backend adds when it can (vectors, jobs, locks, checkpoints,
// record copy), each in its own file beside this one. Callers reach a role through its property
// (`store.jobs.enqueue(…)`) and degrade, with a warning, when a store lacks it.

export type { PurgeOptions, PurgePlace, PurgeReport } from '../memory/memory-purge.js';

/** How many memories an import created, replaced and skipped, and the ones it wrote. */
export interface ImportReport {
  created: number;
  replaced: number;
  skipped: number;
  written: Memory[];
}

/** How `importMany` treats ids that exist, and what it expects to find. */
export interface ImportOptions {
  onExisting: 'skip' | 'replace' | 'fail';
  /**
   * Compare-and-set per memory: for each id named, the stored memory's `updatedAt` must still be this
   * (null: no memory has the id), else CONFLICT and nothing of the import is written. For writers that
   * read memories, work out their new states elsewhere and must not overwrite an edit made meanwhile.
   */
  ifUpdatedAt?: Readonly<Record<string, string | null>>;
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
  /** Only memories with importance of at least this value (with importanceBelow: a range). */
  importanceAtLeast?: number;
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
 * The ledger: where memories live, with the history of every change. The one role every backend
 * implements. Every read names its scopes and the backend filters in the query itself.
 */
export interface MemoryLedger {
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
   * an id that exists in another scope is always refused with CONFLICT. With `ifUpdatedAt` (memory id
   * → the `updatedAt` the caller read, null for none), the import is written only if every memory named
   * there is still at that version, checked inside the import's own transaction (compare-and-set, like
   * `ChangeContext.ifUpdatedAt` for one change); otherwise CONFLICT with `details.changed` listing the
   * ids that moved on, are gone or appeared, and nothing is written.
   */
  importMany(inputs: readonly NewMemory[], options: ImportOptions, change: ChangeContext): Promise<ImportReport>;
  /** Reads one memory by id; with scopes given, a memory outside them is not found. */
  get(id: string, scopes?: readonly Scope[]): Promise<Memory | undefined>;
  update(id: string, patch: MemoryPatch, change: ChangeContext): Promise<Memory>;
  /** Marks a memory no longer true (invalidAt = now), optionally linking what superseded it. */
  invalidate(id: string, options: { supersededBy?: string }, change: ChangeContext): Promise<Memory>;
  archive(id: string, change: ChangeContext): Promise<Memory>;
  restore(id: string, change: ChangeContext): Promise<Memory>;
  /** Deletes a memory for good; its history keeps the last state so the delete can be undone. */
  delete(id: string, change: ChangeContext): Promise<void>;
  /**
   * Removes a memory for good with the content of its history (every earlier entry), the jobs whose
   * payload quotes it or holds the conversation it came from (`options.jobSources`), and what
   * checkpoints quote of it, then clears freed copies from the files where the backend can, and
   * records a `purge` entry with no content. Reports each place, cleared or not and why. Works on a
   * deleted memory whose history remains; NOT_FOUND when there is neither. Cannot be undone.
   */
  purge(id: string, change: ChangeContext, options?: PurgeOptions): Promise<PurgeReport>;

  list(filter: MemoryFilter): Promise<Memory[]>;
  count(filter: MemoryFilter): Promise<number>;
  /** Full-text search over name, description and content, active memories only, best first. */
  searchText(query: TextSearch): Promise<TextHit[]>;
  /** Records that memories were recalled: hit count + 1, last accessed = at. Not a history change. */
  recordAccess(ids: readonly string[], at: string): Promise<void>;

  history(memoryId: string): Promise<HistoryEntry[]>;
  getChange(changeId: string): Promise<HistoryEntry | undefined>;
  /** Reverts one change; refused with UNDO_CONFLICT if the memory changed since. */
  undo(changeId: string, change: ChangeContext): Promise<HistoryEntry>;

  stats(scopes?: readonly Scope[]): Promise<StoreStats>;
}

/** The optional roles a store may have besides the ledger, each a property; absent when the backend lacks it. */
export interface StoreRoles {
  /** Vectors for semantic recall and dedupe (memory-store-vectors.ts). */
  readonly vectors?: VectorIndex;
  /** The durable job queue extraction runs on (memory-store-jobs.ts). */
  readonly jobs?: JobQueue;
  /** Named locks shared by every process (memory-store-locks.ts). */
  readonly locks?: StoreLocks;
  /** Named values with compare-and-set: cursors, progress (memory-store-checkpoints.ts). */
  readonly checkpoints?: Checkpoints;
  /** Reading every record out and writing it back verbatim, for `engram migrate` (memory-store-records.ts). */
  readonly records?: RecordCopy;
  /** The memories changed since a point, for sync (memory-store-changes.ts). */
  readonly changes?: ChangeFeed;
}

/**
 * A store: the ledger, plus the roles its backend supports. SQLite and Postgres have every role and
 * pass all of `runMemoryStoreSuite`; a backend with fewer passes the cases of the roles it has.
 */
export interface MemoryStore extends MemoryLedger, StoreRoles {}

export type StoreRole = keyof StoreRoles;
/** Every optional role, in the order the conformance suite tests them. */
export const STORE_ROLES = [
  'vectors',
  'jobs',
  'locks',
  'checkpoints',
  'records',
  'changes',
] as const satisfies readonly StoreRole[];

/** A store known to have the roles `R`. */
export type StoreWith<R extends StoreRole> = MemoryStore & { readonly [K in R]-?: NonNullable<StoreRoles[K]> };

const ROLE_NAMES: Record<StoreRole, string> = {
  vectors: 'vectors (store.vectors)',
  jobs: 'job queue (store.jobs)',
  locks: 'store locks (store.locks)',
  checkpoints: 'checkpoints (store.checkpoints)',
  records: 'record copy (store.records)',
  changes: 'change feed (store.changes)',
};

/** The roles of `roles` (default every optional role) that a store lacks, in the order named. */
export function missingRoles(store: MemoryStore, roles: readonly StoreRole[] = STORE_ROLES): StoreRole[] {
  return roles.filter((role) => store[role] === undefined);
}

/** Whether a store has every role named. */
export function hasRoles<R extends StoreRole>(store: MemoryStore, roles: readonly R[]): store is StoreWith<R> {
  return missingRoles(store, roles).length === 0;
}

/** A role of the store, or STORE_UNSUPPORTED naming the role and what needed it (`purpose`, e.g. "engram migrate"). */
export function requireRole<R extends StoreRole>(
  store: MemoryStore,
  role: R,
  purpose: string,
): NonNullable<StoreRoles[R]> {
  const found = store[role];
  if (found !== undefined) return found;
  const { backend, location } = store.info();
  throw new EngramError(
    'STORE_UNSUPPORTED',
    `The ${backend} store ${location} has no ${ROLE_NAMES[role]}, which ${purpose} needs. Use a store that has it (SQLite and Postgres have every role).`,
    { details: { role, backend } },
  );
}
