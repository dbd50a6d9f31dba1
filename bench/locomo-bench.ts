import { existsSync, readFileSync } from 'node:fs';
import { convertLocomo, LOCOMO_SOURCE, type LocomoConversionReport } from '../scripts/locomo-to-jsonl.js';
import { parseEvalDataset, type EvalDataset } from '../src/eval/eval-dataset.js';
import {
  mean,
  summarizeByTag,
  summarizeMetrics,
  type MetricSummary,
  type ScoredQuery,
} from '../src/eval/retrieval-metrics.js';
import { runEval, type EvalReport } from '../src/eval/node/run-eval.js';
import { DEFAULT_SETTINGS, type Settings } from '../src/kernel/settings.js';
import { benchMemoryBank, type MemoryBankBenchResult } from './memorybank-bench.js';
import { plainBm25Rankings } from './plain-bm25.js';
import { round } from './statistics.js';

/** What an agent is given at the settings: the share of a question's evidence in the block, and the block's size. */
export interface InjectedFigures {
  /** Mean share of a question's evidence inside the `<memory_context>` block. */
  recall: number;
  /** Mean estimated tokens of the block. */
  tokens: number;
  /** Mean memories in the block. */
  memories: number;
}

/** One half of the conversations: engram and plain BM25 at every cut-off, and what would be injected. */
export interface SplitFigures {
  conversations: string[];
  engram: MetricSummary;
  bm25: MetricSummary;
  injected: InjectedFigures;
}

/** One pass of `engram eval` over a LoCoMo conversion. */
export interface LocomoRun {
  engram: { overall: MetricSummary; byCategory: Record<string, MetricSummary> };
  /** engram ÷ plain BM25 recall@k, overall and per category. */
  ratios: Record<string, Record<string, number>>;
  /** Tuning on the first five conversations, reporting on the last five: a change that only fits what it was tuned on shows. */
  splits: { tuning: SplitFigures; heldOut: SplitFigures };
  /** At the settings: top_k, min_score, the share of the evidence in the block, its tokens; overall and per category. */
  defaults: {
    topK: number;
    minScore: number;
    maxTokens: number;
    overall: InjectedFigures;
    byCategory: Record<string, InjectedFigures>;
  };
  latency: { p50Ms: number; p95Ms: number };
}

/** One signal turned off (or an older default restored) on neutral LoCoMo, beside the defaults. */
export interface AblationRow {
  label: string;
  settings: Partial<Settings['recall']>;
  overall: MetricSummary;
  heldOut: MetricSummary;
  tuning: MetricSummary;
  injected: InjectedFigures;
}

export interface LocomoBenchResult {
  source: string;
  conversion: Omit<LocomoConversionReport, 'droppedEvidence'> & { droppedEvidence: number };
  ks: number[];
  queries: number;
  skipped: number;
  /** Plain BM25 over each turn's content (the same in both conversions). */
  bm25: { overall: MetricSummary; byCategory: Record<string, MetricSummary> };
  /** The conversion with source turns and a description naming speaker and day (what extraction records). */
  withSource: LocomoRun;
  /** Each turn as an import writes it: content and date, no source, no description (`--neutral`). */
  neutral: LocomoRun;
  /** Neutral LoCoMo with one signal off at a time, and with the defaults before issue 18. */
  ablations: AblationRow[];
  /** A second, differently shaped dataset held out from all tuning (undefined when absent). */
  memoryBank?: MemoryBankBenchResult;
}

const KS = [5, 10, 25];
const CATEGORIES = ['multi-hop', 'temporal', 'open-domain', 'single-hop', 'adversarial'];

/** Neutral LoCoMo ablations: each row changes these recall settings from the defaults. */
export const ABLATIONS: ReadonlyArray<{ label: string; settings: Partial<Settings['recall']> }> = [
  { label: 'no date match', settings: { dateWeight: 0 } },
  { label: 'no "when" match', settings: { timeMentionWeight: 0 } },
  { label: 'no second hop', settings: { secondHopWeight: 0 } },
  { label: 'no diversity', settings: { duplicateSimilarity: 1 } },
  { label: 'no sitting context', settings: { contextSittingWeight: 0 } },
  {
    label: 'none of the five',
    settings: {
      dateWeight: 0,
      timeMentionWeight: 0,
      secondHopWeight: 0,
      duplicateSimilarity: 1,
      contextSittingWeight: 0,
    },
  },
  {
    label: 'before issue 18 (signals off, top_k 6, min_score 0.25)',
    settings: {
      dateWeight: 0,
      timeMentionWeight: 0,
      secondHopWeight: 0,
      duplicateSimilarity: 1,
      contextSittingWeight: 0,
      topK: 6,
      minScore: 0.25,
    },
  },
];

