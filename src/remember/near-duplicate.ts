import { deriveDescription, type Memory, type MemoryPatch, type MemoryType } from '../memory/memory.js';
import { porterStem } from '../recall/porter-stemmer.js';

/**
 * Near-duplicate detection for dedupe on write and `engram dedupe` (SPEC §3).
 *
 * Lexical similarity (no embedder) is the Jaccard index of the two texts' content-word sets:
 * words lowercased, contractions expanded ("don't" → "do not"), Porter-stemmed, function words
 * dropped. Words that flip a statement (not, non-, never, before/after, on/off, more/less, all/none, or)
 * are content words, never stop words.
 *
 * A merge rewrites a memory in place, so the rules lean towards keeping two memories:
 * - negation differs ("uses tabs" / "does not use tabs"), or bears on other words ("users without a
 *   license cannot export" / "users with a license can export") → not a duplicate;
 * - the tokens holding digits differ, or come in another order ("PostgreSQL 15" / "PostgreSQL 16",
 *   "3 nodes and 5 workers" / "5 nodes and 3 workers") → not a duplicate;
 * - two of the words both texts share trade places around a third ("Alice reports to Bob" / "Bob
 *   reports to Alice", "tabs over spaces" / "spaces over tabs") → not a duplicate: who does what
 *   to whom changed (a phrase moved as a whole is still the same statement);
 * - lexically, each text has a word the other lacks ("prefers tabs" / "prefers spaces") → a
 *   substitution: a changed value or a paraphrase, which words alone cannot tell apart, so it
 *   never merges lexically; only restatements that add or drop a few words (or none) do;
 * - the Jaccard index must reach the threshold (`dedupe.lexicalThreshold`).
 * With embeddings, cosine ≥ `dedupe.cosineThreshold` replaces the last two rules; the first three
 * still apply, since embeddings are known to place a statement and its negation (or its mirror
 * image) close together. With embeddings the order rule applies only when one text's words all
 * appear in the other: a paraphrase in other words may well reorder them.
 */

/** The parts of a text that dedupe compares. */
export interface LexicalProfile {
  /** Stemmed content words. */
  words: ReadonlySet<string>;
  /** Whether the text holds a negation (not, no, never, without, n't…). */
  negated: boolean;
  /**
   * The content word each negation bears on (the next one after it; '' at the end), sorted: "does not
   * use tabs" → ["use"]. Two texts negate the same things only when these are equal, so "users without
   * a license cannot export" and "users with a license can export" differ though both hold a negation.
   */
  negations: readonly string[];
  /** Stemmed content words in the order they first appear (for the word-order rule). */
  sequence: readonly string[];
  /** The tokens that hold a digit (versions, counts, times), sorted. */
  values: readonly string[];
  /** The same tokens in the order they first appear: "3 nodes and 5 workers" is not "5 nodes and 3 workers". */
  valueSequence: readonly string[];
  /** The text lowercased with runs of non-word characters collapsed: compared when there are no content words. */
  normalized: string;
}

export type DuplicateMethod = 'lexical' | 'cosine';

/** Why two texts are or are not near-duplicates, with the similarity that was measured. */
export type DuplicateVerdict =
  | { duplicate: true; similarity: number; method: DuplicateMethod }
  | {
      duplicate: false;
      similarity: number;
      method: DuplicateMethod;
      reason: 'below-threshold' | 'negation-differs' | 'values-differ' | 'order-differs' | 'words-substituted';
    };

// Function words only: none of these can turn a statement into a different one when dropped.
const FUNCTION_WORDS = new Set(
  `a an the this that these those there here is are was were be been being am do does did doing done have has had having
  i me my mine myself we us our ours ourselves you your yours yourself he him his she her hers it its itself they them
  their theirs themselves of in at for to with by from as into onto about which who whom whose what when where how
  than then so and also just very really please can could may might shall should will would`.split(/\s+/),
);

const NEGATIONS = new Set(
  `not non no never nor none nothing nobody nowhere neither without cannot dont doesnt didnt isnt arent wasnt werent
  wont cant couldnt shouldnt wouldnt hasnt havent hadnt mustnt`.split(/\s+/),
);

