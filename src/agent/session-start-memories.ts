import type { Engram } from '../engram.js';
import { EngramError } from '../kernel/errors.js';
import type { Memory } from '../memory/memory.js';
import { assertScope, type Scope } from '../memory/scope.js';
import { escapeContextText } from '../recall/memory-context-format.js';
import { rankByRelevance } from '../recall/ranking.js';

/**
 * Session start without a prompt (a coding agent's SessionStart hook, a chat's first turn): which memories of the project (and global) to give in full beside
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

/** What `sessionStartMemories` reads through: the parts of the Engram facade it needs. */
export type SessionStartEngram = Pick<Engram, 'store' | 'settings' | 'readScopes'>;

export interface SessionStartOptions {
  /** The index already given (the static part of the context): a memory it shows whole is left out. */
  staticPart?: string;
  /** Ids already in the conversation's context (its surfaced set), left out. */
  leaveOut?: Iterable<string>;
  /** Default the engram's read scopes. */
  scopes?: readonly Scope[];
  /** The time ages are measured at (ISO), default now. */
  now?: string;
}

/**
 * The memories to give in full when a conversation starts, best first (at most
 * SESSION_START_MAX_MEMORIES): ways of working first, then by recency × importance.
 */
export async function sessionStartMemories(
  engram: SessionStartEngram,
  options: SessionStartOptions = {},
): Promise<Memory[]> {
  if (options === null || typeof options !== 'object')
    throw new EngramError('INVALID_INPUT', 'The options of sessionStartMemories are an object.');
  const { store, settings } = engram;
  const named = options.scopes ?? engram.readScopes;
  if (!Array.isArray(named) || named.length === 0)
    throw new EngramError('INVALID_SCOPE', 'Name at least one scope to read.');
  const scopes = named.map((scope) => assertScope(scope));
  const staticPart = options.staticPart ?? '';
  const leaveOut = new Set(options.leaveOut ?? []);
  const now = options.now ?? new Date().toISOString();
  if (typeof staticPart !== 'string' || typeof now !== 'string' || !Number.isFinite(Date.parse(now)))
    throw new EngramError('INVALID_INPUT', 'staticPart is text and now an ISO date-time.');
  const active = { scopes, archived: 'exclude', invalid: 'exclude' } as const;
  const [important, recent] = await Promise.all([
    store.list({ ...active, order: 'importance-desc', limit: CANDIDATES }),
    store.list({ ...active, order: 'updated-desc', limit: CANDIDATES }),
  ]);
  const byId = new Map<string, Memory>();
  for (const memory of [...important, ...recent]) {
    if (leaveOut.has(memory.id) || shownInFull(memory, staticPart)) continue;
    byId.set(memory.id, memory);
  }
  const ranked = rankByRelevance(
    [...byId.values()].map((memory) => ({ memory, relevance: 1 })),
    { now, recencyBase: settings.recall.recencyBase, recencyFloor: settings.recall.recencyFloor },
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