/**
 * LoCoMo evidence recall of engram beside a plain BM25 over the same turns, with source turns and
 * neutral (no source, no description), split into the tuning half and the held-out half, with what
 * the defaults would inject, and ablations of each signal on neutral LoCoMo. Undefined when the data is absent.
 */
export async function benchLocomo(source: string = LOCOMO_SOURCE): Promise<LocomoBenchResult | undefined> {
  if (!existsSync(source)) {
    console.log(`\nLoCoMo: skipped, ${source} is absent (see ../shared/data/README.md).`);
    return undefined;
  }
  const data: unknown = JSON.parse(readFileSync(source, 'utf8'));
  const converted = convertLocomo(data);
  const sampleIds = (data as Array<{ sample_id: unknown }>).map((sample) => String(sample.sample_id));
  const withSourceDataset = parseEvalDataset(converted.lines.join('\n'));
  const neutralDataset = parseEvalDataset(convertLocomo(data, { neutral: true }).lines.join('\n'));
  const bm25Queries = plainBm25Rankings(withSourceDataset, Math.max(...KS));
  const bm25 = { overall: summarizeMetrics(bm25Queries, KS), byCategory: summarizeByTag(bm25Queries, KS) };
  const halves = conversationHalves(sampleIds);

  const withSource = locomoRun(await runEval(withSourceDataset, { ks: KS, includeQueries: true }), bm25Queries, halves);
  printRun('with source turns', withSource, bm25);
  const neutral = locomoRun(await runEval(neutralDataset, { ks: KS, includeQueries: true }), bm25Queries, halves);
  printRun('neutral: no source, no description', neutral, bm25);

  const ablations: AblationRow[] = [];
  for (const ablation of ABLATIONS) {
    const settings: Settings = { ...DEFAULT_SETTINGS, recall: { ...DEFAULT_SETTINGS.recall, ...ablation.settings } };
    const run = locomoRun(
      await runEval(neutralDataset, { ks: KS, includeQueries: true, settings }),
      bm25Queries,
      halves,
    );
    ablations.push({
      label: ablation.label,
      settings: ablation.settings,
      overall: run.engram.overall,
      tuning: run.splits.tuning.engram,
      heldOut: run.splits.heldOut.engram,
      injected: run.defaults.overall,
    });
  }
  printAblations(neutral, ablations);

  const result: LocomoBenchResult = {
    source,
    conversion: { ...converted.report, droppedEvidence: converted.report.droppedEvidence.length },
    ks: KS,
    queries: withSourceDataset.queries.length,
    skipped: withSourceDataset.skipped.length,
    bm25,
    withSource,
    neutral,
    ablations,
  };
  const memoryBank = await benchMemoryBank();
  return memoryBank ? { ...result, memoryBank } : result;
}

/** The conversations of each half, in file order: the first five tune, the last five are held out. */
function conversationHalves(sampleIds: readonly string[]): { tuning: Set<string>; heldOut: Set<string> } {
  const half = Math.ceil(sampleIds.length / 2);
  return { tuning: new Set(sampleIds.slice(0, half)), heldOut: new Set(sampleIds.slice(half)) };
}

type EvaluatedQuery = NonNullable<EvalReport['queries']>[number];

/** Summaries of one evaluation: overall, per category, per half, and what the settings inject. */
function locomoRun(
  report: EvalReport,
  bm25Queries: readonly ScoredQuery[],
  halves: { tuning: Set<string>; heldOut: Set<string> },
): LocomoRun {
  const queries = report.queries!;
  const scored = queries.map((query) => ({
    ranking: query.ranking,
    relevant: new Set(query.relevant),
    tags: query.tags,
  }));
  const conversationOf = (query: EvaluatedQuery): string => query.id.slice(0, query.id.lastIndexOf(':'));
  const split = (conversations: Set<string>): SplitFigures => {
    const picked = queries.map((query) => conversations.has(conversationOf(query)));
    return {
      conversations: [...conversations],
      engram: summarizeMetrics(
        scored.filter((_, index) => picked[index]),
        KS,
      ),
      bm25: summarizeMetrics(
        bm25Queries.filter((_, index) => picked[index]),
        KS,
      ),
      injected: injectedFigures(queries.filter((_, index) => picked[index])),
    };
  };
  const engram = { overall: report.overall, byCategory: report.byTag };
  const bm25ByCategory = summarizeByTag(bm25Queries, KS);
  const bm25Overall = summarizeMetrics(bm25Queries, KS);
  const ratios: Record<string, Record<string, number>> = {};
  for (const label of ['overall', ...Object.keys(engram.byCategory)]) {
    const ours = label === 'overall' ? engram.overall : engram.byCategory[label]!;
    const theirs = label === 'overall' ? bm25Overall : bm25ByCategory[label]!;
    ratios[label] = Object.fromEntries(KS.map((k) => [k, round(ours.recall[k]! / theirs.recall[k]!)]));
  }
  return {
    engram,
    ratios,
    splits: { tuning: split(halves.tuning), heldOut: split(halves.heldOut) },
    defaults: {
      topK: report.defaults.topK,
      minScore: report.defaults.minScore,
      maxTokens: DEFAULT_SETTINGS.injection.maxTokens,
      overall: injectedFigures(queries),
      byCategory: Object.fromEntries(
        CATEGORIES.map((category) => [
          category,
          injectedFigures(queries.filter((query) => query.tags.includes(category))),
        ]),
      ),
    },
    latency: report.latency,
  };
}

