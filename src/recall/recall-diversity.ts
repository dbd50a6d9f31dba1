import { EngramError } from '../kernel/errors.js';
import { memoryTokens } from './full-text-search-plan.js';
import type { Memory } from '../memory/memory.js';
import { baseToken } from './word-forms.js';
import { compareStatements, statementProfile, type StatementProfile } from '../remember/statement-relation.js';
import type { RankedMemory } from './ranking.js';

/**
 * Diversity: a hit that says nearly what a better hit already says (the same words, give or take a
 * few) takes a slot, and a share of the token budget, that a different memory could use. Such a hit
 * keeps its place only as far as it differs: its relevance is multiplied by 1 − similarity, where
 * similarity is the Jaccard overlap of the two memories' index tokens. Identical hits go last.
 *
 * Overlapping words make a near-copy only when the two say the same thing, by the comparison dedupe
 * and the dream share (`remember/statement-relation.ts`): "prefers tabs over spaces" / "prefers
 * spaces over tabs", a flipped negation, swapped numbers or another word for a value are not. Two
 * that speak of different things (another id, host or person) keep their own places. Of two that
 * say otherwise of one subject, both stay and the newer goes first (`newerBeforeOlder`); the older
 * is marked `disagrees`, naming the newer.
 */

/** What diversity did to one hit (shown by `recall --explain`). */
export interface DuplicateSupport {
  /** The better hit this one nearly repeats. */
  of: string;
  /** Jaccard overlap of their index tokens, 0..1. */
  similarity: number;
}

/** A newer hit with nearly the same words says otherwise of the same subject: this one may be superseded. */
export interface DisagreementSupport {
  /** The newer hit, ranked before this one. */
  newer: string;
  /** Jaccard overlap of their index tokens, 0..1. */
  similarity: number;
}

/** Fewest hits compared with each other (the head of the ranking, where slots are decided). */
export const MIN_DIVERSITY_WINDOW = 20;

/**
 * Demotes hits whose tokens overlap a better, kept hit's by at least `threshold` (Jaccard), then
 * re-sorts, best first (ties keep their order). Only the best `window` hits (at least 20) are
 * compared: slots are decided at the head. A hit that disagrees with a newer one is not demoted but
 * marked (see `newerBeforeOlder`). A threshold of 1 turns it off. Pure.
 */
export function demoteNearDuplicates<T extends { memory: Memory; relevance: number }>(
  hits: readonly T[],
  threshold: number,
  window = MIN_DIVERSITY_WINDOW,
): Array<T & { duplicate?: DuplicateSupport; disagrees?: DisagreementSupport }> {
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
  const profiles = new Map<number, StatementProfile>();
  const profile = (index: number): StatementProfile => {
    let found = profiles.get(index);
    if (!found) profiles.set(index, (found = memoryProfile(hits[index]!.memory)));
    return found;
  };
  const kept: number[] = [];
  const demoted = new Map<number, DuplicateSupport>();
  const disagreements: Array<{ a: number; b: number; similarity: number }> = [];
  for (const index of order) {
    let closest: { of: number; similarity: number } | undefined;
    for (const other of kept) {
      const similarity = jaccard(tokens.get(index)!, tokens.get(other)!, threshold);
      if (similarity < threshold || (closest && similarity <= closest.similarity)) continue;
      const [older, newer] = olderFirst(hits, other, index);
      const { relation } = compareStatements(profile(older), profile(newer), {
        method: 'overlap',
        similarity,
        threshold,
      });
      if (relation === 'same') closest = { of: other, similarity };
      else if (relation !== 'distinct') disagreements.push({ a: other, b: index, similarity });
    }
    if (closest) demoted.set(index, { of: hits[closest.of]!.memory.id, similarity: closest.similarity });
    else kept.push(index);
  }
  // The older of two that disagree is marked, by its newest contradicting hit. Written at the same
  // instant, neither is newer: both keep their places unmarked.
  const disagrees = new Map<number, DisagreementSupport>();
  for (const { a, b, similarity } of disagreements) {
    if (demoted.has(a) || demoted.has(b) || sameInstant(hits[a]!.memory, hits[b]!.memory)) continue;
    const [older, newer] = olderFirst(hits, a, b);
    const known = disagrees.get(older);
    if (known && !isLater(hits[newer]!.memory, memoryOf(hits, known.newer))) continue;
    disagrees.set(older, { newer: hits[newer]!.memory.id, similarity });
  }
  if (demoted.size === 0 && disagrees.size === 0) return [...hits];
  return hits
    .map((hit, index) => {
      const duplicate = demoted.get(index);
      return {
        hit,
        index,
        relevance: duplicate ? hit.relevance * (1 - duplicate.similarity) : hit.relevance,
        duplicate,
        disagrees: disagrees.get(index),
      };
    })
    .sort((a, b) => b.relevance - a.relevance || a.index - b.index)
    .map(({ hit, relevance, duplicate, disagrees }) =>
      duplicate ? { ...hit, relevance, duplicate } : disagrees ? { ...hit, disagrees } : { ...hit },
    );
}

