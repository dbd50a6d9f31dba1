import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { resolve } from 'node:path';
import { convertLocomo, LOCOMO_SOURCE } from '../scripts/locomo-to-jsonl.js';
import { readMemoryBank } from '../scripts/memorybank-to-jsonl.js';
import { parseEvalDataset, type EvalDataset } from '../src/eval/eval-dataset.js';
import { mean, recallAtK } from '../src/eval/retrieval-metrics.js';
import { runEval } from '../src/eval/node/run-eval.js';
import { DEFAULT_SETTINGS, type Settings } from '../src/kernel/settings.js';
import { longMemEvalDataset, longMemEvalHalf, readLongMemEvalQuestions } from './longmemeval-bench.js';
import { lexicalReach, type LexicalReach } from './lexical-reach.js';
import { round } from './statistics.js';

/**
 * `ENGRAM_BENCH_PARTS=ablation`: what each component of recall contributes, on every set at once.
 * Each row turns one component off (its setting at its "off" value) and reports the change of
 * recall on LoCoMo (neutral), MemoryBank and LongMemEval's development split (turn and session
 * level), with the paired standard error of that change over the questions. A component is kept
 * when turning it off loses on at least two of the three sets and gains beyond noise on none: what
 * helps one set only is fitted to it. Halves of LoCoMo (conversations 1-5 / 6-10) and of
 * LongMemEval (alternate questions of each type) are shown so a gain can be checked on data it
 * was not seen on.
 *
 *   npx tsx bench/recall-ablation.ts ['[{"label":"…","recall":{…}}]']   (default: every component)
 */

/** One configuration: a label and the recall settings it changes from the defaults. */
export interface AblationConfiguration {
  label: string;
  recall: Partial<Settings['recall']>;
}

/** Each component of recall and the settings that turn it off. */
export const COMPONENTS: readonly AblationConfiguration[] = [
  { label: 'BM25 b 0.3 (→ 0.75)', recall: { fullTextB: 0.75 } },
  { label: 'query coverage (→ 0)', recall: { fullTextCoverage: 0 } },
  { label: 'recency floor 0.5 (→ 0, SPEC product)', recall: { recencyFloor: 0 } },
  { label: 'recency (→ none)', recall: { recencyFloor: 1 } },
  { label: 'neighbour turns (source)', recall: { contextNeighbourWeight: 0 } },
  { label: 'same session (source)', recall: { contextSessionWeight: 0 } },
  { label: 'same sitting (no source)', recall: { contextSittingWeight: 0 } },
  { label: 'sitting lends by strength (→ flat)', recall: { contextSittingStrength: 0 } },
  { label: 'date named in question', recall: { dateWeight: 0 } },
  { label: '"when" questions', recall: { timeMentionWeight: 0 } },
  { label: 'second hop', recall: { secondHopWeight: 0 } },
  { label: 'diversity', recall: { duplicateSimilarity: 1 } },
];

/** The sets, each a dataset with the cut-off its verdict is read at and a half of each query. */
interface AblationSet {
  name: string;
  dataset: EvalDataset;
  /** The cut-offs reported; the verdict reads the second. */
  ks: [number, number];
  half: (queryId: string) => string;
}

/** A configuration's per-query recall on one set, at both cut-offs. */
type PerQuery = Map<string, [number, number]>;

export interface AblationCell {
  /** Recall at the set's two cut-offs, with this configuration. */
  recall: [number, number];
  /** Change from the defaults at both cut-offs. */
  delta: [number, number];
  /** Paired standard error of the change at the second cut-off. */
  error: number;
  /** Change at the second cut-off on each half. */
  halves: Record<string, number>;
}

export interface AblationResult {
  sets: Array<{ name: string; queries: number; ks: [number, number]; defaults: [number, number] }>;
  rows: Array<{
    label: string;
    recall: Partial<Settings['recall']>;
    cells: Record<string, AblationCell>;
    verdict: string;
  }>;
  /** How far ranking by the question's words can reach on each set, at the defaults. */
  reach: Record<string, LexicalReach>;
}

