import { EngramError } from '../kernel/errors.js';
import { memoryTokens } from './full-text-search-plan.js';
import type { Memory } from '../memory/memory.js';
import { baseToken } from './word-forms.js';

/**
 * Diversity: a hit that says nearly what a better hit already says (the same words, give or take a
 * few) takes a slot, and a share of the token budget, that a different memory could use. Such a hit
 * keeps its place only as far as it differs: its relevance is multiplied by 1 − similarity, where
 * similarity is the Jaccard overlap of the two memories' index tokens. Identical hits go last.
 */

/** What diversity did to one hit (shown by `recall --explain`). */
export interface DuplicateSupport {
  /** The better hit this one nearly repeats. */
  of: string;
  /** Jaccard overlap of their index tokens, 0..1. */
  similarity: number;
}

/** Fewest hits compared with each other (the head of the ranking, where slots are decided). */
export const MIN_DIVERSITY_WINDOW = 20;

/**
 * Demotes hits whose tokens overlap a better, kept hit's by at least `threshold` (Jaccard), then
 * re-sorts, best first (ties keep their order). Only the best `window` hits (at least 20) are
 * compared: slots are decided at the head. A threshold of 1 turns it off. Pure.
 */
export function demoteNearDuplicates<T extends { memory: Memory; relevance: number }>(
  hits: readonly T[],
  threshold: number,
  window = MIN_DIVERSITY_WINDOW,
): Array<T & { duplicate?: DuplicateSupport }> {
  if (typeof threshold !== 'number' || !Number.isFinite(threshold) || threshold < 0 || threshold > 1) {
    throw new EngramError(
      'CONFIG_INVALID',
      `Invalid duplicate similarity ${JSON.stringify(threshold)}: a number from 0 to 1 (1 = off).`,
    );
  }
  if (threshold >= 1 || hits.length < 2) return [...hits];
  // Best first, ties by id: which of two equal duplicates stays must not depend on the order they were written in.
  const order = hits
    .map((_, index) => index)
    .sort((a, b) => hits[b]!.relevance - hits[a]!.relevance || (hits[a]!.memory.id < hits[b]!.memory.id ? -1 : 1))
    .slice(0, Math.max(MIN_DIVERSITY_WINDOW, window));
  const tokens = new Map(order.map((index) => [index, baseTokenSet(memoryTokens(hits[index]!.memory))]));
  const kept: number[] = [];
  const demoted = new Map<number, DuplicateSupport>();
  for (const index of order) {
    let closest: { of: number; similarity: number } | undefined;
    for (const other of kept) {
      const similarity = jaccard(tokens.get(index)!, tokens.get(other)!, threshold);
      if (similarity >= threshold && (!closest || similarity > closest.similarity)) closest = { of: other, similarity };
    }
    if (closest) demoted.set(index, { of: hits[closest.of]!.memory.id, similarity: closest.similarity });
    else kept.push(index);
  }
  if (demoted.size === 0) return [...hits];
  return hits
    .map((hit, index) => {
      const duplicate = demoted.get(index);
      return {
        hit,
        index,
        relevance: duplicate ? hit.relevance * (1 - duplicate.similarity) : hit.relevance,
        duplicate,
      };
    })
    .sort((a, b) => b.relevance - a.relevance || a.index - b.index)
    .map(({ hit, relevance, duplicate }) => (duplicate ? { ...hit, relevance, duplicate } : { ...hit }));
}

// A memory's token set does not depend on the query: kept beside its (frozen, shared) token array.
const BASE_TOKEN_SETS = new WeakMap<readonly string[], ReadonlySet<string>>();

function baseTokenSet(tokens: readonly string[]): ReadonlySet<string> {
  let set = BASE_TOKEN_SETS.get(tokens);
  if (set === undefined) {
    set = new Set(tokens.map(baseToken));
    if (Object.isFrozen(tokens)) BASE_TOKEN_SETS.set(tokens, set);
  }
  return set;
}

/** Jaccard overlap of two token sets; 0 early when their sizes alone rule out reaching `floor`. */
function jaccard(a: ReadonlySet<string>, b: ReadonlySet<string>, floor: number): number {
  if (a.size === 0 || b.size === 0) return 0;
  const [small, large] = a.size <= b.size ? [a, b] : [b, a];
  if (small.size / large.size < floor) return 0;
  let shared = 0;
  for (const token of small) if (large.has(token)) shared += 1;
  return shared / (a.size + b.size - shared);
}
