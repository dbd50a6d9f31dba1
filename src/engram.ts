import { EngramError } from './core/errors.js';
import type { Memory, MemoryPatch, NewMemory } from './core/memory.js';
import { assertScope, type Scope } from './core/scope.js';
import { DEFAULT_SETTINGS, type Settings } from './core/settings.js';
import { recallMemories, type RecallOptions, type RecallResult } from './recall/recall-memories.js';
import type { HistoryEntry, MemoryFilter, MemoryStore, StoreStats } from './store/memory-store.js';

export type { RecallOptions, RecallResult } from './recall/recall-memories.js';

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
}

export interface RememberInput extends Omit<NewMemory, 'scope'> {
  scope?: Scope;
}

export interface ListOptions extends Partial<MemoryFilter> {
  /** Only memories older than `recall.staleDays` (by last update). */
  stale?: boolean;
}

export interface ImportReport {
  created: number;
  replaced: number;
  skipped: number;
}

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

  constructor(options: EngramOptions) {
    this.store = options.store;
    this.settings = options.settings ?? DEFAULT_SETTINGS;
    this.defaultScope = assertScope(options.defaultScope ?? 'global');
    this.readScopes = (options.readScopes ?? [...new Set([this.defaultScope, 'global'])]).map((scope) => assertScope(scope));
    this.#actor = options.actor ?? 'library';
    this.#now = options.now ?? (() => new Date());
  }

  /** Stores one memory in the given scope, or the default scope. */
  async remember(input: RememberInput, actor: string = this.#actor): Promise<Memory> {
    if (input === null || typeof input !== 'object') throw new EngramError('INVALID_INPUT', 'remember() takes an object with content.');
    return this.store.create({ ...input, scope: input.scope ?? this.defaultScope }, { actor });
  }

  /** Finds the memories most relevant to a natural-language query, best first. */
  async recall(query: string, options: RecallOptions = {}): Promise<RecallResult> {
    return recallMemories({ store: this.store, settings: this.settings, now: this.#now }, query, this.#scopes(options.scopes), options);
  }

  /** Reads one memory; NOT_FOUND if it does not exist (or lies outside `scopes` when given). */
  async get(id: string, scopes?: readonly Scope[]): Promise<Memory> {
    const memory = await this.store.get(id, scopes);
    if (!memory) throw new EngramError('NOT_FOUND', `No memory with id ${JSON.stringify(String(id).slice(0, 140))}.`);
    return memory;
  }

  async update(id: string, patch: MemoryPatch, actor: string = this.#actor, scopes?: readonly Scope[]): Promise<Memory> {
    if (scopes) await this.get(id, scopes);
    return this.store.update(id, patch, { actor });
  }

  /** Archives a memory (kept, left out of recall), or with `hard` deletes it for good. */
  async forget(id: string, options: { hard?: boolean; actor?: string; scopes?: readonly Scope[] } = {}): Promise<Memory | undefined> {
    const memory = await this.get(id, options.scopes);
    const actor = options.actor ?? this.#actor;
    if (options.hard) {
      await this.store.delete(id, { actor });
      return undefined;
    }
    if (memory.archived) return memory;
    return this.store.archive(id, { actor });
  }

  async restore(id: string, actor: string = this.#actor): Promise<Memory> {
    return this.store.restore(id, { actor });
  }

  async invalidate(id: string, supersededBy?: string, actor: string = this.#actor): Promise<Memory> {
    return this.store.invalidate(id, supersededBy === undefined ? {} : { supersededBy }, { actor });
  }

  async undo(changeId: string, actor: string = this.#actor): Promise<HistoryEntry> {
    return this.store.undo(changeId, { actor });
  }

  async history(id: string): Promise<HistoryEntry[]> {
    return this.store.history(id);
  }

  /** Lists memories in the read scopes (or the given ones), newest first. */
  async list(options: ListOptions = {}): Promise<Memory[]> {
    return this.store.list(this.#filter(options));
  }

  async count(options: ListOptions = {}): Promise<number> {
    return this.store.count(this.#filter(options));
  }

  async stats(scopes?: readonly Scope[]): Promise<StoreStats> {
    return this.store.stats(scopes);
  }

  /** Writes memories that carry ids (an import): existing ids are skipped, replaced or refused; all or nothing. */
  async importMemories(inputs: readonly NewMemory[], options: { onExisting?: 'skip' | 'replace' | 'fail'; actor?: string } = {}): Promise<ImportReport> {
    const actor = options.actor ?? 'import';
    const onExisting = options.onExisting ?? 'skip';
    const fresh: NewMemory[] = [];
    const existing: NewMemory[] = [];
    for (const input of inputs) {
      if (input.id !== undefined && (await this.store.get(input.id))) existing.push(input);
      else fresh.push(input);
    }
    if (existing.length > 0 && onExisting === 'fail') {
      throw new EngramError('CONFLICT', `${existing.length} memories already exist (first: ${existing[0]!.id}); nothing was imported.`);
    }
    await this.store.createMany(fresh, { actor });
    let replaced = 0;
    if (onExisting === 'replace') {
      for (const input of existing) {
        await this.store.update(
          input.id!,
          {
            content: input.content,
            ...(input.type !== undefined && { type: input.type }),
            ...(input.name !== undefined && { name: input.name }),
            ...(input.description !== undefined && { description: input.description }),
            ...(input.importance !== undefined && { importance: input.importance }),
          },
          { actor },
        );
        replaced += 1;
      }
    }
    return { created: fresh.length, replaced, skipped: onExisting === 'skip' ? existing.length : 0 };
  }

  #scopes(scopes: readonly Scope[] | undefined): Scope[] {
    const chosen = scopes ?? this.readScopes;
    if (!Array.isArray(chosen) || chosen.length === 0) throw new EngramError('INVALID_SCOPE', 'Name at least one scope to read.');
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
