import { readMemoryBank, type MemoryBankConversionReport } from '../scripts/memorybank-to-jsonl.js';
import { parseEvalDataset } from '../src/eval/eval-dataset.js';
import { summarizeByTag, summarizeMetrics, type MetricSummary } from '../src/eval/retrieval-metrics.js';
import { runEval, type EvalReport } from '../src/eval/node/run-eval.js';
import { plainBm25Rankings } from './plain-bm25.js';
import { round } from './statistics.js';

export interface MemoryBankBenchResult {
  conversion: MemoryBankConversionReport;
  ks: number[];
  queries: number;
  engram: { overall: MetricSummary; byKind: Record<string, MetricSummary> };
  bm25: { overall: MetricSummary; byKind: Record<string, MetricSummary> };
  defaults: { meanResults: number; meanRecall: number; meanInjectedTokens: number };
  /** The same with the memories' source fields ignored (`engram eval --no-source`). */
  withoutSource: {
    overall: MetricSummary;
    defaults: { meanResults: number; meanRecall: number; meanInjectedTokens: number };
  };
}

/** Each user holds 17-52 exchanges, so the cut-offs are smaller than LoCoMo's. */
const KS = [1, 3, 5, 10];

/**
 * MemoryBank evidence recall with hand-labelled evidence (scripts/memorybank-evidence.json): a
 * check held out from all ranking work, on data shaped unlike LoCoMo (a user and an AI companion,
 * one memory per exchange). Undefined when the data is absent.
 */
export async function benchMemoryBank(): Promise<MemoryBankBenchResult | undefined> {
  const converted = readMemoryBank();
  if (!converted) {
    console.log('\nMemoryBank: skipped, ../shared/data/memorybank is absent.');
    return undefined;
  }
  const dataset = parseEvalDataset(converted.lines.join('\n'));
  const evaluation = await runEval(dataset, { ks: KS, includeQueries: true });
  const withoutSource = await runEval(dataset, { ks: KS, ignoreSource: true });
  const bm25Queries = plainBm25Rankings(dataset, Math.max(...KS));
  const result: MemoryBankBenchResult = {
    conversion: converted.report,
    ks: KS,
    queries: evaluation.dataset.queries,
    engram: { overall: evaluation.overall, byKind: evaluation.byTag },
    bm25: { overall: summarizeMetrics(bm25Queries, KS), byKind: summarizeByTag(bm25Queries, KS) },
    defaults: injectedAtDefaults(evaluation),
    withoutSource: { overall: withoutSource.overall, defaults: injectedAtDefaults(withoutSource) },
  };
  console.log(
    `\nMemoryBank evidence recall, no embedder, held out (${result.queries} questions, evidence labelled by hand)`,
  );
  console.table(
    ['overall', ...Object.keys(result.engram.byKind)].map((label) => {
      const ours = label === 'overall' ? result.engram.overall : result.engram.byKind[label]!;
      const theirs = label === 'overall' ? result.bm25.overall : result.bm25.byKind[label]!;
      const row: Record<string, string | number> = { kind: label, questions: ours.queries };
      for (const k of KS) {
        row[`engram R@${k}`] = round(ours.recall[k]!);
        row[`bm25 R@${k}`] = round(theirs.recall[k]!);
      }
      return row;
    }),
  );
  const noSource = result.withoutSource;
  console.log(
    `Without source fields: R@${KS.join('/')} ${KS.map((k) => round(noSource.overall.recall[k]!)).join(' / ')}.`,
  );
  console.log(
    `At default settings: ${result.defaults.meanResults} memories holding ${result.defaults.meanRecall} of the evidence, ${result.defaults.meanInjectedTokens} injected tokens per query (without source fields: ${noSource.defaults.meanResults} memories, ${noSource.defaults.meanRecall}, ${noSource.defaults.meanInjectedTokens} tokens).`,
  );
  return result;
}

function injectedAtDefaults(report: EvalReport): MemoryBankBenchResult['defaults'] {
  return {
    meanResults: round(report.defaults.meanResults, 2),
    meanRecall: round(report.defaults.meanRecall),
    meanInjectedTokens: round(report.defaults.meanInjectedTokens, 1),
  };
}
