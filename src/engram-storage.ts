import { EngramError } from './kernel/errors.js';
import { requireRole, type MemoryStore, type StoreInfo } from './contracts/memory-store.js';
import type { VectorCounts } from './contracts/memory-store-vectors.js';

/**
 * What the surfaces show about the store under an Engram (`engram status`, `stats`, `reindex`, the
 * viewer's usage and info): which backend and file, whether it keeps vectors and how many, and small
 * notes one process leaves for another (the wrappers' model choice that `engram status` reads). A
 * surface reads these here instead of reaching for `engram.store`.
 */
export class EngramStorage {
  readonly #store: MemoryStore;

  constructor(store: MemoryStore) {
    this.#store = store;
  }

  /** The backend, where it lives (a file path, `:memory:`, a redacted URL) and its schema version. */
  info(): StoreInfo {
    return this.#store.info();
  }

  /** Whether the store keeps vectors (vector recall and `engram reindex` need them). */
  get keepsVectors(): boolean {
    return this.#store.vectors !== undefined;
  }

  /** Whether the store keeps checkpoints (extraction's queue of turns, change sets, the dream's state, notes). */
  get keepsCheckpoints(): boolean {
    return this.#store.checkpoints !== undefined;
  }

  /** How many memories have a vector and how many wait for one; STORE_UNSUPPORTED for a store without vectors. */
  async vectorCounts(): Promise<VectorCounts> {
    return requireRole(this.#store, 'vectors', 'vector counts').counts();
  }

  /** A note another process left under this name; undefined when there is none or the store keeps no checkpoints. */
  async readNote(name: string): Promise<string | undefined> {
    return this.#store.checkpoints?.get(noteName(name));
  }

  /** Leaves a note under this name for other processes; false when the store keeps no checkpoints. */
  async writeNote(name: string, value: string): Promise<boolean> {
    const checkpoints = this.#store.checkpoints;
    if (!checkpoints) return false;
    return checkpoints.set(noteName(name), value);
  }
}

// Notes share the checkpoint table with extraction's cursors and the dream's state; a name with a
// colon (the caller's namespace) keeps them apart from those.
function noteName(name: string): string {
  if (typeof name !== 'string' || !/^[a-z][a-z0-9-]*:[a-z0-9-]+$/.test(name))
    throw new EngramError(
      'INVALID_INPUT',
      `Invalid note name ${JSON.stringify(String(name).slice(0, 80))}: use "namespace:name".`,
    );
  return name;
}
