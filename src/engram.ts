/// <reference lib="esnext.disposable" preserve="true" />
// Engram is async-disposable: a consumer without @types/node (a browser or edge project) gets Symbol.asyncDispose from this lib.
import { EngramError } from './kernel/errors.js';
import type { Memory, MemoryPatch, NewMemory } from './memory/memory.js';
import { assertScope, type Scope } from './memory/scope.js';
import { DEFAULT_SETTINGS, type Settings } from './kernel/settings.js';
import { recallMemories, type RecallResult } from './recall/recall-memories.js';
import { parseAsOf, withInvalidMemories } from './consolidation/as-of.js';
import { supersedeChain, type SupersedeChain } from './consolidation/supersede-chain.js';
import { buildMemoryContext, type MemoryContext, type MemoryContextOptions } from './recall/memory-context.js';
import {
  type ImportReport,
  type PurgeReport,
  type MemoryFilter,
  type MemoryStore,
  type StoreStats,
} from './contracts/memory-store.js';
import type { HistoryEntry } from './memory/memory-history.js';
import type { Embedder } from './contracts/embedder.js';
import type { LanguageModel } from './contracts/language-model.js';
import type { ReindexOptions, ReindexReport } from './remember/memory-vectors.js';
import type { DedupeReport } from './maintenance/merge-duplicates.js';
import type { AgingReport } from './maintenance/age-memories.js';
import type { SecretKind } from './privacy/secret-redaction.js';
import { EngramJobs } from './extraction/engram-jobs.js';
import { EngramChangeSets, EngramDream } from './consolidation/engram-change-sets.js';
import { EngramStorage } from './engram-storage.js';
import { EngramWrites } from './engram-writes.js';

export type { RecallResult } from './recall/recall-memories.js';
export type { SupersedeChain, SupersedeLink } from './consolidation/supersede-chain.js';
export type { SaveResult } from './remember/save-memory.js';
export type { ReindexOptions, ReindexReport } from './remember/memory-vectors.js';
export type { DedupeReport } from './maintenance/merge-duplicates.js';
export type { AgingReport } from './maintenance/age-memories.js';
export type { MemoryContext, MemoryContextOptions } from './recall/memory-context.js';
export type {
  RecallOptions,
  EngramOptions,
  EngramSaveResult,
  SaveOptions,
  ChangeOptions,
  UpdateOptions,
  ForgetOptions,
  InvalidateOptions,
  RememberInput,
  ListOptions,
} from './engram-options.js';
import type {
  RecallOptions,
  EngramOptions,
  EngramSaveResult,
  SaveOptions,
  ChangeOptions,
  UpdateOptions,
  ForgetOptions,
  InvalidateOptions,
  RememberInput,
  ListOptions,
} from './engram-options.js';

/**
 * The library: remember, recall, list, forget and undo over one store, with scopes filled from
 * the current project. CLI, HTTP and MCP are thin shells over these methods.
 * @example
 * const engram = new Engram({ store, defaultScope: 'project:github.com/acme/app' });
 * await engram.remember({ content: 'Integration tests use the real database, no mocks.', type: 'feedback' });
 * const { memories } = await engram.recall('how should I write the tests?');
 */
export class Engram {
  readonly store: MemoryStore;
  readonly settings: Settings;
  readonly defaultScope: Scope;
  readonly readScopes: readonly Scope[];
  readonly #actor: string;
  readonly #now: () => Date;
  readonly embedder: Embedder | undefined;
  readonly model: LanguageModel | undefined;
  readonly #writes: EngramWrites;
  /** The durable extraction queue: list, retry a failed job, run the due ones. */
  readonly jobs: EngramJobs;
  /** The dream's change sets: list, get, undo one whole. */
  readonly changeSets: EngramChangeSets;
  /** The dream's bookkeeping: a session that ended, its state. */
  readonly dream: EngramDream;
  /** The store as the surfaces show it: backend and file, vectors, notes between processes. */
  readonly storage: EngramStorage;

