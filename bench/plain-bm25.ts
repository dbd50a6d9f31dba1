import type { EvalDataset } from '../src/eval/eval-dataset.js';

/**
 * The baseline every recall figure of the bench is set beside: plain Okapi BM25 as the data README
 * states it (lowercased words, a small stop list, k1 1.2, b 0.75), each scope its own corpus (its
 * own document count, lengths and document frequencies), over each memory's content as written:
 * no stemming, no engram ranking, no expansion. IDF is Robertson's with Lucene's +1, which never
 * goes negative. On LongMemEval's development split it gives the README's turn R@10 0.786 and
 * session R@10 0.912.
 */
export const PLAIN_BM25 = { k1: 1.2, b: 0.75 } as const;

const STOP_WORDS = new Set(
  'a an the and or but if of to in on at by for with from as is are was were be been being it its this that these those i you he she we they me my your our their his her what which who whom how when where why do does did have has had not no so than then there here'.split(
    ' ',
  ),
);

function words(text: string): string[] {
  return (text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).filter((word) => !STOP_WORDS.has(word));
}

interface ScopeIndex {
  ids: string[];
  counts: Array<Map<string, number>>;
  lengths: number[];
  averageLength: number;
  documentFrequency: Map<string, number>;
}

/** Each query's ranking (best first, at most `limit`) by plain BM25 within its scope. */
export function plainBm25Rankings(
  dataset: EvalDataset,
  limit: number,
): Array<{ id: string; ranking: string[]; relevant: Set<string>; tags: string[] }> {
  const scopes = new Map<string, ScopeIndex>();
  for (const memory of dataset.memories) {
    let index = scopes.get(memory.scope);
    if (!index) {
      index = { ids: [], counts: [], lengths: [], averageLength: 0, documentFrequency: new Map() };
      scopes.set(memory.scope, index);
    }
    const tokens = words(memory.content);
    const counts = new Map<string, number>();
    for (const token of tokens) counts.set(token, (counts.get(token) ?? 0) + 1);
    for (const token of counts.keys())
      index.documentFrequency.set(token, (index.documentFrequency.get(token) ?? 0) + 1);
    index.ids.push(memory.id!);
    index.counts.push(counts);
    index.lengths.push(tokens.length);
  }
  for (const index of scopes.values())
    index.averageLength =
      index.lengths.reduce((sum, length) => sum + length, 0) / Math.max(1, index.lengths.length) || 1;
  const { k1, b } = PLAIN_BM25;
  return dataset.queries.map((query) => {
    const index = scopes.get(query.scope);
    const terms = [...new Set(words(query.query))];
    const scored: Array<{ id: string; score: number }> = [];
    if (index) {
      const total = index.ids.length;
      const idf = terms.map((term) => {
        const frequency = index.documentFrequency.get(term) ?? 0;
        return Math.log(1 + (total - frequency + 0.5) / (frequency + 0.5));
      });
      index.counts.forEach((counts, document) => {
        let score = 0;
        const norm = k1 * (1 - b + (b * index.lengths[document]!) / index.averageLength);
        terms.forEach((term, position) => {
          const count = counts.get(term);
          if (count !== undefined) score += (idf[position]! * count * (k1 + 1)) / (count + norm);
        });
        if (score > 0) scored.push({ id: index.ids[document]!, score });
      });
    }
    scored.sort((x, y) => y.score - x.score || (x.id < y.id ? -1 : 1));
    return {
      id: query.id,
      ranking: scored.slice(0, limit).map((entry) => entry.id),
      relevant: new Set(query.relevant),
      tags: query.tags,
    };
  });
}
