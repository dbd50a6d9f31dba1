/**
 * Converts LoCoMo (`../shared/data/locomo/locomo10.json`, format in `../shared/data/README.md`) to
 * engram's evaluation format: each conversation its own scope, each dialog turn a memory, each
 * question a query tagged with its category.
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
import { MONTHS } from '../src/kernel/calendar-words.js';

/** LoCoMo's category numbers; NOT the paper's column order. */
export const LOCOMO_CATEGORIES: Readonly<Record<number, string>> = {
  1: 'multi-hop',
  2: 'temporal',
  3: 'open-domain',
  4: 'single-hop',
  5: 'adversarial',
};

/** What the conversion found and had to normalize. */
export interface LocomoConversionReport {
  conversations: number;
  sessions: number;
  turns: number;
  captionedTurns: number;
  questions: number;
  /** Questions whose evidence list was empty in the source. */
  questionsWithoutEvidence: number;
  /** Evidence strings that needed normalizing ("D8:6; D9:17", "D:11:26", "D30:05", space-joined lists). */
  normalizedEvidence: number;
  /** Evidence ids that resolve to no turn after normalizing, as `<sample_id>:<id>`. */
  droppedEvidence: string[];
  /** Questions that had evidence but lost all of it to dropping. */
  questionsLosingAllEvidence: number;
}

interface LocomoTurn {
  speaker: string;
  dia_id: string;
  text: string;
  blip_caption?: string;
}

export interface LocomoConversionOptions {
  /**
   * Write each turn as an import or a person would: its content (speaker, words, image caption) and
   * its date, with no `source` (session and turn) and no made-up description (engram derives one from
   * the content). Recall then cannot borrow from adjacent turns or read the day off the description,
   * as with most real memories.
   */
  neutral?: boolean;
}

/** Converts parsed `locomo10.json` to evaluation lines (memory lines, then query lines) and a report. */
export function convertLocomo(
  data: unknown,
  options: LocomoConversionOptions = {},
): { lines: string[]; report: LocomoConversionReport } {
  if (!Array.isArray(data)) throw new Error('LoCoMo data is a JSON array of conversations.');
  const lines: string[] = [];
  const report: LocomoConversionReport = {
    conversations: 0,
    sessions: 0,
    turns: 0,
    captionedTurns: 0,
    questions: 0,
    questionsWithoutEvidence: 0,
    normalizedEvidence: 0,
    droppedEvidence: [],
    questionsLosingAllEvidence: 0,
  };
  for (const sample of data as Array<Record<string, any>>) {
    const sampleId = String(sample.sample_id);
    const scope = `project:locomo-${sampleId}`;
    const conversation = sample.conversation as Record<string, unknown>;
    const turnIds = new Set<string>();
    report.conversations += 1;
    // Only the session_N keys that hold turns: conv-26 has dates for sessions without any.
    const sessionNumbers = Object.keys(conversation)
      .map((key) => /^session_(\d+)$/.exec(key)?.[1])
      .filter((number): number is string => number !== undefined && Array.isArray(conversation[`session_${number}`]))
      .map(Number)
      .sort((a, b) => a - b);
    for (const session of sessionNumbers) {
      const turns = conversation[`session_${session}`] as LocomoTurn[];
      if (turns.length === 0) continue;
      const dateText = String(conversation[`session_${session}_date_time`] ?? '');
      const createdAt = parseLocomoDate(dateText);
      report.sessions += 1;
      for (const turn of turns) {
        const diaId = normalizeDialogId(turn.dia_id);
        if (diaId === undefined) throw new Error(`${sampleId}: malformed dia_id ${JSON.stringify(turn.dia_id)}.`);
        turnIds.add(diaId);
        report.turns += 1;
        const caption =
          typeof turn.blip_caption === 'string' && turn.blip_caption.trim() !== ''
            ? turn.blip_caption.trim()
            : undefined;
        if (caption) report.captionedTurns += 1;
        const content = `${turn.speaker}: ${turn.text}${caption ? ` [shared ${caption}]` : ''}`;
        lines.push(
          JSON.stringify(
            options.neutral
              ? { kind: 'memory', id: `${sampleId}:${diaId}`, scope, content, created_at: createdAt }
              : {
                  kind: 'memory',
                  id: `${sampleId}:${diaId}`,
                  scope,
                  description: `${turn.speaker}, ${dayOf(dateText)}`,
                  content,
                  created_at: createdAt,
                  // Where the turn was said, as engram records it for memories written from a conversation.
                  source: { sessionId: `${sampleId}:session_${session}`, turnId: diaId },
                },
          ),
        );
      }
    }
    for (const [index, qa] of (sample.qa as Array<Record<string, unknown>>).entries()) {
      report.questions += 1;
      const evidence = Array.isArray(qa.evidence) ? (qa.evidence as unknown[]).map(String) : [];
      if (evidence.length === 0) report.questionsWithoutEvidence += 1;
      const relevant = new Set<string>();
      for (const raw of evidence) {
        const pieces = raw.split(/[;,\s]+/).filter((piece) => piece !== '');
        const normalized = pieces.map(normalizeDialogId);
        if (pieces.length !== 1 || normalized[0] !== raw) report.normalizedEvidence += 1;
        for (const [pieceIndex, id] of normalized.entries()) {
          if (id !== undefined && turnIds.has(id)) relevant.add(`${sampleId}:${id}`);
          else report.droppedEvidence.push(`${sampleId}:${id ?? pieces[pieceIndex]}`);
        }
      }
      if (evidence.length > 0 && relevant.size === 0) report.questionsLosingAllEvidence += 1;
      const category = LOCOMO_CATEGORIES[Number(qa.category)] ?? `category-${String(qa.category)}`;
      lines.push(
        JSON.stringify({
          kind: 'query',
          id: `${sampleId}:q${index + 1}`,
          scope,
          query: String(qa.question),
          relevant: [...relevant],
          tags: [category],
        }),
      );
    }
  }
  return { lines, report };
}

/** `D30:05` → `D30:5`, `D:11:26` → `D11:26`; undefined for what is no dialog id (`D`). */
export function normalizeDialogId(raw: string): string | undefined {
  const match = /^D:?(\d+):(\d+)$/.exec(raw.trim());
  if (!match) return undefined;
  return `D${Number(match[1])}:${Number(match[2])}`;
}

/** "1:56 pm on 8 May, 2023" → "2023-05-08T13:56:00.000Z" (LoCoMo gives no time zone; UTC is assumed). */
export function parseLocomoDate(text: string): string {
  const match = /^(\d{1,2}):(\d{2})\s*(am|pm)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})$/i.exec(text.trim());
  const month = match ? MONTHS.indexOf(match[5]!.toLowerCase()) : -1;
  if (!match || month === -1) throw new Error(`Unrecognized LoCoMo session date ${JSON.stringify(text)}.`);
  const hour = (Number(match[1]) % 12) + (match[3]!.toLowerCase() === 'pm' ? 12 : 0);
  return new Date(Date.UTC(Number(match[6]), month, Number(match[4]), hour, Number(match[2]))).toISOString();
}

/** "1:56 pm on 8 May, 2023" → "8 May 2023": the day, as people write it in questions. */
function dayOf(text: string): string {
  const match = /on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})/i.exec(text);
  return match ? `${match[1]} ${match[2]} ${match[3]}` : text;
}

/** Where the bench and the script look for LoCoMo, and write the converted file (gitignored). */
export const REPOSITORY_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const LOCOMO_SOURCE = resolve(REPOSITORY_ROOT, '../shared/data/locomo/locomo10.json');
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
