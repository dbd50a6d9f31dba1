import type { MemoryStore } from '../../contracts/memory-store.js';
import type { Settings } from '../../kernel/settings.js';
import type { Memory } from '../../memory/memory.js';
import type { Scope } from '../../memory/scope.js';
import { escapeContextText } from '../../recall/memory-context-format.js';
import { rankByRelevance } from '../../recall/ranking.js';

/**
 * SessionStart without a prompt: which memories of the project (and global) to give in full beside
 * the index. There is no query, so every candidate is equally relevant and recall's own ranking
 * (SPEC §3: recency × importance, rankByRelevance) orders them; how the user wants work done comes
 * first (`feedback`, then `user`), then the rest. A memory whose whole text the index already shows
 * (its description is its content) is left out: the block adds what the index does not.
 */

/** Memories given in full at session start, at most. */
export const SESSION_START_MAX_MEMORIES = 10;
/** Candidates read from the store: the most important and the most recently changed. */
const CANDIDATES = 100;
/** Ways of working first: how the user wants things done, then who the user is. */
const FIRST_TYPES: readonly string[] = ['feedback', 'user'];

export async function sessionStartMemories(
  store: MemoryStore,
  scopes: readonly Scope[],
  settings: Readonly<Settings>,
  options: { staticPart: string; leaveOut: ReadonlySet<string>; now: string },
): Promise<Memory[]> {
  const active = { scopes, archived: 'exclude', invalid: 'exclude' } as const;
  const [important, recent] = await Promise.all([
    store.list({ ...active, order: 'importance-desc', limit: CANDIDATES }),
    store.list({ ...active, order: 'updated-desc', limit: CANDIDATES }),
  ]);
  const byId = new Map<string, Memory>();
  for (const memory of [...important, ...recent]) {
    if (options.leaveOut.has(memory.id) || shownInFull(memory, options.staticPart)) continue;
    byId.set(memory.id, memory);
  }
  const ranked = rankByRelevance(
    [...byId.values()].map((memory) => ({ memory, relevance: 1 })),
    { now: options.now, recencyBase: settings.recall.recencyBase, recencyFloor: settings.recall.recencyFloor },
  );
  const tier = (memory: Memory): number => {
    const index = FIRST_TYPES.indexOf(memory.type);
    return index === -1 ? FIRST_TYPES.length : index;
  };
  return ranked
    .map((entry, order) => ({ memory: entry.memory, order }))
    .sort((a, b) => tier(a.memory) - tier(b.memory) || a.order - b.order)
    .slice(0, SESSION_START_MAX_MEMORIES)
    .map((entry) => entry.memory);
}

/**
 * Whether an index line ends with the memory's whole content (as the index writes it: one line,
 * escaped, after its name). Not a plain substring: a short memory whose words sit inside another
 * memory's line is not shown by it.
 */
function shownInFull(memory: Memory, staticPart: string): boolean {
  const text = escapeContextText(memory.content.replace(/\s+/g, ' ').trim());
  if (text === '') return false;
  return staticPart.split('\n').some((line) => {
    const trimmed = line.trimEnd();
    if (!trimmed.endsWith(text)) return false;
    const before = trimmed.slice(0, trimmed.length - text.length);
    return before === '' || /[\s:—–-]$/.test(before);
  });
}
