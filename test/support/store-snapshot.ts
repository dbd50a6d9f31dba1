import type { MemoryStore } from '../../src/contracts/memory-store.js';
import type { Memory } from '../../src/memory/memory.js';

/** Every memory of `scopes` in every state (archived and invalid included), oldest first. */
export function everyMemory(store: MemoryStore, scopes: readonly string[]): Promise<Memory[]> {
  return store.list({ scopes, archived: 'include', invalid: 'include', order: 'created-asc' });
}

/** Everything a user could observe in `scopes` of the store, as JSON to compare: every memory in every state, every history entry, the stats. */
export async function storeSnapshot(store: MemoryStore, scopes: readonly string[]): Promise<string> {
  const memories = await everyMemory(store, scopes);
  const histories = await Promise.all(memories.map((memory) => store.history(memory.id)));
  return JSON.stringify({ memories, histories, stats: await store.stats() });
}