/** The three sets (LongMemEval at both levels), or fewer when some data is absent. */
export function ablationSets(): AblationSet[] {
  const sets: AblationSet[] = [];
  try {
    const locomo = parseEvalDataset(
      convertLocomo(JSON.parse(readFileSync(LOCOMO_SOURCE, 'utf8')), { neutral: true }).lines.join('\n'),
    );
    const firstHalf = new Set(['conv-26', 'conv-30', 'conv-41', 'conv-42', 'conv-43']);
    sets.push({
      name: 'LoCoMo',
      dataset: locomo,
      ks: [5, 10],
      half: (id) => (firstHalf.has(id.slice(0, id.lastIndexOf(':'))) ? 'tuning' : 'held out'),
    });
  } catch {
    console.log('Ablation: LoCoMo absent.');
  }
  const memoryBank = readMemoryBank();
  if (memoryBank) {
    const dataset = parseEvalDataset(memoryBank.lines.join('\n'));
    const users = [...new Set(dataset.queries.map((query) => query.scope))].sort();
    sets.push({
      name: 'MemoryBank',
      dataset,
      ks: [3, 5],
      half: (id) => {
        const scope = dataset.queries.find((query) => query.id === id)!.scope;
        return users.indexOf(scope) % 2 === 0 ? 'a' : 'b';
      },
    });
  }
  const questions = readLongMemEvalQuestions();
  if (questions) {
    for (const level of ['turn', 'session'] as const) {
      const { dataset } = longMemEvalDataset(questions, level);
      sets.push({ name: `LongMemEval ${level}`, dataset, ks: [5, 10], half: longMemEvalHalf(dataset) });
    }
  }
  return sets;
}

async function perQuery(set: AblationSet, recall: Partial<Settings['recall']>): Promise<PerQuery> {
  return (await rankedPerQuery(set, recall)).figures;
}

/** `perQuery` with each question's ranking (ids, best first). */
async function rankedPerQuery(
  set: AblationSet,
  recall: Partial<Settings['recall']>,
): Promise<{ figures: PerQuery; rankings: Map<string, string[]> }> {
  const settings: Settings = { ...DEFAULT_SETTINGS, recall: { ...DEFAULT_SETTINGS.recall, ...recall } };
  // Recall runs at the largest cut-off the bench reports for the set (top_k 25, MemoryBank 10), as the
  // bench's own parts do: the candidate pool and the signals' windows follow top_k.
  const report = await runEval(set.dataset, {
    ks: [...set.ks, set.name === 'MemoryBank' ? 10 : 25],
    settings,
    includeQueries: true,
  });
  const figures: PerQuery = new Map(
    report.queries!.map((query) => {
      const relevant = new Set(query.relevant);
      return [query.id, [recallAtK(query.ranking, relevant, set.ks[0]), recallAtK(query.ranking, relevant, set.ks[1])]];
    }),
  );
  return { figures, rankings: new Map(report.queries!.map((query) => [query.id, query.ranking])) };
}

function cell(set: AblationSet, base: PerQuery, changed: PerQuery): AblationCell {
  const ids = [...base.keys()];
  const differences = ids.map((id) => changed.get(id)![1] - base.get(id)![1]);
  const average = mean(differences);
  const variance = mean(differences.map((difference) => (difference - average) ** 2));
  const halves: Record<string, number> = {};
  for (const half of new Set(ids.map(set.half))) {
    const inHalf = ids.filter((id) => set.half(id) === half);
    halves[half] = round(mean(inHalf.map((id) => changed.get(id)![1] - base.get(id)![1])));
  }
  const at = (index: 0 | 1, of: PerQuery): number => mean(ids.map((id) => of.get(id)![index]));
  return {
    recall: [round(at(0, changed)), round(at(1, changed))],
    delta: [round(at(0, changed) - at(0, base)), round(at(1, changed) - at(1, base))],
    error: round(Math.sqrt(variance / Math.max(1, ids.length - 1))),
    halves,
  };
}

/**
 * The verdict on a component from the change its removal makes (negative: the component helps).
 * LongMemEval's two levels count as one set (their mean change).
 */
export function verdict(cells: Record<string, AblationCell>): string {
  const change = new Map<string, { delta: number; error: number }>();
  for (const [name, value] of Object.entries(cells)) {
    const set = name.startsWith('LongMemEval') ? 'LongMemEval' : name;
    const previous = change.get(set);
    change.set(
      set,
      previous
        ? { delta: (previous.delta + value.delta[1]) / 2, error: Math.hypot(previous.error, value.error) / 2 }
        : { delta: value.delta[1], error: value.error },
    );
  }
  const helps = [...change].filter(([, value]) => value.delta < 0).map(([set]) => set);
  const hurts = [...change].filter(([, value]) => value.delta > 2 * value.error && value.delta > 0.001);
  const inert = [...change].every(([, value]) => Math.abs(value.delta) < 0.0005);
  if (inert) return 'no effect on any set';
  if (hurts.length > 0) return `hurts ${hurts.map(([set]) => set).join(', ')} beyond noise`;
  return helps.length >= 2 ? `helps ${helps.join(', ')}` : `helps ${helps.join(', ') || 'no set'} only`;
}

