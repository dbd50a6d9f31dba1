import { EngramError } from '../kernel/errors.js';
import { fullTextToken } from './bm25-scoring.js';
import { memoryTokens, searchableText } from './full-text-search-plan.js';
import type { Memory } from '../memory/memory.js';
import { isStopToken, textWords } from './query-terms.js';
import { tokenNumbering, tokenNumbers, tokenSlots } from './token-numbers.js';
import { baseToken } from './word-forms.js';

/**
 * A second hop for questions whose answer is spread over several memories ("What pets does Nate
 * have?": one memory names the turtles, another the tank). The best first hits name things the
 * question does not ("turtles"); the words several of them share, and that are rare among all the
 * candidates, lend relevance to the other candidates that hold them (pseudo-relevance feedback,
 * learned from the store's own memories: no model, no thesaurus). Only candidates full-text already
 * found are re-ordered; no second search is made, so the hop costs no store query.
 */
export interface SecondHopOptions {
  /** Share of the best first-hop relevance a memory holding every hop word gains, 0..1 (0 = off). */
  weight: number;
  /** How many words the second hop follows. */
  terms: number;
  /** How many of the best first hits the words are taken from. */
  from: number;
}

/** What the second hop added to one hit (shown by `recall --explain`). */
export interface SecondHopSupport {
  /** Relevance added, in the units of the first hop's relevance. */
  added: number;
  /** The hop words this memory holds. */
  via: string[];
}

/** Largest number of words a second hop follows. */
export const MAX_SECOND_HOP_TERMS = 16;

const MIN_TOKEN_LENGTH = 3;
const NUMBER = /^\d+$/;
/** A word held by more than this share of the candidates is too common among them to point anywhere (names of the people talking, say). */
const MAX_HOLDER_SHARE = 0.25;

/**
 * Adds the second hop to full-text hits, best first (ties keep their order). The hop words are the
 * content words of the best `from` hits that the question does not hold, found in at least two of
 * them and in at most a quarter of all candidates, ranked by Σ (hit relevance ÷ best relevance) ×
 * log(1 + candidates ÷ candidates holding the word). Each candidate then gains weight × best
 * relevance × (Σ weight of the hop words it holds ÷ Σ weight of all hop words).
 */
export function addSecondHop<T extends { memory: Memory; relevance: number }>(
  hits: readonly T[],
  queryTerms: readonly string[],
  options: SecondHopOptions,
): Array<T & { secondHop?: SecondHopSupport }> {
  checkOptions(options);
  if (options.weight === 0 || hits.length < 2) return [...hits];
  const best = Math.max(0, ...hits.map((hit) => hit.relevance));
  if (best <= 0) return [...hits];
  const asked = new Set(queryTerms.map(tokenOf).filter((token): token is string => token !== undefined));
  const numbering = tokenNumbering();
  const words = hits.map((hit) => candidateWords(memoryTokens(hit.memory), numbering));
  const spelling = spellings(hits.slice(0, options.from));
  const chosen = hopWords(hits, words, asked, best, options).map((word) => ({ ...word, word: spelling(word.token) }));
  if (chosen.length === 0) return [...hits];
  const total = chosen.reduce((sum, word) => sum + word.weight, 0);
  let changed = false;
  const lifted = hits.map((hit, index) => {
    // A hop word is never one of the question's: no need to pass those over here.
    const held = chosen.filter((word) => words[index]!.set.has(word.token));
    if (held.length === 0) return { hit, index, relevance: hit.relevance, support: undefined };
    changed = true;
    const added = (options.weight * best * held.reduce((sum, word) => sum + word.weight, 0)) / total;
    return { hit, index, relevance: hit.relevance + added, support: { added, via: held.map((word) => word.word) } };
  });
  if (!changed) return [...hits];
  return lifted
    .sort((a, b) => b.relevance - a.relevance || a.index - b.index)
    .map(({ hit, relevance, support }) => (support ? { ...hit, relevance, secondHop: support } : { ...hit }));
}

