import { describe, expect, it } from 'vitest';
import { mean, ndcgAtK, recallAtK, summarizeByTag, summarizeMetrics } from '../../src/eval/retrieval-metrics.js';

const relevant = (...ids: string[]): Set<string> => new Set(ids);

describe('recall@k', () => {
  it('is the share of relevant ids in the first k results', () => {
    const ranking = ['a', 'x', 'b', 'y', 'c'];
    expect(recallAtK(ranking, relevant('a', 'b', 'c', 'd'), 1)).toBe(0.25);
    expect(recallAtK(ranking, relevant('a', 'b', 'c', 'd'), 3)).toBe(0.5);
    expect(recallAtK(ranking, relevant('a', 'b', 'c', 'd'), 5)).toBe(0.75);
    // k past the end of the ranking counts what is there.
    expect(recallAtK(ranking, relevant('a', 'b', 'c', 'd'), 25)).toBe(0.75);
  });

  it('counts a repeated id once and is 0 for no relevant ids or an empty ranking', () => {
    expect(recallAtK(['a', 'a', 'a'], relevant('a', 'b'), 3)).toBe(0.5);
    expect(recallAtK(['a'], relevant(), 5)).toBe(0);
    expect(recallAtK([], relevant('a'), 5)).toBe(0);
  });

  it('refuses a k that is not a whole number from 1', () => {
    expect(() => recallAtK(['a'], relevant('a'), 0)).toThrow(RangeError);
    expect(() => recallAtK(['a'], relevant('a'), 2.5)).toThrow(RangeError);
  });
});

describe('nDCG@k (binary gains)', () => {
  it('matches hand-computed values', () => {
    // DCG = 1/log2(2) + 1/log2(4) = 1.5; ideal = 1 + 1/log2(3) ≈ 1.6309298.
    expect(ndcgAtK(['a', 'x', 'b'], relevant('a', 'b'), 3)).toBeCloseTo(1.5 / (1 + 1 / Math.log2(3)), 12);
    expect(ndcgAtK(['x', 'a'], relevant('a'), 2)).toBeCloseTo(1 / Math.log2(3), 12);
    expect(ndcgAtK(['a', 'x', 'b'], relevant('a', 'b'), 1)).toBe(1);
    expect(ndcgAtK(['x', 'y'], relevant('a'), 2)).toBe(0);
  });

  it('is 1 for an ideal ranking, even with more relevant ids than k', () => {
    expect(ndcgAtK(['a', 'b', 'c'], relevant('a', 'b', 'c', 'd', 'e'), 3)).toBeCloseTo(1, 12);
    expect(ndcgAtK(['b', 'a'], relevant('a', 'b'), 2)).toBeCloseTo(1, 12);
  });

  it('never exceeds 1 when a ranking repeats a relevant id', () => {
    expect(ndcgAtK(['a', 'a', 'a'], relevant('a'), 3)).toBe(1);
    expect(ndcgAtK(['x', 'a', 'a'], relevant('a', 'b'), 3)).toBeLessThan(1);
  });
});

describe('summaries', () => {
  const queries = [
    { ranking: ['a', 'b'], relevant: relevant('a'), tags: ['single-hop'] },
    { ranking: ['x', 'c'], relevant: relevant('c', 'd'), tags: ['multi-hop', 'single-hop'] },
    { ranking: ['y'], relevant: relevant('e') },
  ];

  it('averages each query equally, per k', () => {
    const summary = summarizeMetrics(queries, [1, 2]);
    expect(summary.queries).toBe(3);
    expect(summary.recall[1]).toBeCloseTo(1 / 3, 12);
    expect(summary.recall[2]).toBeCloseTo((1 + 0.5 + 0) / 3, 12);
    expect(summary.ndcg[2]).toBeCloseTo((1 + 1 / Math.log2(3) / (1 + 1 / Math.log2(3)) + 0) / 3, 12);
  });

  it('groups by tag, a query counting under each of its tags', () => {
    const byTag = summarizeByTag(queries, [2]);
    expect(Object.keys(byTag)).toEqual(['multi-hop', 'single-hop']);
    expect(byTag['multi-hop']!.queries).toBe(1);
    expect(byTag['multi-hop']!.recall[2]).toBe(0.5);
    expect(byTag['single-hop']!.recall[2]).toBe(0.75);
  });

  it('mean of nothing is 0', () => {
    expect(mean([])).toBe(0);
    expect(summarizeMetrics([], [5]).recall[5]).toBe(0);
  });
});
