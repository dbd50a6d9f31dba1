import { fullTextTokens, scoreTokenizedBm25, type Bm25Parameters, type Bm25Statistics } from './bm25-scoring.js';
import type { Memory } from '../memory/memory.js';

// The backend-neutral half of full-text search: which terms to search first and how candidates
// are ordered. A backend's index finds candidates in the asked scopes and counts documents; this
// decides the rest, so SQLite and Postgres rank the same candidates the same way.

/** A query term found in at least this share of all memories (and this many) counts as common. */
export const COMMON_TERM_SHARE = 0.05;
export const COMMON_TERM_MIN_DOCUMENTS = 1_000;
/** Fewest candidates an index is asked for before engram's own BM25 orders them (then the limit applies). */
export const RESCORE_POOL = 50;

/** The terms that can match anything: those holding at least one letter or digit. */
export function searchableTerms(terms: readonly string[]): string[] {
  return terms.filter((term) => /[\p{L}\p{N}]/u.test(term));
}

/** How many memories a term must be in (counting all memories) to count as common. */
export function commonTermThreshold(totalMemories: number): number {
  return Math.max(COMMON_TERM_MIN_DOCUMENTS, Math.ceil(totalMemories * COMMON_TERM_SHARE));
}

/** Whether picking selective terms can change anything: two terms or more in a store large enough to have common ones. */
export function worthProbingTerms(terms: readonly string[], totalMemories: number): boolean {
  return terms.length >= 2 && totalMemories >= commonTermThreshold(totalMemories);
}

/**
 * The terms worth searching first: those in less than 5% (and 1,000) of all memories, when some
 * are present. Common terms barely move BM25 but make an OR query score most of a large store.
 * `documents(term)` is a count of the memories holding the term, which may be capped at the
 * threshold. Whether the rare terms suffice is judged in the asked scopes by the caller.
 */
export function selectiveTerms(
  terms: readonly string[],
  totalMemories: number,
  documents: (term: string) => number,
): string[] {
  if (!worthProbingTerms(terms, totalMemories)) return [...terms];
  const threshold = commonTermThreshold(totalMemories);
  const rare = terms.filter((term) => {
    const count = documents(term);
    return count > 0 && count < threshold;
  });
  return rare.length > 0 ? rare : [...terms];
}

/** The text full-text search sees of a memory: name (dashes as spaces), description and content. */
export function searchableText(memory: Pick<Memory, 'name' | 'description' | 'content'>): string {
  return `${memory.name.replace(/-/g, ' ')}\n${memory.description}\n${memory.content}`;
}

// Each candidate is tokenized once per search: the store's BM25 and recall's signals after it read
// the same memory objects, so the tokens are kept beside each object for as long as it lives.
const TOKENS = new WeakMap<object, readonly string[]>();
// And across searches by text: a store hands out new objects on every query, but a long-lived
// process (the service, a wrapped client) meets the same memories again and again. Bounded; the
// token arrays are never changed, so sharing them is safe.
const TOKENS_BY_TEXT = new Map<string, readonly string[]>();
const TOKENS_BY_TEXT_LIMIT = 20_000;

/** The index tokens of a memory's searchable text (`fullTextTokens(searchableText(memory))`), computed once per memory object. */
export function memoryTokens(memory: Pick<Memory, 'name' | 'description' | 'content'>): readonly string[] {
  let tokens = TOKENS.get(memory);
  if (tokens === undefined) {
    const text = searchableText(memory);
    tokens = TOKENS_BY_TEXT.get(text);
    if (tokens === undefined) {
      if (TOKENS_BY_TEXT.size >= TOKENS_BY_TEXT_LIMIT) TOKENS_BY_TEXT.clear();
      tokens = Object.freeze(fullTextTokens(text));
      TOKENS_BY_TEXT.set(text, tokens);
    }
    TOKENS.set(memory, tokens);
  }
  return tokens;
}

/**
 * Orders an index's candidates by engram's BM25 and keeps the best `limit`. The sort is stable,
 * so ties keep the index's order.
 */
export function rankCandidatesByBm25(
  candidates: readonly Memory[],
  terms: readonly string[],
  statistics: Bm25Statistics,
  parameters: Bm25Parameters,
  limit: number,
): Array<{ memory: Memory; relevance: number }> {
  if (candidates.length === 0) return [];
  const scores = scoreTokenizedBm25(candidates.map(memoryTokens), terms, statistics, parameters);
  return candidates
    .map((memory, index) => ({ memory, relevance: scores[index]! }))
    .sort((a, b) => b.relevance - a.relevance)
    .slice(0, limit);
}

/**
 * BM25's inverse document frequency (Lucene's form, never negative): how much a term found in
 * `frequency` of `documentCount` memories says. Backends use it to weigh terms when an index must
 * pick a candidate pool before the exact BM25 order.
 */
export function inverseDocumentFrequency(documentCount: number, frequency: number): number {
  const bounded = Math.min(documentCount, Math.max(0, frequency));
  return Math.log(1 + (documentCount - bounded + 0.5) / (bounded + 0.5));
}
