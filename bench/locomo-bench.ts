import Database from 'better-sqlite3';
import { existsSync, readFileSync } from 'node:fs';
import { convertLocomo, LOCOMO_SOURCE, type LocomoConversionReport } from '../scripts/locomo-to-jsonl.js';
import { parseEvalDataset, type EvalDataset } from '../src/eval/eval-dataset.js';
import { summarizeByTag, summarizeMetrics, type MetricSummary } from '../src/eval/retrieval-metrics.js';
import { runEval } from '../src/eval/run-eval.js';
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
  defaults: { topK: number; minScore: number; meanResults: number; meanInjectedTokens: number };
  latency: { p50Ms: number; p95Ms: number };
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
  const { lines, report } = convertLocomo(JSON.parse(readFileSync(source, 'utf8')));
  const dataset = parseEvalDataset(lines.join('\n'));
  const evaluation = await runEval(dataset, { ks: KS, includeQueries: true });
  const engramQueries = evaluation.queries!.map((query) => ({ ranking: query.ranking, relevant: new Set(query.relevant), tags: query.tags }));
  const bm25Queries = plainBm25Rankings(dataset, Math.max(...KS));
  const engram = { overall: evaluation.overall, byCategory: evaluation.byTag };
  const bm25 = { overall: summarizeMetrics(bm25Queries, KS), byCategory: summarizeByTag(bm25Queries, KS) };
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
    defaults: {
      topK: evaluation.defaults.topK,
      minScore: evaluation.defaults.minScore,
      meanResults: round(evaluation.defaults.meanResults, 2),
      meanInjectedTokens: round(evaluation.defaults.meanInjectedTokens, 1),
    },
    latency: evaluation.latency,
  };
  printLocomo(result);
  return result;
}

/**
 * The baseline: SQLite FTS5's bm25 over each turn's raw text (speaker, words, image caption), the
 * question's words OR-ed as they are: no stop words, no engram ranking, no expansion.
 */
function plainBm25Rankings(dataset: EvalDataset, limit: number): Array<{ ranking: string[]; relevant: Set<string>; tags: string[] }> {
  const db = new Database(':memory:');
  try {
    db.exec("CREATE VIRTUAL TABLE turns USING fts5(id UNINDEXED, scope UNINDEXED, text, tokenize = 'porter unicode61 remove_diacritics 2')");
    const insert = db.prepare('INSERT INTO turns (id, scope, text) VALUES (?, ?, ?)');
    db.transaction(() => {
      for (const memory of dataset.memories) insert.run(memory.id, memory.scope, memory.content);
    })();
    const search = db.prepare(`SELECT id FROM turns WHERE turns MATCH ? AND scope = ? ORDER BY bm25(turns) LIMIT ${limit}`);
    return dataset.queries.map((query) => {
      const words = [...new Set(query.query.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [])];
      const match = words.map((word) => `"${word}"`).join(' OR ');
      const ranking = match === '' ? [] : (search.all(match, query.scope) as Array<{ id: string }>).map((row) => row.id);
      return { ranking, relevant: new Set(query.relevant), tags: query.tags };
    });
  } finally {
    db.close();
  }
}

function printLocomo(result: LocomoBenchResult): void {
  console.log(`\nLoCoMo evidence recall, no embedder (${result.queries} questions; ${result.skipped} without evidence skipped)`);
  const labels = ['overall', ...Object.keys(result.engram.byCategory)];
  const summaryOf = (side: LocomoBenchResult['engram'], label: string): MetricSummary => (label === 'overall' ? side.overall : side.byCategory[label]!);
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
  console.log(
    `At default settings (top_k ${result.defaults.topK}, min_score ${result.defaults.minScore}): ${result.defaults.meanResults} memories, ${result.defaults.meanInjectedTokens} injected tokens per query; recall p95 ${result.latency.p95Ms} ms.`,
  );
}