/**
 * Of two ranked memories that disagree (the older marked by `demoteNearDuplicates`), the newer goes
 * first: it takes the better score of the two, and the older follows at most at that score ×
 * (1 − similarity / 2). Applied to final scores, so neither the older's importance nor its recent
 * hits put it back before what may have replaced it, and the newer is not cut at top_k or min_score
 * where the older would not have been. Sorted as `rankByRelevance` sorts.
 */
export function newerBeforeOlder(
  ranked: readonly RankedMemory[],
  hits: ReadonlyArray<{ memory: Memory; disagrees?: DisagreementSupport }>,
): RankedMemory[] {
  const marked = hits.filter((hit) => hit.disagrees !== undefined);
  if (marked.length === 0) return [...ranked];
  const entries = new Map(ranked.map((entry) => [entry.memory.id, { ...entry, parts: { ...entry.parts } }]));
  for (const hit of marked) {
    const older = entries.get(hit.memory.id);
    const newer = entries.get(hit.disagrees!.newer);
    if (!older || !newer) continue;
    const top = Math.max(older.parts.score, newer.parts.score);
    newer.parts.score = top;
    older.parts.score = Math.min(older.parts.score, top * (1 - hit.disagrees!.similarity / 2));
  }
  return [...entries.values()].sort((a, b) => b.parts.score - a.parts.score || (a.memory.id < b.memory.id ? -1 : 1));
}

/** The two hits, older first: by when their statements became true, then by when they were written; a tie keeps the order given. */
function olderFirst(hits: ReadonlyArray<{ memory: Memory }>, a: number, b: number): [number, number] {
  return isLater(hits[a]!.memory, hits[b]!.memory) ? [b, a] : [a, b];
}

function isLater(x: Memory, y: Memory): boolean {
  return x.validFrom > y.validFrom || (x.validFrom === y.validFrom && x.createdAt > y.createdAt);
}

function sameInstant(x: Memory, y: Memory): boolean {
  return x.validFrom === y.validFrom && x.createdAt === y.createdAt;
}

function memoryOf(hits: ReadonlyArray<{ memory: Memory }>, id: string): Memory {
  return hits.find((hit) => hit.memory.id === id)!.memory;
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

// Reading a statement's parts takes a fraction of a millisecond, and the same memories head query
// after query: its profile is kept beside its token array too, as long as that array lives.
// (Checked against the content: the array is shared by every memory whose searchable text is equal.)
const STATEMENT_PROFILES = new WeakMap<readonly string[], { content: string; profile: StatementProfile }>();

function memoryProfile(memory: Memory): StatementProfile {
  const tokens = memoryTokens(memory);
  const found = STATEMENT_PROFILES.get(tokens);
  if (found?.content === memory.content) return found.profile;
  const profile = statementProfile(memory.content);
  if (Object.isFrozen(tokens)) STATEMENT_PROFILES.set(tokens, { content: memory.content, profile });
  return profile;
}

/**
 * Jaccard overlap of two token sets; 0 early when their sizes alone, or the tokens of the smaller
 * one the larger lacks so far, rule out reaching `floor` (the overlap only the caller's cut reads).
 */
function jaccard(a: ReadonlySet<string>, b: ReadonlySet<string>, floor: number): number {
  if (a.size === 0 || b.size === 0) return 0;
  const [small, large] = a.size <= b.size ? [a, b] : [b, a];
  if (small.size / large.size < floor) return 0;
  const union = a.size + b.size;
  let shared = 0;
  let most = small.size;
  for (const token of small) {
    if (large.has(token)) shared += 1;
    // The overlap reachable now, computed as the overlap is: it can only fall from here.
    else if ((most -= 1) / (union - most) < floor) return 0;
  }
  return shared / (union - shared);
}
