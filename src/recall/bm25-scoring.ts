import { EngramError } from '../kernel/errors.js';
import { porterStem } from './porter-stemmer.js';
import { DEFAULT_SETTINGS } from '../kernel/settings.js';
import { baseToken, groupTokens } from './word-forms.js';

/**
 * Okapi BM25 over short texts, with the tokens SQLite FTS5's `porter unicode61 remove_diacritics 2`
 * tokenizer makes, so a full-text index can supply document frequencies and engram the rest.
 * FTS5's built-in bm25() fixes b at 0.75; memories are short and their length says little about
 * how much of them is relevant, so a lower b ranks better (measured on LoCoMo: R@10 .642 → .664).
 */
export interface Bm25Parameters {
  /** Term-frequency saturation. */
  k1: number;
  /** Length normalization, 0 (none) to 1 (full). */
  b: number;
  /**
   * Query-term coverage exponent, 0 (off) to 4; default setting `recall.fullTextCoverage` (0.5).
   * BM25 is multiplied by (IDF of the query terms a document holds ÷ IDF of all query terms) ^
   * coverage, so a memory that holds most of a question's distinct words outranks one that repeats
   * a single word of it. Higher values rank better at depth but spread relevance, so the relative
   * min_score cut keeps fewer memories at default settings (LoCoMo, see the bench): 0.5 balances both.
   */
  coverage?: number;
}

/** A store's full-text parameters: the ones given, checked (CONFIG_INVALID when out of range), else settings `recall.fullTextK1` and `recall.fullTextB`. */
export function storeFullTextParameters(given: Bm25Parameters | undefined): Bm25Parameters {
  if (given === undefined) return { k1: DEFAULT_SETTINGS.recall.fullTextK1, b: DEFAULT_SETTINGS.recall.fullTextB };
  if (!(given.k1 >= 0 && given.k1 <= 100 && given.b >= 0 && given.b <= 1)) {
    throw new EngramError(
      'CONFIG_INVALID',
      `Invalid full-text parameters ${JSON.stringify(given)}: k1 from 0 to 100, b from 0 to 1.`,
    );
  }
  return given;
}

/** Corpus statistics: how many documents there are and how many hold each token. */
export interface Bm25Statistics {
  documentCount: number;
  /** Keyed by token (see `fullTextTokens`). */
  documentFrequencies: ReadonlyMap<string, number>;
}

/** Largest coverage exponent (setting `recall.fullTextCoverage`). */
export const MAX_COVERAGE = 4;

const TOKEN = /[\p{L}\p{N}]+/gu;
const COMBINING_MARKS = /\p{M}+/gu;

const NON_ASCII = /[^\u0000-\u007f]/;
const STEM_CACHE_LIMIT = 50_000;
// Recall tokenizes every candidate on every query and words repeat a lot: stems are remembered.
const stems = new Map<string, string>();

/** The index tokens of a text: letters and digits, lowercased, diacritics removed, Porter-stemmed. */
export function fullTextTokens(text: string): string[] {
  const folded = NON_ASCII.test(text) ? text.normalize('NFD').replace(COMBINING_MARKS, '') : text;
  const words = folded.toLowerCase().match(TOKEN) ?? [];
  return words.map(cachedStem);
}

function cachedStem(word: string): string {
  let stem = stems.get(word);
  if (stem === undefined) {
    if (stems.size >= STEM_CACHE_LIMIT) stems.clear();
    stem = porterStem(word);
    stems.set(word, stem);
  }
  return stem;
}

// A question's terms are turned into tokens by the store, BM25 and the signals alike, question
// after question: each term's token is remembered (null: none).
const termTokens = new Map<string, string | null>();

/** The index token of one query term (a word), or undefined when it holds no letter or digit. */
export function fullTextToken(term: string): string | undefined {
  let token = termTokens.get(term);
  if (token === undefined) {
    const tokens = fullTextTokens(term);
    token = tokens.length === 1 ? tokens[0]! : tokens.length > 1 ? tokens.join(' ') : null;
    if (termTokens.size >= STEM_CACHE_LIMIT) termTokens.clear();
    termTokens.set(term, token);
  }
  return token ?? undefined;
}

/**
 * BM25 of each document for the query terms (each term counted once), with average length taken
 * over the documents given: they are the candidates of one search, and only their order matters.
 * IDF is Lucene's log(1 + (N − n + 0.5) / (n + 0.5)), which never goes negative for common terms.
 * The sum is weighted by the share of the query's IDF the document covers (see `coverage`). The
 * forms of an irregular word ("bought", "buy") count as one term, its document frequency the sum
 * of theirs.
 */