/** The hop words, best first, each with its weight (its log share among the candidates). */
function hopWords(
  hits: ReadonlyArray<{ relevance: number }>,
  words: readonly CandidateWords[],
  asked: ReadonlySet<string>,
  best: number,
  options: Pick<SecondHopOptions, 'terms' | 'from'>,
): Array<{ token: string; weight: number }> {
  const from = Math.min(options.from, hits.length);
  // Only the words of the best hits can be hop words: only theirs are counted among the candidates,
  // each in its token's slot (the candidate it is, or −1 for a word of the question).
  const { marks, slots, pass } = tokenSlots();
  const scores: Array<{ token: string; score: number; hits: number; holders: number }> = [];
  for (let index = 0; index < from; index += 1) {
    const { list, numbers } = words[index]!;
    for (let position = 0; position < numbers.length; position += 1) {
      const number = numbers[position]!;
      if (marks[number] === pass) continue;
      marks[number] = pass;
      const token = list[position]!;
      slots[number] = asked.has(token) ? -1 : scores.push({ token, score: 0, hits: 0, holders: 0 }) - 1;
    }
  }
  // How many candidates hold each word: a word most candidates share says nothing about any of them.
  for (const { numbers } of words)
    for (const number of numbers) {
      if (marks[number] !== pass) continue;
      const slot = slots[number]!;
      if (slot >= 0) scores[slot]!.holders += 1;
    }
  for (let index = 0; index < from; index += 1) {
    const share = Math.max(0, hits[index]!.relevance) / best;
    for (const number of words[index]!.numbers) {
      const slot = slots[number]!;
      if (slot < 0) continue;
      const entry = scores[slot]!;
      entry.score += share * Math.log(1 + hits.length / entry.holders);
      entry.hits += 1;
    }
  }
  return scores
    .filter((entry) => entry.hits >= 2 && entry.holders <= hits.length * MAX_HOLDER_SHARE)
    .sort((a, b) => b.score - a.score || (a.token < b.token ? -1 : 1))
    .slice(0, options.terms)
    .map((entry) => ({ token: entry.token, weight: Math.log(1 + hits.length / entry.holders) }));
}

/** The distinct base tokens of a memory's index tokens that can be hop words, in text order, as a set and by number. */
interface CandidateWords {
  list: readonly string[];
  set: ReadonlySet<string>;
  /** The numbers of `list`'s tokens (see token-numbers.ts), in the numbering `numbering`. */
  numbers: Int32Array;
  numbering: number;
}

// What a memory's tokens offer the hop does not depend on the question: kept beside the (frozen,
// shared across searches) token array for as long as it lives.
const CANDIDATE_WORDS = new WeakMap<readonly string[], CandidateWords>();

/** The distinct base tokens of index tokens that can be hop words (long enough, no number, no stop word), first occurrence first. */
function candidateWords(forms: readonly string[], numbering: number): CandidateWords {
  let words = CANDIDATE_WORDS.get(forms);
  if (words === undefined) {
    const set = new Set<string>();
    for (const form of forms) {
      if (form.length < MIN_TOKEN_LENGTH || NUMBER.test(form) || isStopToken(form)) continue;
      set.add(baseToken(form));
    }
    const list = [...set];
    words = { list, set, numbers: tokenNumbers(list), numbering };
    if (Object.isFrozen(forms)) CANDIDATE_WORDS.set(forms, words);
  } else if (words.numbering !== numbering) {
    words.numbers = tokenNumbers(words.list);
    words.numbering = numbering;
  }
  return words;
}

/**
 * How a token is written in the best hits (for `--explain`): its first spelling there, else the
 * token itself. The hits are read in order, and only as far as a token asks.
 */
function spellings(hits: ReadonlyArray<{ memory: Memory }>): (token: string) => string {
  return (token) => {
    for (const hit of hits) {
      const word = memorySpellings(hit.memory).get(token);
      if (word !== undefined) return word;
    }
    return token;
  };
}

// A memory's spellings depend on its searchable text alone: they are kept beside its (frozen,
// shared by equal texts) token array, checked against the text, so the best hits' words are not
// split again for every question.
const SPELLINGS = new WeakMap<readonly string[], { text: string; first: ReadonlyMap<string, string> }>();

/** The first word of a memory's searchable text that makes each base token. */
function memorySpellings(memory: Memory): ReadonlyMap<string, string> {
  const text = searchableText(memory);
  const tokens = memoryTokens(memory);
  const found = SPELLINGS.get(tokens);
  if (found?.text === text) return found.first;
  const first = new Map<string, string>();
  for (const word of textWords(text)) {
    const wordToken = tokenOf(word);
    if (wordToken !== undefined && !first.has(wordToken)) first.set(wordToken, word);
  }
  if (Object.isFrozen(tokens)) SPELLINGS.set(tokens, { text, first });
  return first;
}

function tokenOf(word: string): string | undefined {
  const token = fullTextToken(word);
  return token === undefined ? undefined : baseToken(token);
}

function checkOptions(options: SecondHopOptions): void {
  const { weight, terms, from } = options;
  if (typeof weight !== 'number' || !Number.isFinite(weight) || weight < 0 || weight > 1) {
    throw new EngramError(
      'CONFIG_INVALID',
      `Invalid second-hop weight ${JSON.stringify(weight)}: a number from 0 to 1.`,
    );
  }
  if (!Number.isInteger(terms) || terms < 1 || terms > MAX_SECOND_HOP_TERMS) {
    throw new EngramError(
      'CONFIG_INVALID',
      `Invalid second-hop terms ${JSON.stringify(terms)}: a whole number from 1 to ${MAX_SECOND_HOP_TERMS}.`,
    );
  }
  if (!Number.isInteger(from) || from < 2)
    throw new EngramError('CONFIG_INVALID', `Invalid second-hop from ${JSON.stringify(from)}: a whole number from 2.`);
}
