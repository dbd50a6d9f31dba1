import type { Memory } from '../memory/memory.js';
import { compareLexically, lexicalProfile, type DuplicateVerdict } from '../remember/near-duplicate.js';

/** Two memories judged near-duplicates, with the verdict. */
export interface DuplicatePair {
  a: Memory;
  b: Memory;
  verdict: DuplicateVerdict & { duplicate: true };
}

/** A keeper and the memories that nearly duplicate it: what one merge of `engram dedupe` acts on. */
export interface DuplicateGroup {
  keeper: Memory;
  duplicates: Array<{ memory: Memory; verdict: DuplicateVerdict & { duplicate: true } }>;
}

/**
 * Every near-duplicate pair among memories by words (see near-duplicate.ts), without comparing all
 * pairs: a pair can reach Jaccard ≥ t only if the two share a word among the rarest
 * |A| − ⌈t·|A|⌉ + 1 words of each (prefix filtering), so only memories sharing such a word are compared.
 */
export function lexicalDuplicatePairs(memories: readonly Memory[], threshold: number): DuplicatePair[] {
  const profiles = memories.map((memory) => lexicalProfile(memory.content));
  const frequency = new Map<string, number>();
  for (const profile of profiles) for (const word of profile.words) frequency.set(word, (frequency.get(word) ?? 0) + 1);
  const byRarity = (x: string, y: string): number =>
    frequency.get(x)! - frequency.get(y)! || (x < y ? -1 : x > y ? 1 : 0);

  const pairs: DuplicatePair[] = [];
  const index = new Map<string, number[]>();
  const wordless = new Map<string, number[]>();
  profiles.forEach((profile, position) => {
    const compare = (other: number): void => {
      const verdict = compareLexically(profiles[other]!, profile, threshold);
      if (verdict.duplicate) pairs.push({ a: memories[other]!, b: memories[position]!, verdict });
    };
    if (profile.words.size === 0) {
      const same = wordless.get(profile.normalized) ?? [];
      same.forEach(compare);
      wordless.set(profile.normalized, [...same, position]);
      return;
    }
    const words = [...profile.words].sort(byRarity);
    const prefix = words.slice(0, Math.max(1, words.length - Math.ceil(threshold * words.length) + 1));
    const seen = new Set<number>();
    for (const word of prefix) {
      for (const other of index.get(word) ?? []) {
        if (seen.has(other)) continue;
        seen.add(other);
        compare(other);
      }
    }
    for (const word of prefix) {
      const postings = index.get(word);
      if (postings) postings.push(position);
      else index.set(word, [position]);
    }
  });
  return pairs;
}

/**
 * Groups pairs around keepers without chaining: memories are taken in keeper `order` (default oldest
 * first, more hits first on a tie), each that is not yet in a group keeps its place and takes in the later memories it directly
 * duplicates. So every member of a group is a near-duplicate of its keeper, never only of a member.
 */
export function groupDuplicatePairs(
  memories: readonly Memory[],
  pairs: readonly DuplicatePair[],
  order: (a: Memory, b: Memory) => number = keeperOrder,
): DuplicateGroup[] {
  const neighbours = new Map<string, Array<{ memory: Memory; verdict: DuplicatePair['verdict'] }>>();
  const link = (from: Memory, to: Memory, verdict: DuplicatePair['verdict']): void => {
    const list = neighbours.get(from.id);
    if (list) list.push({ memory: to, verdict });
    else neighbours.set(from.id, [{ memory: to, verdict }]);
  };
  for (const pair of pairs) {
    link(pair.a, pair.b, pair.verdict);
    link(pair.b, pair.a, pair.verdict);
  }
  const sorted = [...memories].sort(order);
  const rank = new Map(sorted.map((memory, position) => [memory.id, position]));
  const taken = new Set<string>();
  const groups: DuplicateGroup[] = [];
  for (const keeper of sorted) {
    if (taken.has(keeper.id)) continue;
    const duplicates = (neighbours.get(keeper.id) ?? [])
      .filter(({ memory }) => !taken.has(memory.id) && rank.get(memory.id)! > rank.get(keeper.id)!)
      .sort((x, y) => rank.get(x.memory.id)! - rank.get(y.memory.id)!);
    const unique = duplicates.filter(
      ({ memory }, position) => duplicates.findIndex((other) => other.memory.id === memory.id) === position,
    );
    if (unique.length === 0) continue;
    taken.add(keeper.id);
    for (const { memory } of unique) taken.add(memory.id);
    groups.push({ keeper, duplicates: unique });
  }
  return groups;
}

/** Oldest first, then most recalled, then by id: the memory a group keeps. */
export function keeperOrder(a: Memory, b: Memory): number {
  if (a.createdAt !== b.createdAt) return a.createdAt < b.createdAt ? -1 : 1;
  if (a.hitCount !== b.hitCount) return b.hitCount - a.hitCount;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}
