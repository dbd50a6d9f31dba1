import { MONTHS } from '../kernel/calendar-words.js';
import { EngramError } from '../kernel/errors.js';
import { DEFAULT_SETTINGS } from '../kernel/settings.js';
import {
  addRepairs,
  repairNotes,
  repairTurnText,
  scopeIdFrom,
  type BenchmarkConversion,
  type BenchmarkReadReport,
} from './benchmark-text.js';

/**
 * Reads LoCoMo (Maharana et al., ACL 2024) as published (`locomo10.json`: an array of
 * conversations) and writes engram's evaluation lines by the benchmark's retrieval rules: each
 * conversation its own scope, each dialog turn a memory (speaker, words and the shared image's
 * caption), each question a query tagged with its category, its evidence the turns it names.
 * Evidence ids are normalized ("D8:6; D9:17", "D:11:26", "D30:05"); what names no turn is dropped
 * and counted. Malformed turns, empty turns and unreadable dates are counted, never fatal.
 */

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
  /** Turns left out: empty after cleaning. */
  emptyTurns: number;
  /** Turns left out: not an object with a dialog id (`D<session>:<turn>`) and text, or a repeated dialog id. */
  malformedTurns: number;
  /** Sessions whose date could not be read: their turns are dated at the evaluation's clock. */
  undatedSessions: number;
  /** Control characters replaced in turn text. */
  controlCharacters: number;
  /** Lone UTF-16 surrogates replaced with U+FFFD. */
  loneSurrogates: number;
  /** Memory texts cut to fit a memory, and the bytes left out. */
  clippedTurns: number;
  clippedBytes: number;
}

export interface LocomoConversionOptions {
  /**
   * Write each turn as an import or a person would (`engram eval --format locomo` does): its content
   * and its date, with no `source` (session and turn) and no made-up description, so recall cannot
   * borrow from adjacent turns or read the day off the description, as with most real memories.
   * Without it (the default), each turn carries its source session and turn and a description naming
   * speaker and day, as extraction records them (the bench's "with source" run).
   */
  neutral?: boolean;
  /** Longest memory text in UTF-8 bytes; longer text is cut and reported. Default `memory.maxContentBytes`. */
  maxContentBytes?: number;
}

interface LocomoTurn {
  speaker?: unknown;
  dia_id?: unknown;
  text?: unknown;
  blip_caption?: unknown;
}

