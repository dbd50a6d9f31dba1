import { EngramError } from '../kernel/errors.js';
import type { HistoryEntry } from '../memory/memory-history.js';
import type { Scope } from '../memory/scope.js';
import type { MemoryStore } from '../contracts/memory-store.js';
import type { Embedder } from '../contracts/embedder.js';
import {
  changeSetEntries,
  isChangeSetId,
  listChangeSets,
  readChangeSet,
  undoChangeSet,
  type ChangeSetRecord,
  type ChangeSetUndo,
} from './change-sets.js';
import type { DreamState } from './dream-gates.js';

/**
 * Change sets as `engram.changeSets` offers them (`engram undo cs_…`, the viewer's Activity,
 * `GET /v1/change-sets`): the latest listed, one read with the change it made to each memory, one
 * undone whole. And the dream's own state (`engram.dream`): when it last ran, the sessions it counts.
 * Every read is confined to scopes: the call's, else the engram's read scopes.
 */

/** One change set with the history entry of each memory it changed (before and after). */
export interface ChangeSetDetail {
  changeSet: ChangeSetRecord;
  entries: HistoryEntry[];
}

/** An undone change set as every surface shows it (`engram undo --json`, `POST /v1/undo`). */
export interface ChangeSetUndoJson {
  changeSet: string;
  undone: HistoryEntry[];
  vectors: ChangeSetUndo['vectors'];
}

/** What `engram.changeSets` and `engram.dream` read through: the store, this engram's scopes, actor, clock and embedder. */
export interface ChangeSetContext {
  store: MemoryStore;
  readScopes: readonly Scope[];
  actor: string;
  now: () => Date;
  embedder: Embedder | undefined;
  /** Checks and copies the scopes a call names (INVALID_SCOPE for none or a bad one). */
  scopes: (named: readonly Scope[] | undefined) => Scope[];
}

const DEFAULT_LIMIT = 20;
const MAX_LIMIT = 500;

/** `engram.changeSets`: many changes written as one and undone as one (a dream's run). */
export class EngramChangeSets {
  readonly #context: ChangeSetContext;

  constructor(context: ChangeSetContext) {
    this.#context = context;
  }

  /** The latest change sets whose scopes are all among the given ones, newest first (default 20); none for a store without checkpoints. */
  async list(options: { scopes?: readonly Scope[]; limit?: number } = {}): Promise<ChangeSetRecord[]> {
    if (options === null || typeof options !== 'object')
      throw new EngramError('INVALID_INPUT', 'The options of a change set list are an object ({ scopes?, limit? }).');
    const limit = options.limit ?? DEFAULT_LIMIT;
    if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT)
      throw new EngramError(
        'INVALID_INPUT',
        `Invalid limit ${JSON.stringify(limit)}: a whole number from 1 to ${MAX_LIMIT}.`,
      );
    return listChangeSets(this.#context.store, { scopes: this.#context.scopes(options.scopes), limit });
  }

  /** One change set and the change it made to each memory; NOT_FOUND unless its scopes are all among the given ones. */
  async get(id: string, options: { scopes?: readonly Scope[] } = {}): Promise<ChangeSetDetail> {
    const scopes = this.#context.scopes(options?.scopes);
    const record = isChangeSetId(id) ? await readChangeSet(this.#context.store, id) : undefined;
    if (!record || !record.scopes.every((scope) => scopes.includes(scope)))
      throw new EngramError(
        'NOT_FOUND',
        `No change set ${JSON.stringify(String(id).slice(0, 80))} in ${scopes.join(', ')}.`,
      );
    return { changeSet: record, entries: await changeSetEntries(this.#context.store, record) };
  }

  /**
   * A change set by id wherever it is in the store, whatever its scopes (`engram undo cs_…` on the
   * user's own machine, where an id names one set); undefined when there is none. Surfaces that
   * serve others confine with `get`.
   */
  async find(id: string): Promise<ChangeSetRecord | undefined> {
    return isChangeSetId(id) ? readChangeSet(this.#context.store, id) : undefined;
  }

  /**
   * Reverts a whole change set, or nothing: UNDO_CONFLICT when a memory changed since (or it was
   * undone already), NOT_FOUND outside the scopes. Memories whose text came back get their vector again.
   */
  async undo(id: string, options: { scopes?: readonly Scope[]; actor?: string } = {}): Promise<ChangeSetUndo> {
    const { store, now, embedder } = this.#context;
    return undoChangeSet(store, {
      id,
      scopes: this.#context.scopes(options?.scopes),
      actor: options.actor ?? this.#context.actor,
      now,
      ...(embedder && { embedder }),
    });
  }
}

/** An undone change set as every surface shows it. */
export function changeSetUndoJson(result: ChangeSetUndo): ChangeSetUndoJson {
  return { changeSet: result.changeSetId, undone: result.undone, vectors: result.vectors };
}

/** What the dream's state says: when it last ran, how, and how many ended sessions it counts toward its gate. */
export interface DreamStatus {
  lastRunAt: string | null;
  status: DreamState['status'];
  sessionsNoted: number;
}

/** `engram.dream`: the consolidation's bookkeeping a host touches (a session that ended, the state the viewer shows). */
export class EngramDream {
  readonly #store: MemoryStore;

  constructor(store: MemoryStore) {
    this.#store = store;
  }

  /** Counts a session that ended toward the dream's session gate (once per session); the service runs the dream when the gates open. */
  async queue(input: { sessionId: string }): Promise<void> {
    // The dream's modules load when a dream is asked about: every engram opened (a hook for each
    // prompt) holds this object and most never touch it.
    const { queueDream } = await import('./dream-state.js');
    await queueDream(this.#store, input);
  }

  /** The dream's state; undefined for a store without checkpoints (no dream runs there). */
  async status(): Promise<DreamStatus | undefined> {
    if (!this.#store.checkpoints) return undefined;
    const { readDreamState } = await import('./dream-state.js');
    const state = await readDreamState(this.#store);
    return { lastRunAt: state.lastRunAt, status: state.status, sessionsNoted: state.sessions.length };
  }
}
