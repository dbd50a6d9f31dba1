import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseEvalDataset, type EvalDataset } from '../src/eval/eval-dataset.js';
import type { BenchmarkReadReport } from '../src/eval/benchmark-text.js';
import { convertLongMemEval, type LongMemEvalLevel } from '../src/eval/longmemeval-dataset.js';
import { summarizeByTag, summarizeMetrics, type MetricSummary } from '../src/eval/retrieval-metrics.js';
import { runEval } from '../src/eval/node/run-eval.js';
import { BENCH_DATA } from '../scripts/locomo-to-jsonl.js';
import { plainBm25Rankings } from './plain-bm25.js';
import { round } from './statistics.js';

/** The development split of LongMemEval_S (cleaned): one question per file (see its SOURCE.md). */
export const LONGMEMEVAL_SOURCE = resolve(BENCH_DATA, 'longmemeval/s_cleaned_dev');

const KS = [5, 10, 25];

/** One level of LongMemEval: engram and plain BM25, overall and by question type, on each half. */
export interface LongMemEvalLevelResult {
  level: LongMemEvalLevel;
  read: BenchmarkReadReport;
  memories: number;
  queries: number;
  engram: { overall: MetricSummary; byType: Record<string, MetricSummary> };
  bm25: { overall: MetricSummary; byType: Record<string, MetricSummary> };
  /** Questions alternately in two halves (within each type, by id): a gain should show on both. */
  halves: Record<'a' | 'b', { engram: MetricSummary; bm25: MetricSummary }>;
  defaults: { meanResults: number; meanRecall: number; meanInjectedTokens: number };
  latency: { p50Ms: number; p95Ms: number };
}

export interface LongMemEvalBenchResult {
  source: string;
  ks: number[];
  turn: LongMemEvalLevelResult;
  session: LongMemEvalLevelResult;
}

/** The questions of the development split, parsed (undefined when the data is absent). */
export function readLongMemEvalQuestions(source: string = LONGMEMEVAL_SOURCE): unknown[] | undefined {
  if (!existsSync(source)) return undefined;
  return readdirSync(source)
    .filter((name) => name.endsWith('.json'))
    .sort()
    .map((name) => JSON.parse(readFileSync(resolve(source, name), 'utf8')) as unknown);
}

/** One level as an evaluation dataset, with the reader's report. */
export function longMemEvalDataset(
  questions: readonly unknown[],
  level: LongMemEvalLevel,
): { dataset: EvalDataset; read: BenchmarkReadReport } {
  const converted = convertLongMemEval(questions, { level });
  return { dataset: parseEvalDataset(converted.lines.join('\n')), read: converted.report };
}

/** Half "a" or "b" of a question: alternate questions of each type, in id order. */
export function longMemEvalHalf(dataset: EvalDataset): (queryId: string) => 'a' | 'b' {
  const half = new Map<string, 'a' | 'b'>();
  const byType = new Map<string, string[]>();
  for (const query of dataset.queries) {
    const type = query.tags[0] ?? '';
    byType.set(type, [...(byType.get(type) ?? []), query.id]);
  }
  for (const ids of byType.values()) [...ids].sort().forEach((id, index) => half.set(id, index % 2 === 0 ? 'a' : 'b'));
  return (queryId) => half.get(queryId) ?? 'a';
}

/**
 * LongMemEval evidence recall by the benchmark's own rules (user turns only, each question's
 * haystack its own scope, asked at its question date), at turn and session level, beside plain BM25
 * in the same run, overall, by question type and on two halves. Undefined when the data is absent.
 */
export async function benchLongMemEval(
  source: string = LONGMEMEVAL_SOURCE,
): Promise<LongMemEvalBenchResult | undefined> {
  const questions = readLongMemEvalQuestions(source);
  if (!questions) {
    console.log(`\nLongMemEval: skipped, ${source} is absent (see ../shared/data/README.md).`);
    return undefined;
  }
  const levels: LongMemEvalLevelResult[] = [];
  for (const level of ['turn', 'session'] as const) {
    const { dataset, read } = longMemEvalDataset(questions, level);
    const report = await runEval(dataset, { ks: KS, includeQueries: true });
    const bm25Queries = plainBm25Rankings(dataset, Math.max(...KS));
    const halfOf = longMemEvalHalf(dataset);
    const ours = report.queries!.map((query) => ({ ...query, relevant: new Set(query.relevant) }));
    const halves = Object.fromEntries(
      (['a', 'b'] as const).map((half) => [
        half,
        {
          engram: summarizeMetrics(
            ours.filter((query) => halfOf(query.id) === half),
            KS,
          ),
          bm25: summarizeMetrics(
            bm25Queries.filter((query) => halfOf(query.id) === half),
            KS,
          ),
        },
      ]),
    ) as LongMemEvalLevelResult['halves'];
    const result: LongMemEvalLevelResult = {
      level,
      read,
      memories: dataset.memories.length,
      queries: dataset.queries.length,
      engram: { overall: report.overall, byType: report.byTag },
      bm25: { overall: summarizeMetrics(bm25Queries, KS), byType: summarizeByTag(bm25Queries, KS) },
      halves,
      defaults: {
        meanResults: round(report.defaults.meanResults, 2),
        meanRecall: round(report.defaults.meanRecall),
        meanInjectedTokens: round(report.defaults.meanInjectedTokens, 1),
      },
      latency: report.latency,
    };
    printLevel(result);
    levels.push(result);
  }
  return { source, ks: KS, turn: levels[0]!, session: levels[1]! };
}

function printLevel(result: LongMemEvalLevelResult): void {
  console.log(
    `\nLongMemEval_S dev, ${result.level} level, no embedder (${result.queries} questions with user-side evidence, ${result.memories} memories; user turns only, each haystack its own scope, asked at its question date)`,
  );
  const rows = ['overall', ...Object.keys(result.engram.byType)].map((label) => {
    const ours = label === 'overall' ? result.engram.overall : result.engram.byType[label]!;
    const theirs = label === 'overall' ? result.bm25.overall : result.bm25.byType[label]!;
    const row: Record<string, string | number> = { type: label, questions: ours.queries };
    for (const k of KS) row[`R@${k}`] = round(ours.recall[k]!);
    row['nDCG@10'] = round(ours.ndcg[10]!);
    for (const k of KS) row[`bm25 R@${k}`] = round(theirs.recall[k]!);
    row['vs bm25 R@10'] = round(ours.recall[10]! - theirs.recall[10]!);
    return row;
  });
  for (const half of ['a', 'b'] as const) {
    const figures = result.halves[half];
    const row: Record<string, string | number> = { type: `half ${half}`, questions: figures.engram.queries };
    for (const k of KS) row[`R@${k}`] = round(figures.engram.recall[k]!);
    row['nDCG@10'] = round(figures.engram.ndcg[10]!);
    for (const k of KS) row[`bm25 R@${k}`] = round(figures.bm25.recall[k]!);
    row['vs bm25 R@10'] = round(figures.engram.recall[10]! - figures.bm25.recall[10]!);
    rows.push(row);
  }
  console.table(rows);
  console.log(
    `At the defaults: ${result.defaults.meanResults} memories, ${result.defaults.meanInjectedTokens} tokens, holding ${result.defaults.meanRecall} of the evidence; recall p50 ${result.latency.p50Ms} ms, p95 ${result.latency.p95Ms} ms.`,
  );
}