/** Reads the words, negation and values of a text once, so candidates can be compared cheaply. */
export function lexicalProfile(text: string): LexicalProfile {
  const expanded = text
    .normalize('NFKC')
    .replace(/[’‘`]/g, "'")
    .replace(/\b(?:can't|cannot)\b/gi, 'can not')
    .replace(/\bwon't\b/gi, 'will not')
    .replace(/n't\b/gi, ' not')
    .replace(/'(?:s|re|ve|ll|d|m)\b/gi, '');
  // A part of a name ("api-us.example.com", "redis-a") or an acronym ("the US cluster") is never a
  // function word: "us" and "a" there tell two things apart.
  const tokens: string[] = [];
  const named = new Set<number>();
  for (const match of expanded.matchAll(/[\p{L}\p{N}]+(?:[-._/][\p{L}\p{N}]+)*/gu)) {
    const parts = match[0].match(/[\p{L}\p{N}]+/gu)!;
    const sentenceStart = startsSentence(expanded, match.index);
    for (const part of parts) {
      if (parts.length > 1 || isWrittenAsName(part, sentenceStart)) named.add(tokens.length);
      tokens.push(part.toLowerCase());
    }
  }
  const words = new Set<string>();
  const sequence: string[] = [];
  const values = new Set<string>();
  const negations: string[] = [];
  let pending = 0;
  for (const [index, token] of tokens.entries()) {
    if (NEGATIONS.has(token)) {
      pending += 1;
      continue;
    }
    if (/\p{N}/u.test(token)) values.add(token);
    if (FUNCTION_WORDS.has(token) && !named.has(index)) continue;
    const stem = porterStem(token);
    for (; pending > 0; pending -= 1) negations.push(stem);
    if (!words.has(stem)) sequence.push(stem);
    words.add(stem);
  }
  for (; pending > 0; pending -= 1) negations.push('');
  return {
    words,
    sequence,
    negated: negations.length > 0,
    negations: negations.sort(),
    values: [...values].sort(),
    valueSequence: [...values],
    normalized: tokens.join(' '),
  };
}

/**
 * A word written as a name where a function word would not be: "US", "IT", a capital past a
 * sentence's start ("suite A", "May 10", "plan B"). Longer words in capitals ("DOES NOT") are emphasis;
 * "I" is a pronoun.
 */
export function isWrittenAsName(written: string, atSentenceStart: boolean): boolean {
  if (written === 'I' || !/^\p{Lu}/u.test(written)) return false;
  if (written.length === 2 && written === written.toUpperCase()) return true;
  return !atSentenceStart && (written.length === 1 || written.slice(1) === written.slice(1).toLowerCase());
}

/** Whether the text at `index` opens a sentence (the text's start, or after . ! ? : or a line break). */
export function startsSentence(text: string, index: number): boolean {
  return /(?:^|[.!?:\n])[\s"'(\[*#>-]*$/.test(text.slice(Math.max(0, index - 12), index)) || index === 0;
}

/** The Jaccard index of two profiles' content words, 0..1 (1 for two texts of function words only that read the same). */
export function lexicalSimilarity(a: LexicalProfile, b: LexicalProfile): number {
  if (a.words.size === 0 || b.words.size === 0)
    return a.words.size === b.words.size && a.normalized === b.normalized ? 1 : 0;
  let shared = 0;
  for (const word of a.words) if (b.words.has(word)) shared += 1;
  return shared / (a.words.size + b.words.size - shared);
}

/** Decides whether two texts are near-duplicates by their words alone (see the rules at the top of this file). */
export function compareLexically(a: LexicalProfile, b: LexicalProfile, threshold: number): DuplicateVerdict {
  const similarity = lexicalSimilarity(a, b);
  const contradiction = contradictionReason(a, b);
  if (contradiction) return { duplicate: false, similarity, method: 'lexical', reason: contradiction };
  if (!sameOrder(a, b)) return { duplicate: false, similarity, method: 'lexical', reason: 'order-differs' };
  if (hasWordOutside(a.words, b.words) && hasWordOutside(b.words, a.words)) {
    return { duplicate: false, similarity, method: 'lexical', reason: 'words-substituted' };
  }
  if (similarity < threshold) return { duplicate: false, similarity, method: 'lexical', reason: 'below-threshold' };
  return { duplicate: true, similarity, method: 'lexical' };
}

/** Decides whether two texts are near-duplicates from their embeddings' cosine similarity, still refusing contradictions. */
export function compareByCosine(
  cosine: number,
  a: LexicalProfile,
  b: LexicalProfile,
  threshold: number,
): DuplicateVerdict {
  const contradiction = contradictionReason(a, b);
  if (contradiction) return { duplicate: false, similarity: cosine, method: 'cosine', reason: contradiction };
  if ((wordsContained(a, b) || wordsContained(b, a)) && !sameOrder(a, b))
    return { duplicate: false, similarity: cosine, method: 'cosine', reason: 'order-differs' };
  if (!(cosine >= threshold))
    return { duplicate: false, similarity: cosine, method: 'cosine', reason: 'below-threshold' };
  return { duplicate: true, similarity: cosine, method: 'cosine' };
}

/** Whether every content word of `inner` is also in `outer`: the text says nothing the other does not. */
export function wordsContained(inner: LexicalProfile, outer: LexicalProfile): boolean {
  return !hasWordOutside(inner.words, outer.words);
}

/** What a new statement brings to the near-duplicate it is merged into. */
export interface IncomingStatement {
  content: string;
  type?: MemoryType;
  name?: string;
  description?: string;
  importance?: number;
}

/**
 * The update that merges a new statement into an existing memory:
 * - content: the new text, the latest statement of the fact, unless its words are a strict subset
 *   of the old text's (it says less: the old, fuller text is kept);
 * - importance: the larger of the two, because restating a fact is no reason to demote it (a
 *   default 0.5 from a quick "remember" must not lower a memory the user marked 0.9);
 * - type, name and description: the new ones when given; a description that was derived from
 *   the old content is derived again from the new;
 * - source stays: it says where the fact came from first (history records who restated it).
 */
export function mergePatch(existing: Memory, incoming: IncomingStatement): MemoryPatch {
  const oldProfile = lexicalProfile(existing.content);
  const newProfile = lexicalProfile(incoming.content);
  const saysLess = wordsContained(newProfile, oldProfile) && newProfile.words.size < oldProfile.words.size;
  const content = saysLess ? existing.content : incoming.content;
  const patch: MemoryPatch = {};
  if (content !== existing.content) patch.content = content;
  if (incoming.importance !== undefined && incoming.importance > existing.importance)
    patch.importance = incoming.importance;
  if (incoming.type !== undefined && incoming.type !== existing.type) patch.type = incoming.type;
  if (incoming.name !== undefined && incoming.name !== existing.name) patch.name = incoming.name;
  if (incoming.description !== undefined) {
    if (incoming.description !== existing.description) patch.description = incoming.description;
  } else if (patch.content !== undefined && existing.description === deriveDescription(existing.content)) {
    const derived = deriveDescription(patch.content);
    if (derived !== existing.description) patch.description = derived;
  }
  return patch;
}

/**
 * What keeps two texts from ever being merged, whatever their similarity: a negation, a changed value or two
 * words trading places (the rules every merge shares: dedupe on write, `engram dedupe`, consolidation).
 */
export function mergeGuardReason(
  a: LexicalProfile,
  b: LexicalProfile,
): 'negation-differs' | 'values-differ' | 'order-differs' | undefined {
  return contradictionReason(a, b) ?? (sameOrder(a, b) ? undefined : 'order-differs');
}

function contradictionReason(a: LexicalProfile, b: LexicalProfile): 'negation-differs' | 'values-differ' | undefined {
  if (!sameList(a.negations, b.negations)) return 'negation-differs';
  // In order: swapped numbers ("3 nodes and 5 workers" / "5 nodes and 3 workers") are a changed value too.
  if (!sameList(a.valueSequence, b.valueSequence)) return 'values-differ';
  return undefined;
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((value, index) => value === b[index]);
}

/**
 * Whether the words two texts share keep their roles: false when two of them trade places around a
 * third that stays between them ("Alice reports to Bob" / "Bob reports to Alice"). Moving a whole
 * phrase ("Staging runs on Kubernetes in eu-west-1" / "In eu-west-1, staging runs on Kubernetes")
 * keeps them. Only the first occurrence of a word counts.
 */
export function sameOrder(a: LexicalProfile, b: LexicalProfile): boolean {
  const shared = a.sequence.filter((word) => b.words.has(word));
  const positionInB = new Map(b.sequence.filter((word) => a.words.has(word)).map((word, index) => [word, index]));
  for (let pivot = 1; pivot < shared.length - 1; pivot += 1) {
    const pivotInB = positionInB.get(shared[pivot]!)!;
    // A word before the pivot in a but after it in b, and one after it in a but before it in b: a swap.
    const crossesForward = shared.slice(0, pivot).some((word) => positionInB.get(word)! > pivotInB);
    if (crossesForward && shared.slice(pivot + 1).some((word) => positionInB.get(word)! < pivotInB)) return false;
  }
  return true;
}

function hasWordOutside(words: ReadonlySet<string>, other: ReadonlySet<string>): boolean {
  for (const word of words) if (!other.has(word)) return true;
  return false;
}