function injectedFigures(queries: readonly EvaluatedQuery[]): InjectedFigures {
  return {
    recall: round(
      mean(
        queries.map(
          (query) => query.injected.filter((id) => query.relevant.includes(id)).length / query.relevant.length,
        ),
      ),
    ),
    tokens: round(mean(queries.map((query) => query.injectedTokens)), 1),
    memories: round(mean(queries.map((query) => query.injected.length)), 2),
  };
}

function printRun(label: string, run: LocomoRun, bm25: LocomoBenchResult['bm25']): void {
  const { queries } = run.engram.overall;
  console.log(`\nLoCoMo evidence recall, ${label}, no embedder (${queries} questions)`);
  console.table(
    ['overall', ...CATEGORIES].map((category) => {
      const ours = category === 'overall' ? run.engram.overall : run.engram.byCategory[category]!;
      const theirs = category === 'overall' ? bm25.overall : bm25.byCategory[category]!;
      const injected = category === 'overall' ? run.defaults.overall : run.defaults.byCategory[category]!;
      const row: Record<string, string | number> = { category, questions: ours.queries };
      for (const k of KS) row[`R@${k}`] = round(ours.recall[k]!);
      row['nDCG@10'] = round(ours.ndcg[10]!);
      for (const k of KS) row[`bm25 R@${k}`] = round(theirs.recall[k]!);
      row.injected = injected.recall;
      row['injected tokens'] = injected.tokens;
      return row;
    }),
  );
  console.log('By half of the conversations (IDF over all ten; tuned on the first half):');
  console.table(
    (['tuning', 'heldOut'] as const).map((half) => {
      const figures = run.splits[half];
      const row: Record<string, string | number> = {
        half: `${half === 'tuning' ? 'tuning' : 'held out'} (${figures.conversations.join(', ')})`,
        questions: figures.engram.queries,
      };
      for (const k of KS) row[`R@${k}`] = round(figures.engram.recall[k]!);
      row['nDCG@10'] = round(figures.engram.ndcg[10]!);
      for (const k of KS) row[`bm25 R@${k}`] = round(figures.bm25.recall[k]!);
      row.injected = figures.injected.recall;
      row['injected tokens'] = figures.injected.tokens;
      return row;
    }),
  );
  const injected = run.defaults.overall;
  console.log(
    `At the defaults (top_k ${run.defaults.topK}, min_score ${run.defaults.minScore}, ${run.defaults.maxTokens}-token budget): ${injected.memories} memories, ${injected.tokens} tokens, holding ${injected.recall} of the evidence; recall p95 ${run.latency.p95Ms} ms.`,
  );
}

function printAblations(neutral: LocomoRun, ablations: readonly AblationRow[]): void {
  console.log('\nNeutral LoCoMo ablations (each row: the defaults with that change)');
  const row = (
    label: string,
    overall: MetricSummary,
    tuning: MetricSummary,
    heldOut: MetricSummary,
    injected: InjectedFigures,
  ): Record<string, string | number> => ({
    settings: label,
    'R@5/10/25': KS.map((k) => round(overall.recall[k]!).toFixed(3)).join(' / '),
    'nDCG@10': round(overall.ndcg[10]!),
    'tuning R@5/10/25': KS.map((k) => round(tuning.recall[k]!).toFixed(3)).join(' / '),
    'held-out R@5/10/25': KS.map((k) => round(heldOut.recall[k]!).toFixed(3)).join(' / '),
    injected: injected.recall,
    'injected tokens': injected.tokens,
  });
  console.table([
    row(
      'defaults',
      neutral.engram.overall,
      neutral.splits.tuning.engram,
      neutral.splits.heldOut.engram,
      neutral.defaults.overall,
    ),
    ...ablations.map((ablation) =>
      row(ablation.label, ablation.overall, ablation.tuning, ablation.heldOut, ablation.injected),
    ),
  ]);
}

/** The neutral conversion of LoCoMo as an evaluation dataset (for the Postgres part). */
export function neutralLocomoDataset(source: string = LOCOMO_SOURCE): EvalDataset {
  return parseEvalDataset(convertLocomo(JSON.parse(readFileSync(source, 'utf8')), { neutral: true }).lines.join('\n'));
}