/** Converts parsed `locomo10.json` (an array of conversations, or one) to evaluation lines and a report. */
export function convertLocomo(
  data: unknown,
  options: LocomoConversionOptions = {},
): { lines: string[]; report: LocomoConversionReport } {
  const samples = Array.isArray(data)
    ? data
    : data !== null && typeof data === 'object' && 'conversation' in data
      ? [data]
      : undefined;
  if (samples === undefined)
    throw new EngramError(
      'INVALID_INPUT',
      'LoCoMo data is a JSON array of conversations ({sample_id, conversation, qa}), as in locomo10.json.',
    );
  const maxBytes = options.maxContentBytes ?? DEFAULT_SETTINGS.memory.maxContentBytes;
  const neutral = options.neutral === true;
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
    emptyTurns: 0,
    malformedTurns: 0,
    undatedSessions: 0,
    controlCharacters: 0,
    loneSurrogates: 0,
    clippedTurns: 0,
    clippedBytes: 0,
  };
  const repairs = { controls: 0, surrogates: 0, clippedBytes: 0, clippedTurns: 0 };
  const clean = (raw: string): string => {
    const repaired = repairTurnText(raw, maxBytes);
    addRepairs(repairs, repaired.repairs);
    return repaired.text;
  };
  const usedScopes = new Set<string>();
  samples.forEach((raw, sampleIndex) => {
    if (raw === null || typeof raw !== 'object') return;
    const sample = raw as Record<string, unknown>;
    const sampleId =
      typeof sample.sample_id === 'string' || typeof sample.sample_id === 'number'
        ? String(sample.sample_id)
        : `conversation-${sampleIndex + 1}`;
    let key = scopeIdFrom(sampleId);
    while (usedScopes.has(key)) key = `${key}-${sampleIndex + 1}`;
    usedScopes.add(key);
    const scope = `project:locomo-${key}`;
    const conversation = (
      sample.conversation !== null && typeof sample.conversation === 'object' ? sample.conversation : {}
    ) as Record<string, unknown>;
    const turnIds = new Set<string>();
    report.conversations += 1;
    // Only the session_N keys that hold turns: conv-26 has dates for sessions without any.
    const sessionNumbers = Object.keys(conversation)
      .map((name) => /^session_(\d+)$/.exec(name)?.[1])
      .filter((number): number is string => number !== undefined && Array.isArray(conversation[`session_${number}`]))
      .map(Number)
      .sort((a, b) => a - b);
    for (const session of sessionNumbers) {
      const turns = conversation[`session_${session}`] as unknown[];
      if (turns.length === 0) continue;
      const dateText = String(conversation[`session_${session}_date_time`] ?? '');
      const createdAt = locomoDate(dateText);
      if (createdAt === undefined) report.undatedSessions += 1;
      report.sessions += 1;
      for (const entry of turns) {
        const turn = (entry !== null && typeof entry === 'object' ? entry : {}) as LocomoTurn;
        const diaId = typeof turn.dia_id === 'string' ? normalizeDialogId(turn.dia_id) : undefined;
        if (diaId === undefined || typeof turn.text !== 'string' || turnIds.has(diaId)) {
          report.malformedTurns += 1;
          continue;
        }
        const caption =
          typeof turn.blip_caption === 'string' && turn.blip_caption.trim() !== ''
            ? clean(turn.blip_caption)
            : undefined;
        const text = clean(turn.text);
        if (text === '' && !caption) {
          report.emptyTurns += 1;
          continue;
        }
        turnIds.add(diaId);
        report.turns += 1;
        if (caption) report.captionedTurns += 1;
        const speaker = typeof turn.speaker === 'string' && turn.speaker.trim() !== '' ? clean(turn.speaker) : '';
        const content = clean(`${speaker === '' ? '' : `${speaker}: `}${text}${caption ? ` [shared ${caption}]` : ''}`);
        const id = `${key}:${diaId}`;
        const dated = createdAt === undefined ? {} : { created_at: createdAt };
        lines.push(
          JSON.stringify(
            neutral
              ? { kind: 'memory', id, scope, content, ...dated }
              : {
                  kind: 'memory',
                  id,
                  scope,
                  description: `${speaker || 'someone'}, ${dayOf(dateText)}`.slice(0, 300),
                  content,
                  ...dated,
                  // Where the turn was said, as engram records it for memories written from a conversation.
                  source: { sessionId: `${key}:session_${session}`, turnId: diaId },
                },
          ),
        );
      }
    }
    const qa = Array.isArray(sample.qa) ? sample.qa : [];
    for (const [index, entry] of qa.entries()) {
      report.questions += 1;
      const question = (entry !== null && typeof entry === 'object' ? entry : {}) as Record<string, unknown>;
      const evidence = Array.isArray(question.evidence) ? question.evidence.map(String) : [];
      if (evidence.length === 0) report.questionsWithoutEvidence += 1;
      const relevant = new Set<string>();
      for (const rawEvidence of evidence) {
        const pieces = rawEvidence.split(/[;,\s]+/).filter((piece) => piece !== '');
        const normalized = pieces.map(normalizeDialogId);
        if (pieces.length !== 1 || normalized[0] !== rawEvidence) report.normalizedEvidence += 1;
        for (const [pieceIndex, id] of normalized.entries()) {
          if (id !== undefined && turnIds.has(id)) relevant.add(`${key}:${id}`);
          else report.droppedEvidence.push(`${key}:${id ?? pieces[pieceIndex]}`);
        }
      }
      if (evidence.length > 0 && relevant.size === 0) report.questionsLosingAllEvidence += 1;
      const category = LOCOMO_CATEGORIES[Number(question.category)] ?? `category-${String(question.category)}`;
      lines.push(
        JSON.stringify({
          kind: 'query',
          id: `${key}:q${index + 1}`,
          scope,
          query: typeof question.question === 'string' ? clean(question.question) : '',
          relevant: [...relevant],
          tags: [category.slice(0, 100)],
        }),
      );
    }
  });
  report.controlCharacters = repairs.controls;
  report.loneSurrogates = repairs.surrogates;
  report.clippedTurns = repairs.clippedTurns;
  report.clippedBytes = repairs.clippedBytes;
  return { lines, report };
}

