import { SqliteMemoryStore } from '../../src/adapters/sqlite/sqlite-memory-store.js';
import type { MemoryStore } from '../../src/contracts/memory-store.js';
import { undoChangeSet } from '../../src/consolidation/change-sets.js';
import type { Memory } from '../../src/memory/memory.js';
import { openTemporaryStore } from '../support/temporary-store.js';
import { buildDreamCorpus, CORPUS_NOW, CORPUS_SCOPE, type DreamCorpus } from '../fixtures/dream-corpus.js';

/** A SQLite store in a temp folder, seeded with the dream corpus, on a clock the test moves. */
export interface SeededStore {
  store: SqliteMemoryStore;
  path: string;
  corpus: DreamCorpus;
  clock: { now: number };
  close(): Promise<void>;
}

export async function openSeededStore(): Promise<SeededStore> {
  const { store, path, clock, close } = await openTemporaryStore(Date.parse(CORPUS_NOW), { prefix: 'engram-dream-' });
  const corpus = buildDreamCorpus();
  await store.importMany(corpus.memories, { onExisting: 'fail' }, { actor: 'seed' });
  return { store, path, corpus, clock, close };
}

/** Every memory of the store, every state, by id. */
export async function snapshot(store: MemoryStore): Promise<Map<string, Memory>> {
  const scopes = Object.keys((await store.stats()).byScope);
  const memories = await store.list({ scopes, archived: 'include', invalid: 'include' });
  return new Map(memories.map((memory) => [memory.id, memory]));
}

/** A memory without the fields a change always moves (the version stamp) or recall moves (access bookkeeping). */
export function contentFields(memory: Memory): Omit<Memory, 'updatedAt'> {
  const { updatedAt: _updatedAt, ...rest } = memory;
  return rest;
}

/**
 * Undoes change set `id` in the seeded store as the actor `test`, in the corpus scope, at the seeded clock's
 * time; `options` changes any of these or adds an embedder.
 */
export function undoIn(
  seeded: SeededStore,
  id: string,
  options: Partial<Omit<Parameters<typeof undoChangeSet>[1], 'id'>> = {},
): ReturnType<typeof undoChangeSet> {
  return undoChangeSet(seeded.store, {
    id,
    scopes: [CORPUS_SCOPE],
    actor: 'test',
    now: () => new Date(seeded.clock.now),
    ...options,
  });
}