/** Runs the defaults and each configuration on every set and prints the table. */
export async function benchRecallAblation(
  configurations: readonly AblationConfiguration[] = COMPONENTS,
): Promise<AblationResult | undefined> {
  const sets = ablationSets();
  if (sets.length === 0) {
    console.log('\nAblation: skipped, no dataset under ../shared/data.');
    return undefined;
  }
  const bases = new Map<string, PerQuery>();
  const reach: Record<string, LexicalReach> = {};
  for (const set of sets) {
    const { figures, rankings } = await rankedPerQuery(set, {});
    bases.set(set.name, figures);
    reach[set.name] = lexicalReach(set.dataset, rankings, set.ks[1]);
  }
  printReach(reach);
  console.log(
    `ablation defaults: ${sets.map((set) => `${set.name} R@${set.ks.join('/')} ${[0, 1].map((index) => round(mean([...bases.get(set.name)!.values()].map((value) => value[index as 0 | 1]))).toFixed(3)).join('/')}`).join('; ')}`,
  );
  const result: AblationResult = {
    sets: sets.map((set) => {
      const base = [...bases.get(set.name)!.values()];
      return {
        name: set.name,
        queries: base.length,
        ks: set.ks,
        defaults: [round(mean(base.map((value) => value[0]))), round(mean(base.map((value) => value[1])))],
      };
    }),
    rows: [],
    reach,
  };
  for (const configuration of configurations) {
    const cells: Record<string, AblationCell> = {};
    for (const set of sets)
      cells[set.name] = cell(set, bases.get(set.name)!, await perQuery(set, configuration.recall));
    result.rows.push({ label: configuration.label, recall: configuration.recall, cells, verdict: verdict(cells) });
    // Each row as it is measured: the whole table takes minutes.
    console.log(
      `ablation: ${configuration.label}: ${Object.entries(cells)
        .map(
          ([name, value]) => `${name} Δ ${signed(value.delta[0])}/${signed(value.delta[1])} ±${value.error.toFixed(3)}`,
        )
        .join('; ')} → ${verdict(cells)}`,
    );
  }
  printAblation(result);
  return result;
}

function printAblation(result: AblationResult): void {
  if (result.rows.length === 0) return;
  console.log(
    `\nRecall ablation, no embedder: each row turns one component off; Δ = off − defaults (negative: the component helps), ± paired standard error`,
  );
  console.log(
    `Defaults: ${result.sets.map((set) => `${set.name} R@${set.ks[0]}/${set.ks[1]} ${set.defaults.join('/')} (${set.queries} q)`).join('; ')}`,
  );
  console.table(
    result.rows.map((row) => {
      const line: Record<string, string> = { 'component off': row.label };
      for (const set of result.sets) {
        const value = row.cells[set.name]!;
        line[`${set.name} ΔR@${set.ks[1]}`] = `${signed(value.delta[1])} ±${value.error.toFixed(3)}`;
        line[`${set.name} halves`] = Object.values(value.halves).map(signed).join(' ');
      }
      line.verdict = row.verdict;
      return line;
    }),
  );
}

function printReach(reach: Record<string, LexicalReach>): void {
  console.log(
    `\nWhat words can reach, at the defaults: evidence by how many of the question's rare words it holds; "outmatched": missed with at least k memories holding as much of the question`,
  );
  console.table(
    Object.entries(reach).flatMap(([name, figures]) =>
      figures.groups.map((group) => ({
        set: `${name} (top ${figures.k})`,
        'rare words shared': group.rareWordsShared,
        'share of evidence': group.share,
        'in top k': group.inTopK,
        missed: group.missed,
        outmatched: group.outmatched,
      })),
    ),
  );
  for (const [name, figures] of Object.entries(reach))
    console.log(
      `${name}: R@${figures.k} ${figures.recall}; were every piece holding 2+ rare words in the top ${figures.k}: ${figures.ifTwoOrMoreIn}; 1+: ${figures.ifOneOrMoreIn}`,
    );
}

function signed(value: number): string {
  return `${value >= 0 ? '+' : ''}${value.toFixed(3)}`;
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const configurations = process.argv[2] ? (JSON.parse(process.argv[2]) as AblationConfiguration[]) : COMPONENTS;
  await benchRecallAblation(configurations);
}
