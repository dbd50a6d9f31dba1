import { fullTextToken, fullTextTokens } from '../src/recall/bm25-scoring.js';
import { isStopToken, queryTerms } from '../src/recall/query-terms.js';
import { baseToken } from '../src/recall/word-forms.js';
import type { EvalDataset } from '../src/eval/eval-dataset.js';
import { mean } from '../src/eval/retrieval-metrics.js';
import { round } from './statistics.js';

/**
 * Where the evidence recall misses stands, read by words alone: each piece of evidence grouped by
 * how many of the question's rare words it holds (a word of the question that is not a stop word
 * and is in at most a fifth of the scope's memories, so a speaker's name on every turn does not
 * count), with the share of each group in the top k, and how many missed pieces have at least k
 * memories of their scope holding as much of the question (the IDF of the rare words held) as they
 * do: those no ranking by the question's words can lift into the top k. The two "if" figures are
 * recall at k were every piece holding two (one) or more rare words in the top k: the most any
 * reordering by words can gain. What lies beyond is evidence that says it in other words.
 */
export interface LexicalReach {
  k: number;
  /** Evidence pieces (question, relevant memory) counted. */
  pieces: number;
  groups: Array<{
    rareWordsShared: '0' | '1' | '2+';
    /** Share of all pieces in this group. */
    share: number;
    /** Share of the group's pieces in the top k. */
    inTopK: number;
    missed: number;
    /** Share of the missed pieces with at least k memories holding as much of the question. */
    outmatched: number;
  }>;
  /** Recall at k (mean over questions) as ranked. */
  recall: number;
  /** Recall at k were every piece sharing two or more rare words in the top k. */
  ifTwoOrMoreIn: number;
  /** Recall at k were every piece sharing one or more rare words in the top k. */
  ifOneOrMoreIn: number;
}

/** A memory's share of a scope above which its words are not rare (speakers' names, the topic). */
const COMMON_SHARE = 1 / 5;

/** The reach of words on one set, from each question's ranking (ids, best first). */
export function lexicalReach(
  dataset: EvalDataset,
  rankings: ReadonlyMap<string, readonly string[]>,
  k: number,
): LexicalReach {
  const scopes = new Map<string, Array<{ id: string; tokens: ReadonlySet<string> }>>();
  for (const memory of dataset.memories) {
    // An evaluation's memories carry the ids its questions name; one without cannot be evidence.
    if (memory.id === undefined) continue;
    const list = scopes.get(memory.scope) ?? [];
    list.push({ id: memory.id, tokens: new Set(fullTextTokens(memory.content).map(baseToken)) });
    scopes.set(memory.scope, list);
  }
  const frequencies = new Map<string, Map<string, number>>();
  const frequenciesOf = (scope: string): Map<string, number> => {
    let counts = frequencies.get(scope);
    if (counts === undefined) {
      counts = new Map();
      for (const memory of scopes.get(scope) ?? [])
        for (const token of memory.tokens) counts.set(token, (counts.get(token) ?? 0) + 1);
      frequencies.set(scope, counts);
    }
    return counts;
  };
  const pieces: Array<{ query: string; of: number; shared: number; inTopK: boolean; outmatched: boolean }> = [];
  for (const query of dataset.queries) {
    const ranking = rankings.get(query.id);
    if (ranking === undefined) continue;
    const memories = scopes.get(query.scope) ?? [];
    const counts = frequenciesOf(query.scope);
    const total = memories.length;
    const rare = [
      ...new Set(
        queryTerms(query.query)
          .map(fullTextToken)
          .filter((token): token is string => token !== undefined)
          .map(baseToken),
      ),
    ].filter((token) => !isStopToken(token) && (counts.get(token) ?? 0) <= total * COMMON_SHARE);
    const idf = (token: string): number => {
      const frequency = counts.get(token) ?? 0;
      return Math.log(1 + (total - frequency + 0.5) / (frequency + 0.5));
    };
    const held = (tokens: ReadonlySet<string>): number =>
      rare.reduce((sum, token) => sum + (tokens.has(token) ? idf(token) : 0), 0);
    const top = new Set(ranking.slice(0, k));
    const relevant = new Set(query.relevant);
    for (const id of relevant) {
      const memory = memories.find((candidate) => candidate.id === id);
      if (memory === undefined) continue;
      const own = held(memory.tokens);
      const inTopK = top.has(id);
      const outmatched =
        !inTopK && memories.filter((other) => other.id !== id && held(other.tokens) >= own - 1e-9).length >= k;
      const shared = rare.filter((token) => memory.tokens.has(token)).length;
      pieces.push({ query: query.id, of: relevant.size, shared, inTopK, outmatched });
    }
  }
  const recallIf = (counted: (piece: (typeof pieces)[number]) => boolean): number => {
    const perQuery = new Map<string, number>();
    for (const piece of pieces)
      if (counted(piece)) perQuery.set(piece.query, (perQuery.get(piece.query) ?? 0) + 1 / piece.of);
    return round(mean([...rankings.keys()].map((id) => perQuery.get(id) ?? 0)));
  };
  const group = (label: '0' | '1' | '2+', member: (shared: number) => boolean): LexicalReach['groups'][number] => {
    const inGroup = pieces.filter((piece) => member(piece.shared));
    const missed = inGroup.filter((piece) => !piece.inTopK);
    return {
      rareWordsShared: label,
      share: round(inGroup.length / Math.max(1, pieces.length)),
      inTopK: round((inGroup.length - missed.length) / Math.max(1, inGroup.length)),
      missed: missed.length,
      outmatched: round(missed.filter((piece) => piece.outmatched).length / Math.max(1, missed.length)),
    };
  };
  return {
    k,
    pieces: pieces.length,
    groups: [
      group('0', (shared) => shared === 0),
      group('1', (shared) => shared === 1),
      group('2+', (shared) => shared >= 2),
    ],
    recall: recallIf((piece) => piece.inTopK),
    ifTwoOrMoreIn: recallIf((piece) => piece.inTopK || piece.shared >= 2),
    ifOneOrMoreIn: recallIf((piece) => piece.inTopK || piece.shared >= 1),
  };
}
