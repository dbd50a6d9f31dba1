/**
 * Converts LoCoMo (`../shared/data/locomo/locomo10.json`, format in `../shared/data/README.md`) to
 * engram's evaluation format (src/eval/locomo-dataset.ts): each conversation its own scope, each
 * dialog turn a memory, each question a query tagged with its category. `engram eval --format
 * locomo` reads the published file directly; this script writes the JSON Lines for other tools.
 *
 *   npx tsx scripts/locomo-to-jsonl.ts [--input locomo10.json] [--out bench/.data/locomo10.jsonl] [--neutral]
 *
 * With --neutral each turn is a memory as an import would write it: content and date only, no
 * source turn and no description (the figure that holds for memories without conversation context).
 *
 * The data is CC BY-NC 4.0 and never copied into the repository: the output goes to a gitignored path.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import {
  convertLocomo,
  type LocomoConversionOptions,
  type LocomoConversionReport,
} from '../src/eval/locomo-dataset.js';

// The conversion itself is engram's own (`engram eval --format locomo` reads the published file).
export {
  convertLocomo,
  LOCOMO_CATEGORIES,
  normalizeDialogId,
  parseLocomoDate,
  type LocomoConversionOptions,
  type LocomoConversionReport,
} from '../src/eval/locomo-dataset.js';

/** Where the bench and the script look for LoCoMo, and write the converted file (gitignored). */
export const REPOSITORY_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
/** The benchmark data: `../shared/data` beside the repository, or ENGRAM_BENCH_DATA (a checkout elsewhere). */
export const BENCH_DATA = resolve(REPOSITORY_ROOT, process.env.ENGRAM_BENCH_DATA ?? '../shared/data');
export const LOCOMO_SOURCE = resolve(BENCH_DATA, 'locomo/locomo10.json');
export const LOCOMO_OUTPUT = resolve(REPOSITORY_ROOT, 'bench/.data/locomo10.jsonl');
export const LOCOMO_NEUTRAL_OUTPUT = resolve(REPOSITORY_ROOT, 'bench/.data/locomo10-neutral.jsonl');

/** Reads, converts and writes; returns the report. */
export function convertLocomoFile(
  input: string = LOCOMO_SOURCE,
  output: string = LOCOMO_OUTPUT,
  options: LocomoConversionOptions = {},
): LocomoConversionReport {
  const { lines, report } = convertLocomo(JSON.parse(readFileSync(input, 'utf8')), options);
  mkdirSync(dirname(output), { recursive: true });
  writeFileSync(output, `${lines.join('\n')}\n`);
  return report;
}

/** A one-paragraph account of the conversion, for people. */
export function describeConversion(report: LocomoConversionReport): string {
  return [
    `${report.conversations} conversations, ${report.sessions} sessions, ${report.turns} turns (${report.captionedTurns} with an image caption), ${report.questions} questions.`,
    `Evidence: ${report.normalizedEvidence} strings normalized; ${report.droppedEvidence.length} ids point at no turn and were dropped (${report.droppedEvidence.slice(0, 10).join(', ')}).`,
    `${report.questionsWithoutEvidence} questions have no evidence; ${report.questionsLosingAllEvidence} lost all of theirs: ${report.questionsWithoutEvidence + report.questionsLosingAllEvidence} are skipped by the evaluation.`,
  ].join('\n');
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({
    options: { input: { type: 'string' }, out: { type: 'string' }, neutral: { type: 'boolean' } },
  });
  const output = resolve(values.out ?? (values.neutral ? LOCOMO_NEUTRAL_OUTPUT : LOCOMO_OUTPUT));
  const report = convertLocomoFile(resolve(values.input ?? LOCOMO_SOURCE), output, {
    neutral: values.neutral === true,
  });
  console.log(describeConversion(report));
  console.log(`wrote ${output}`);
}
