import { existsSync, readFileSync } from 'node:fs';
import { convertLocomo, LOCOMO_SOURCE, type LocomoConversionReport } from '../scripts/locomo-to-jsonl.js';
import { parseEvalDataset } from '../src/eval/eval-dataset.js';
import { summarizeByTag, summarizeMetrics, type MetricSummary } from '../src/eval/retrieval-metrics.js';
import { runEval } from '../src/eval/node/run-eval.js';
import { benchMemoryBank, type MemoryBankBenchResult } from './memorybank-bench.js';
import { plainBm25Rankings } from './plain-bm25.js';
import { round } from './statistics.js';

export interface LocomoBenchResult {
  source: string;
  conversion: Omit<LocomoConversionReport, 'droppedEvidence'> & { droppedEvidence: number };
  ks: number[];
  queries: number;
  skipped: number;
  engram: { overall: MetricSummary; byCategory: Record<string, MetricSummary> };
  bm25: { overall: MetricSummary; byCategory: Record<string, MetricSummary> };
  /** engram ÷ plain BM25 recall@k, overall and per category. */
  ratios: Record<string, Record<string, number>>;
  /**
   * The same run split by conversation: tune ranking on the first five, report the last five as
   * held out, so a change that only fits the questions it was tuned on shows.
   */
  splits: Record<string, { engram: MetricSummary; bm25: MetricSummary }>;
  /** At default settings: memories and tokens in the block, and the share of the evidence inside it. */
  defaults: { topK: number; minScore: number; meanResults: number; meanRecall: number; meanInjectedTokens: number };
  latency: { p50Ms: number; p95Ms: number };
  /** A second, differently shaped dataset held out from all tuning (undefined when absent). */
  memoryBank?: MemoryBankBenchResult;
}

const KS = [5, 10, 25];

/**
 * LoCoMo evidence recall (issue 3 targets: R@5 >= 0.60, R@10 >= 0.70 with no embedder) of
 * engram's recall beside a plain BM25 over the same turns. Undefined when the data is absent.
 */
export async function benchLocomo(source: string = LOCOMO_SOURCE): Promise<LocomoBenchResult | undefined> {
  if (!existsSync(source)) {
    console.log(`\nLoCoMo: skipped, ${source} is absent (see ../shared/data/README.md).`);
    return undefined;
  }
  const data: unknown = JSON.parse(readFileSync(source, 'utf8'));
  const { lines, report } = convertLocomo(data);
  const sampleIds = (data as Array<{ sample_id: unknown }>).map((sample) => String(sample.sample_id));
  const dataset = parseEvalDataset(lines.join('\n'));
  const evaluation = await runEval(dataset, { ks: KS, includeQueries: true });
  const engramQueries = evaluation.queries!.map((query) => ({
    ranking: query.ranking,
    relevant: new Set(query.relevant),
    tags: query.tags,
  }));
  const bm25Queries = plainBm25Rankings(dataset, Math.max(...KS));
  const engram = { overall: evaluation.overall, byCategory: evaluation.byTag };
  const bm25 = { overall: summarizeMetrics(bm25Queries, KS), byCategory: summarizeByTag(bm25Queries, KS) };
  const splits = splitByConversation(sampleIds, evaluation.queries!, engramQueries, bm25Queries);
  const ratios: Record<string, Record<string, number>> = {};
  for (const [label, ours, theirs] of [
    ['overall', engram.overall, bm25.overall],
    ...Object.keys(engram.byCategory).map((tag) => [tag, engram.byCategory[tag]!, bm25.byCategory[tag]!] as const),
  ] as const) {
    ratios[label] = Object.fromEntries(KS.map((k) => [k, round(ours.recall[k]! / theirs.recall[k]!)]));
  }
  const result: LocomoBenchResult = {
    source,
    conversion: { ...report, droppedEvidence: report.droppedEvidence.length },
    ks: KS,
    queries: evaluation.dataset.queries,
    skipped: evaluation.dataset.skipped,
    engram,
    bm25,
    ratios,
    splits,
    defaults: {
      topK: evaluation.defaults.topK,
      minScore: evaluation.defaults.minScore,
      meanResults: round(evaluation.defaults.meanResults, 2),
      meanRecall: round(evaluation.defaults.meanRecall),
      meanInjectedTokens: round(evaluation.defaults.meanInjectedTokens, 1),
    },
    latency: evaluation.latency,
  };
  printLocomo(result);
  const memoryBank = await benchMemoryBank();
  return memoryBank ? { ...result, memoryBank } : result;
}

/** Summaries of the first and second half of the conversations (in file order), engram and plain BM25. */
function splitByConversation(
  sampleIds: readonly string[],
  queries: ReadonlyArray<{ id: string }>,
  engramQueries: ReadonlyArray<{ ranking: string[]; relevant: Set<string>; tags: string[] }>,
  bm25Queries: ReadonlyArray<{ ranking: string[]; relevant: Set<string>; tags: string[] }>,
): LocomoBenchResult['splits'] {
  const half = Math.ceil(sampleIds.length / 2);
  const firstHalf = new Set(sampleIds.slice(0, half));
  const inFirst = queries.map((query) => firstHalf.has(query.id.slice(0, query.id.lastIndexOf(':'))));
  const pick = <T>(list: readonly T[], first: boolean): T[] => list.filter((_, index) => inFirst[index] === first);
  return {
    [`conversations 1-${half} (tuning)`]: {
      engram: summarizeMetrics(pick(engramQueries, true), KS),
      bm25: summarizeMetrics(pick(bm25Queries, true), KS),
    },
    [`conversations ${half + 1}-${sampleIds.length} (held out)`]: {
      engram: summarizeMetrics(pick(engramQueries, false), KS),
      bm25: summarizeMetrics(pick(bm25Queries, false), KS),
    },
  };
}

function printLocomo(result: LocomoBenchResult): void {
  console.log(
    `\nLoCoMo evidence recall, no embedder (${result.queries} questions; ${result.skipped} without evidence skipped)`,
  );
  const labels = ['overall', ...Object.keys(result.engram.byCategory)];
  const summaryOf = (side: LocomoBenchResult['engram'], label: string): MetricSummary =>
    label === 'overall' ? side.overall : side.byCategory[label]!;
  console.table(
    labels.map((label) => {
      const ours = summaryOf(result.engram, label);
      const theirs = summaryOf(result.bm25, label);
      const row: Record<string, string | number> = { category: label, questions: ours.queries };
      for (const k of result.ks) {
        row[`engram R@${k}`] = round(ours.recall[k]!);
        row[`bm25 R@${k}`] = round(theirs.recall[k]!);
        row[`ratio @${k}`] = result.ratios[label]![k]!;
      }
      return row;
    }),
  );
  console.log('Split by conversation (IDF over all ten, as in the run above):');
  console.table(
    Object.entries(result.splits).map(([label, { engram, bm25 }]) => {
      const row: Record<string, string | number> = { split: label, questions: engram.queries };
      for (const k of result.ks) {
        row[`engram R@${k}`] = round(engram.recall[k]!);
        row[`bm25 R@${k}`] = round(bm25.recall[k]!);
      }
      return row;
    }),
  );
  console.log(
    `At default settings (top_k ${result.defaults.topK}, min_score ${result.defaults.minScore}): ${result.defaults.meanResults} memories holding ${result.defaults.meanRecall} of the evidence, ${result.defaults.meanInjectedTokens} injected tokens per query; recall p95 ${result.latency.p95Ms} ms.`,
  );
}
