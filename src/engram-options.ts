import type { MemorySource, NewMemory } from './memory/memory.js';
import type { Scope } from './memory/scope.js';
import type { Settings } from './kernel/settings.js';
import type { RecallOptions as RankedRecallOptions } from './recall/recall-memories.js';
import type { MemoryFilter, MemoryStore } from './contracts/memory-store.js';
import type { Embedder } from './contracts/embedder.js';
import type { LanguageModel } from './contracts/language-model.js';
import type { SaveResult } from './remember/save-memory.js';
import type { SecretKind } from './privacy/secret-redaction.js';

// The vocabulary of the Engram facade's calls: what it is built from and what each call takes.
// Types only; engram.ts re-exports them beside the class.

/** What `recall` takes: what ranked recall takes, and what was true then. */
export interface RecallOptions extends RankedRecallOptions {
  /**
   * What was true at this time: an ISO date (the end of that day, UTC) or date-time. Memories
   * invalidated since come back, memories not yet valid then are left out. INVALID_INPUT otherwise.
   */
  asOf?: string;
  /** Also invalidated and superseded memories that match the query. */
  includeInvalid?: boolean;
}

export interface EngramOptions {
  store: MemoryStore;
  settings?: Settings;
  /** Where writes go when they name no scope (usually the current project). */
  defaultScope?: Scope;
  /** What reads see when they name no scopes (usually the current project and global). */
  readScopes?: readonly Scope[];
  /** Recorded in history for changes that name no actor. */
  actor?: string;
  now?: () => Date;
  /** Computes vectors: dedupe on write compares by cosine and stores the vector it computed. */
  embedder?: Embedder;
  /** Picks memories for buildMemoryContext (LLM-as-retriever) when a call names no model; a cheap model is enough. */
  model?: LanguageModel;
  /** Receives warnings of best-effort work (a vector that could not be computed); default console.warn. */
  onWarning?: (warning: string, cause?: unknown) => void;
}

/** What `save` did, and the kinds of secret it redacted before storing (absent when none). */
export interface EngramSaveResult extends SaveResult {
  redacted?: SecretKind[];
}

export interface SaveOptions {
  actor?: string;
  /** Update a near-duplicate in the same scope instead of adding another memory (default true). */
  dedupe?: boolean;
  /**
   * Where the write comes from (e.g. the session and turn an extraction read): replaces the memory's
   * own `source`, except that the memory's `origin`, when it names one, is kept.
   */
  source?: MemorySource;
}

/** Who a change is recorded for (history's actor) and which scopes the memory must be in (default: the read scopes). */
export interface ChangeOptions {
  actor?: string;
  scopes?: readonly Scope[];
}

export interface UpdateOptions extends ChangeOptions {
  /** Compare-and-set: the `updatedAt` the caller last saw; CONFLICT if the memory changed since. */
  ifUpdatedAt?: string;
  /** Where the change comes from: replaces the memory's `source` (the patch's, else its current one) but keeps its `origin`. */
  source?: MemorySource;
}

export interface ForgetOptions extends ChangeOptions {
  /** Delete for good instead of archiving. */
  hard?: boolean;
}

export interface InvalidateOptions extends ChangeOptions {
  /** The memory (in the same scopes) that replaced this one. */
  supersededBy?: string;
}

export interface RememberInput extends Omit<NewMemory, 'scope'> {
  scope?: Scope;
}

export interface ListOptions extends Partial<MemoryFilter> {
  /** Only memories older than `recall.staleDays` (by last update). */
  stale?: boolean;
}
