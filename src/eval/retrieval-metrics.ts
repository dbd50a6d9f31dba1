/**
 * Retrieval metrics with binary relevance, as the LoCoMo evaluation code and most IR papers
 * define them. Pure functions: a ranking is a list of ids, best first.
 */

/** recall@k: the share of the relevant ids found among the first k results (0 when none are relevant). */
export function recallAtK(ranking: readonly string[], relevant: ReadonlySet<string>, k: number): number {
  checkK(k);
  if (relevant.size === 0) return 0;
  return countRelevant(ranking.slice(0, k), relevant) / relevant.size;
}

/**
 * nDCG@k with binary gains: DCG = Σ 1/log2(rank + 1) over relevant results in the first k, divided
 * by the DCG of an ideal ranking (every relevant id first, at most k of them).
 */
export function ndcgAtK(ranking: readonly string[], relevant: ReadonlySet<string>, k: number): number {
  checkK(k);
  if (relevant.size === 0) return 0;
  const seen = new Set<string>();
  let dcg = 0;
  for (const [index, id] of ranking.slice(0, k).entries()) {
    // A ranking that repeats an id gets credit once, so nDCG stays within 0..1.
    if (relevant.has(id) && !seen.has(id)) dcg += 1 / Math.log2(index + 2);
    seen.add(id);
  }
  let ideal = 0;
  for (let index = 0; index < Math.min(k, relevant.size); index += 1) ideal += 1 / Math.log2(index + 2);
  return dcg / ideal;
}

/** Mean of recall@k and nDCG@k over queries, for each k. */
export interface MetricSummary {
  queries: number;
  recall: Record<string, number>;
  ndcg: Record<string, number>;
}

/** One evaluated query: its ranking, what is relevant, and its tags. */
export interface ScoredQuery {
  ranking: readonly string[];
  relevant: ReadonlySet<string>;
  tags?: readonly string[];
}

/** Averages recall@k and nDCG@k over the queries for each k (each query weighs the same). */
export function summarizeMetrics(queries: readonly ScoredQuery[], ks: readonly number[]): MetricSummary {
  const recall: Record<string, number> = {};
  const ndcg: Record<string, number> = {};
  for (const k of ks) {
    recall[k] = mean(queries.map((query) => recallAtK(query.ranking, query.relevant, k)));
    ndcg[k] = mean(queries.map((query) => ndcgAtK(query.ranking, query.relevant, k)));
  }
  return { queries: queries.length, recall, ndcg };
}

/** The summary of every tag, tags in alphabetical order. */
export function summarizeByTag(queries: readonly ScoredQuery[], ks: readonly number[]): Record<string, MetricSummary> {
  const byTag = new Map<string, ScoredQuery[]>();
  for (const query of queries) {
    for (const tag of new Set(query.tags ?? [])) {
      const list = byTag.get(tag) ?? [];
      list.push(query);
      byTag.set(tag, list);
    }
  }
  const result: Record<string, MetricSummary> = {};
  for (const tag of [...byTag.keys()].sort()) result[tag] = summarizeMetrics(byTag.get(tag)!, ks);
  return result;
}

/** Arithmetic mean; 0 for an empty list. */
export function mean(values: readonly number[]): number {
  if (values.length === 0) return 0;
  let total = 0;
  for (const value of values) total += value;
  return total / values.length;
}

function countRelevant(ids: readonly string[], relevant: ReadonlySet<string>): number {
  return new Set(ids.filter((id) => relevant.has(id))).size;
}

function checkK(k: number): void {
  if (!Number.isInteger(k) || k < 1) throw new RangeError(`k must be a whole number from 1, got ${k}.`);
}