/** The report `engram eval` prints for a LoCoMo file. */
export function locomoReadReport(report: LocomoConversionReport, maxContentBytes?: number): BenchmarkReadReport {
  const notes: string[] = [];
  if (report.normalizedEvidence > 0)
    notes.push(`${report.normalizedEvidence} evidence string(s) normalized ("D8:6; D9:17", "D:11:26", "D30:05").`);
  if (report.droppedEvidence.length > 0)
    notes.push(
      `${report.droppedEvidence.length} evidence id(s) name no turn and were dropped (${report.droppedEvidence.slice(0, 5).join(', ')}${report.droppedEvidence.length > 5 ? ', …' : ''}).`,
    );
  if (report.questionsWithoutEvidence + report.questionsLosingAllEvidence > 0)
    notes.push(
      `${report.questionsWithoutEvidence} question(s) have no evidence and ${report.questionsLosingAllEvidence} lost all of theirs: left out of the scores.`,
    );
  if (report.emptyTurns > 0) notes.push(`${report.emptyTurns} empty turn(s) left out.`);
  if (report.malformedTurns > 0)
    notes.push(
      `${report.malformedTurns} turn(s) without a dialog id (D<session>:<turn>) and text, or repeating one, left out.`,
    );
  if (report.undatedSessions > 0)
    notes.push(
      `${report.undatedSessions} session(s) with an unreadable date: their turns are dated at the evaluation's clock.`,
    );
  const { droppedEvidence, ...counts } = report;
  return {
    format: 'locomo',
    counts: { ...counts, droppedEvidence: droppedEvidence.length },
    notes: [
      ...notes,
      ...repairNotes(
        {
          controls: report.controlCharacters,
          surrogates: report.loneSurrogates,
          clippedBytes: report.clippedBytes,
          clippedTurns: report.clippedTurns,
        },
        maxContentBytes ?? DEFAULT_SETTINGS.memory.maxContentBytes,
      ),
    ],
  };
}

/** Reads LoCoMo by the neutral rules and reports, for `engram eval --format locomo`. */
export function readLocomo(data: unknown, options: Omit<LocomoConversionOptions, 'neutral'> = {}): BenchmarkConversion {
  const { lines, report } = convertLocomo(data, { ...options, neutral: true });
  return { lines, report: locomoReadReport(report, options.maxContentBytes) };
}

/** `D30:05` → `D30:5`, `D:11:26` → `D11:26`; undefined for what is no dialog id (`D`). */
export function normalizeDialogId(raw: string): string | undefined {
  const match = /^D:?(\d+):(\d+)$/.exec(raw.trim());
  if (!match) return undefined;
  return `D${Number(match[1])}:${Number(match[2])}`;
}

/** "1:56 pm on 8 May, 2023" → "2023-05-08T13:56:00.000Z" (LoCoMo gives no time zone; UTC is assumed). */
export function parseLocomoDate(text: string): string {
  const date = locomoDate(text);
  if (date === undefined) throw new Error(`Unrecognized LoCoMo session date ${JSON.stringify(text)}.`);
  return date;
}

function locomoDate(text: string): string | undefined {
  const match = /^(\d{1,2}):(\d{2})\s*(am|pm)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})$/i.exec(text.trim());
  const month = match ? MONTHS.indexOf(match[5]!.toLowerCase()) : -1;
  if (!match || month === -1) return undefined;
  const hour = (Number(match[1]) % 12) + (match[3]!.toLowerCase() === 'pm' ? 12 : 0);
  const date = new Date(Date.UTC(Number(match[6]), month, Number(match[4]), hour, Number(match[2])));
  return Number.isNaN(date.getTime()) ? undefined : date.toISOString();
}

/** "1:56 pm on 8 May, 2023" → "8 May 2023": the day, as people write it in questions. */
function dayOf(text: string): string {
  const match = /on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})/i.exec(text);
  return match ? `${match[1]} ${match[2]} ${match[3]}` : text;
}