  constructor(options: EngramOptions) {
    this.store = options.store;
    this.settings = options.settings ?? DEFAULT_SETTINGS;
    this.defaultScope = assertScope(options.defaultScope ?? 'global');
    this.readScopes = (options.readScopes ?? [...new Set([this.defaultScope, 'global'])]).map((scope) =>
      assertScope(scope),
    );
    this.#actor = options.actor ?? 'library';
    this.#now = options.now ?? (() => new Date());
    this.embedder = options.embedder;
    this.model = options.model;
    this.#writes = new EngramWrites({
      store: this.store,
      settings: this.settings,
      defaultScope: this.defaultScope,
      actor: this.#actor,
      now: this.#now,
      embedder: this.embedder,
      onWarning: options.onWarning ?? ((warning) => console.warn(`engram: ${warning}`)),
    });
    this.jobs = new EngramJobs(this.store);
    this.changeSets = new EngramChangeSets({
      store: this.store,
      readScopes: this.readScopes,
      actor: this.#actor,
      now: this.#now,
      embedder: this.embedder,
      scopes: (named) => this.#scopes(named),
    });
    this.dream = new EngramDream(this.store);
    this.storage = new EngramStorage(this.store);
  }

  /** Stores one memory in the given scope, or the default scope; a near-duplicate there is updated instead (see save). */
  async remember(input: RememberInput, options: SaveOptions = {}): Promise<Memory> {
    return (await this.save(input, options)).memory;
  }

  /**
   * Stores one memory, or updates its near-duplicate in the same scope, and says which (`created` or
   * `merged`). Private blocks are stripped and secrets redacted first (warnings `secrets-redacted`,
   * `private-content-removed`; `redacted` names the kinds, never the secrets).
   */
  async save(input: RememberInput, options: SaveOptions = {}): Promise<EngramSaveResult> {
    return this.#writes.save(input, options);
  }

  /** Finds near-duplicate groups per scope in the read scopes (or the given ones); with `apply`, merges them. */
  async dedupe(
    options: { scopes?: readonly Scope[]; apply?: boolean; actor?: string; lexicalThreshold?: number } = {},
  ): Promise<DedupeReport> {
    const { scopes, actor, ...rest } = options;
    const dependencies = {
      store: this.store,
      settings: this.settings,
      ...(this.embedder && { embedder: this.embedder }),
    };
    // Maintenance loads when it runs, not with every engram opened (a hook opens one per prompt).
    const { dedupeMemories } = await import('./maintenance/merge-duplicates.js');
    return dedupeMemories(dependencies, { ...rest, scopes: this.#scopes(scopes), actor: actor ?? this.#actor });
  }

  /** Archives old, unimportant memories in the read scopes (or the given ones, or every scope with `allScopes`). */
  async age(
    options: { scopes?: readonly Scope[]; allScopes?: boolean; dryRun?: boolean; actor?: string } = {},
  ): Promise<AgingReport> {
    const { ageMemories } = await import('./maintenance/age-memories.js');
    return ageMemories(
      { store: this.store, settings: this.settings, now: this.#now },
      {
        ...(!options.allScopes && { scopes: this.#scopes(options.scopes) }),
        ...(options.dryRun !== undefined && { dryRun: options.dryRun }),
        actor: options.actor ?? this.#actor,
      },
    );
  }

  /**
   * Finds the memories most relevant to a natural-language query, best first. With `asOf` or
   * `includeInvalid`, memories no longer true come back too (see consolidation/as-of.ts).
   */
  async recall(query: string, options: RecallOptions = {}): Promise<RecallResult> {
    const { asOf: asked, includeInvalid, ...ranked } = options ?? {};
    if (includeInvalid !== undefined && typeof includeInvalid !== 'boolean')
      throw new EngramError(
        'INVALID_INPUT',
        `Invalid includeInvalid ${JSON.stringify(includeInvalid)}: true or false.`,
      );
    // Checked before recall, so a bad date records no access.
    const asOf = asked === undefined ? undefined : parseAsOf(asked);
    const scopes = this.#scopes(ranked.scopes);
    const dependencies = { store: this.store, settings: this.settings, now: this.#now, embedder: this.embedder };
    const result = await recallMemories(dependencies, query, scopes, ranked);
    if (asOf === undefined && includeInvalid !== true) return result;
    return withInvalidMemories(dependencies, result, {
      scopes,
      ...(asOf !== undefined && { asOf }),
      ...(ranked.topK !== undefined && { topK: ranked.topK }),
    });
  }

  /** What superseded a memory of the read scopes (or the given ones), and what it superseded, with who and why. */
  async supersedeChain(id: string, scopes: readonly Scope[] = this.readScopes): Promise<SupersedeChain> {
    const chosen = this.#scopes(scopes);
    return supersedeChain(this.store, await this.get(id, chosen), chosen);
  }

  /**
   * What a model should receive for this message: the static part (instructions and the MEMORY.md
   * index) for the start of the system prompt and a `<memory_context>` block within the token budget
   * for its end. Memories put in the block count as hits.
   */
  async buildMemoryContext(query: string, options: MemoryContextOptions = {}): Promise<MemoryContext> {
    // This engram's model selects unless the call names one; `model: undefined` given explicitly turns selection off for the call.
    // A model too slow for a waiting user (interactive: false) selects only when a call names it.
    const chosen =
      this.model &&
      this.model.interactive !== false &&
      options !== null &&
      typeof options === 'object' &&
      !('model' in options)
        ? { ...options, model: this.model }
        : options;
    return buildMemoryContext(
      { store: this.store, settings: this.settings, now: this.#now, embedder: this.embedder },
      query,
      this.#scopes(chosen?.scopes),
      chosen,
    );
  }

  /**
   * What to inject for a user's message: the same as `buildMemoryContext` (the static part for the
   * start of the system prompt, `<memory_context>` for its end), by the name a front door uses.
   */
  async inject(message: string, options: MemoryContextOptions = {}): Promise<MemoryContext> {
    return this.buildMemoryContext(message, options);
  }

  /** Closes the store this Engram reads and writes; later calls fail with STORE_CLOSED. */
  async close(): Promise<void> {
    await this.store.close();
  }

  /** `await using engram = …` closes the store at the end of the block. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  /** Reads one memory; NOT_FOUND if it does not exist in the read scopes (or the given ones). */
  async get(id: string, scopes: readonly Scope[] = this.readScopes): Promise<Memory> {
    const memory = await this.find(id, scopes);
    if (!memory) throw new EngramError('NOT_FOUND', `No memory with id ${JSON.stringify(String(id).slice(0, 140))}.`);
    return memory;
  }

  /** Reads one memory of the read scopes (or the given ones); undefined if there is none (a caller that words its own NOT_FOUND). */
  async find(id: string, scopes: readonly Scope[] = this.readScopes): Promise<Memory | undefined> {
    return this.store.get(id, scopes);
  }

  /** Changes fields of a memory in the read scopes (or the given ones); with `ifUpdatedAt`, only if nobody changed it since (else CONFLICT). */
  async update(id: string, patch: MemoryPatch, options: UpdateOptions = {}): Promise<Memory> {
    const { actor, scopes } = this.#change(options);
    return this.#writes.update(await this.get(id, scopes), patch, options, actor);
  }

  /** Archives a memory (kept, left out of recall), or with `hard` deletes it for good. */
  async forget(id: string, options: ForgetOptions = {}): Promise<Memory | undefined> {
    const { actor, scopes } = this.#change(options);
    const memory = await this.get(id, scopes);
    if (options.hard) {
      await this.store.delete(id, { actor });
      return undefined;
    }
    if (memory.archived) return memory;
    return this.store.archive(id, { actor });
  }

  /**
   * Removes a memory of the read scopes (or the given ones) for good, with the content of its
   * history, the jobs that quote it or hold the conversation it was extracted from (with their
   * progress), what checkpoints quote of it (recent extractions, change sets), and clears freed copies from the store's files where the
   * backend can (`store.purge`). A deleted memory whose history remains can be purged too. Recorded
   * as a `purge` entry with no content; cannot be undone.
   */
  async purge(id: string, options: ChangeOptions = {}): Promise<PurgeReport> {
    const { actor, scopes } = this.#change(options);
    const memory = typeof id === 'string' ? await this.store.get(id, scopes) : undefined;
    if (!memory) {
      const states = typeof id === 'string' ? await this.history(id, scopes) : [];
      if (!states.some((entry) => entry.action !== 'purge'))
        throw new EngramError(
          'NOT_FOUND',
          `No memory or history with id ${JSON.stringify(String(id).slice(0, 140))} in ${scopes.join(', ')}.`,
        );
    }
    return this.#writes.purge(id, memory, actor);
  }

  /** Brings an archived memory of the read scopes (or the given ones) back into recall. */
  async restore(id: string, options: ChangeOptions = {}): Promise<Memory> {
    const { actor, scopes } = this.#change(options);
    await this.get(id, scopes);
    return this.store.restore(id, { actor });
  }

  /** Marks a memory no longer true, optionally linking the memory (in the same scopes) that replaced it. */
  async invalidate(id: string, options: InvalidateOptions = {}): Promise<Memory> {
    const { actor, scopes } = this.#change(options);
    const { supersededBy } = options;
    await this.get(id, scopes);
    if (supersededBy !== undefined) await this.get(supersededBy, scopes);
    return this.store.invalidate(id, supersededBy === undefined ? {} : { supersededBy }, { actor });
  }

  /**
   * One change by its id wherever it is in the store (the history entry; `engram undo` finds the
   * change's own scope with it); undefined when there is none. `undo` confines to scopes.
   */
  async findChange(changeId: string): Promise<HistoryEntry | undefined> {
    return typeof changeId === 'string' ? this.store.getChange(changeId) : undefined;
  }

  /** Reverts one change to a memory of the read scopes (or the given ones). */
  async undo(changeId: string, options: ChangeOptions = {}): Promise<HistoryEntry> {
    const { actor, scopes } = this.#change(options);
    const change = typeof changeId === 'string' ? await this.store.getChange(changeId) : undefined;
    const scope = change?.after?.scope ?? change?.before?.scope;
    if (!change || scope === undefined || !scopes.includes(scope)) {
      throw new EngramError(
        'NOT_FOUND',
        `No change with id ${JSON.stringify(String(changeId).slice(0, 140))} in ${scopes.join(', ')}.`,
      );
    }
    const entry = await this.store.undo(changeId, { actor });
    await this.#writes.afterUndo(entry);
    return entry;
  }

  /**
   * Computes vectors for every memory that has none (all of them when the embedder's model or
   * length differs from the store's vector space). CONFIG_INVALID without an embedder,
   * STORE_UNSUPPORTED for a store without vectors.
   */
  async reindex(options: Partial<ReindexOptions> = {}): Promise<ReindexReport> {
    return this.#writes.reindex(options);
  }

  /** Every change to a memory of the read scopes (or the given ones), oldest first; deleted memories too. */
  async history(id: string, scopes: readonly Scope[] = this.readScopes): Promise<HistoryEntry[]> {
    const entries = await this.store.history(id);
    // A purge entry keeps no state, so no scope: it says only that this id was purged, by whom and when.
    return entries.filter((entry) => {
      const state = entry.after ?? entry.before;
      return state === null ? entry.action === 'purge' : scopes.includes(state.scope);
    });
  }

  /** Lists memories in the read scopes (or the given ones), newest first. */
  async list(options: ListOptions = {}): Promise<Memory[]> {
    return this.store.list(this.#filter(options));
  }

  async count(options: ListOptions = {}): Promise<number> {
    return this.store.count(this.#filter(options));
  }

  /** Counts of the read scopes (or the given ones; `'all'` for the whole store). */
  async stats(scopes: readonly Scope[] | 'all' = this.readScopes): Promise<StoreStats> {
    return this.store.stats(scopes === 'all' ? undefined : scopes);
  }

  /** Writes memories that carry ids (an import) in one transaction: existing ids are skipped, replaced or refused. */
  async importMemories(
    inputs: readonly NewMemory[],
    options: { onExisting?: 'skip' | 'replace' | 'fail'; actor?: string } = {},
  ): Promise<ImportReport & { redacted: SecretKind[] }> {
    return this.#writes.importMemories(inputs, options);
  }

  /** Who a change is recorded for and which scopes it may touch: the call's, else this engram's. */
  #change(options: ChangeOptions): { actor: string; scopes: readonly Scope[] } {
    if (options === null || typeof options !== 'object')
      throw new EngramError('INVALID_INPUT', 'The options of a change are an object ({ actor?, scopes? }).');
    return { actor: options.actor ?? this.#actor, scopes: options.scopes ?? this.readScopes };
  }

  #scopes(scopes: readonly Scope[] | undefined): Scope[] {
    const chosen = scopes ?? this.readScopes;
    if (!Array.isArray(chosen) || chosen.length === 0)
      throw new EngramError('INVALID_SCOPE', 'Name at least one scope to read.');
    return chosen.map((scope) => assertScope(scope));
  }

  #filter(options: ListOptions): MemoryFilter {
    const { stale, ...filter } = options;
    const now = this.#now().getTime();
    return {
      ...filter,
      scopes: this.#scopes(options.scopes),
      ...(stale && { updatedBefore: new Date(now - this.settings.recall.staleDays * 86_400_000).toISOString() }),
    };
  }
}