export function scoreBm25(
  documents: readonly string[],
  terms: readonly string[],
  statistics: Bm25Statistics,
  parameters: Bm25Parameters,
): number[] {
  return scoreTokenizedBm25(documents.map(fullTextTokens), terms, statistics, parameters);
}

/** `scoreBm25` over documents already split into their index tokens (`fullTextTokens`). */
export function scoreTokenizedBm25(
  tokenized: ReadonlyArray<readonly string[]>,
  terms: readonly string[],
  statistics: Bm25Statistics,
  parameters: Bm25Parameters,
): number[] {
  const queryTokens = [
    ...new Set(
      terms
        .map(fullTextToken)
        .filter((token): token is string => token !== undefined)
        .map(baseToken),
    ),
  ];
  const averageLength = tokenized.reduce((sum, tokens) => sum + tokens.length, 0) / Math.max(1, tokenized.length) || 1;
  const { k1, b } = parameters;
  const coverage = parameters.coverage ?? DEFAULT_SETTINGS.recall.fullTextCoverage;
  const weights: number[] = [];
  let queryIdf = 0;
  for (const token of queryTokens) {
    const forms = groupTokens(token).reduce((sum, form) => sum + (statistics.documentFrequencies.get(form) ?? 0), 0);
    const frequency = Math.min(statistics.documentCount, forms);
    const weight = Math.log(1 + (statistics.documentCount - frequency + 0.5) / (frequency + 0.5));
    weights.push(weight);
    queryIdf += weight;
  }
  // The query's tokens a document holds, by their place among its distinct tokens: reused for
  // every document (this loop runs for every candidate of every recall).
  const held: BaseTokenCount[] = [];
  const heldWeights: number[] = [];
  return tokenized.map((tokens) => {
    const lengthFactor = k1 * (1 - b + (b * tokens.length) / averageLength);
    const counts = baseTokenCounts(tokens);
    // The query's tokens the document holds (a question has far fewer tokens than a memory), summed
    // in the order the document first holds them, as the sums always were.
    let heldCount = 0;
    for (let index = 0; index < queryTokens.length; index += 1) {
      const counted = counts.get(queryTokens[index]!);
      if (counted === undefined) continue;
      // Insertion by first occurrence (distinct tokens never share one): a question holds a few tokens.
      let slot = heldCount;
      while (slot > 0 && held[slot - 1]!.first > counted.first) {
        held[slot] = held[slot - 1]!;
        heldWeights[slot] = heldWeights[slot - 1]!;
        slot -= 1;
      }
      held[slot] = counted;
      heldWeights[slot] = weights[index]!;
      heldCount += 1;
    }
    let score = 0;
    let coveredIdf = 0;
    for (let slot = 0; slot < heldCount; slot += 1) {
      const count = held[slot]!.count;
      const weight = heldWeights[slot]!;
      score += (weight * count * (k1 + 1)) / (count + lengthFactor);
      coveredIdf += weight;
    }
    return coverage > 0 && queryIdf > 0 ? score * (coveredIdf / queryIdf) ** coverage : score;
  });
}

// A document's base-token counts do not depend on the query: a frozen token array (the ones
// `memoryTokens` hands out, shared across searches) keeps its counts for as long as it lives.
const BASE_TOKEN_COUNTS = new WeakMap<readonly string[], ReadonlyMap<string, BaseTokenCount>>();

/** How often a document holds a base token, and the rank of its first occurrence among the document's distinct base tokens. */
interface BaseTokenCount {
  first: number;
  count: number;
}

/** How often a document holds each base token (irregular forms joined), in first-occurrence order. */
function baseTokenCounts(tokens: readonly string[]): ReadonlyMap<string, BaseTokenCount> {
  let counts = BASE_TOKEN_COUNTS.get(tokens);
  if (counts === undefined) {
    const counted = new Map<string, BaseTokenCount>();
    for (const form of tokens) {
      const token = baseToken(form);
      const entry = counted.get(token);
      if (entry === undefined) counted.set(token, { first: counted.size, count: 1 });
      else entry.count += 1;
    }
    counts = counted;
    if (Object.isFrozen(tokens)) BASE_TOKEN_COUNTS.set(tokens, counts);
  }
  return counts;
}
