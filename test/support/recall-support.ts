import { Engram, type RecallResult } from '../../src/engram.js';
import type { MemoryStore } from '../../src/contracts/memory-store.js';
import { DEFAULT_SETTINGS, type Settings } from '../../src/kernel/settings.js';
import type { Scope } from '../../src/memory/scope.js';

/** The default settings with these recall weights changed: how a recall test turns one signal off. */
export function withRecallSettings(recall: Partial<Settings['recall']>): Settings {
  return { ...DEFAULT_SETTINGS, recall: { ...DEFAULT_SETTINGS.recall, ...recall } };
}

export interface RecallInStoreOptions {
  scope: Scope;
  /** The clock the recall runs at (ISO). */
  at: string;
  settings?: Settings;
  topK?: number;
}

/**
 * Recalls through a real {@link Engram} over `store`, reading one scope, without recording access
 * and with no score floor, so a test sees the whole ranking a signal changes.
 */
export async function recallInStore(
  store: MemoryStore,
  query: string,
  options: RecallInStoreOptions,
): Promise<RecallResult['memories']> {
  const engram = new Engram({
    store,
    settings: options.settings ?? DEFAULT_SETTINGS,
    readScopes: [options.scope],
    now: () => new Date(options.at),
  });
  const topK = options.topK === undefined ? {} : { topK: options.topK };
  return (await engram.recall(query, { recordAccess: false, minScore: 0, ...topK })).memories;
}
