import { DEFAULT_SETTINGS } from '../kernel/settings.js';
import {
  addRepairs,
  repairNotes,
  repairTurnText,
  scopeIdFrom,
  type BenchmarkConversion,
  type TextRepairs,
} from './benchmark-text.js';

/**
 * Reads LongMemEval (Wu et al., ICLR 2025) as published: a JSON array of questions, or one question
 * object, each with its own haystack of user–assistant sessions, and writes engram's evaluation
 * lines by the benchmark's own retrieval rules. Only user turns are indexed; a memory is a user turn
 * (level `turn`) or the user turns of one session (level `session`); a turn is evidence when it has
 * `has_answer: true`, a session when one of its user turns has. Each question's haystack is its own
 * scope, its memories dated by `haystack_dates`, and the question is asked at `question_date`.
 * Abstention questions (id ending in `_abs`) and questions without user-side evidence are left out
 * of the scores. Memories are written neutrally (content and date, no source, no description).
 */
export type LongMemEvalLevel = 'turn' | 'session';

export const LONGMEMEVAL_LEVELS: readonly LongMemEvalLevel[] = ['turn', 'session'];

export interface LongMemEvalOptions {
  /** A memory per user turn (default) or per session. */
  level?: LongMemEvalLevel;
  /** Longest memory text in UTF-8 bytes; longer text is cut and reported. Default `memory.maxContentBytes`. */
  maxContentBytes?: number;
}

interface Counts {
  questions: number;
  scored: number;
  abstention: number;
  withoutUserEvidence: number;
  malformedQuestions: number;
  sessions: number;
  userTurns: number;
  assistantTurns: number;
  memories: number;
  emptyTurns: number;
  malformedTurns: number;
  otherRoles: number;
  undatedSessions: number;
  undatedQuestions: number;
  duplicateIds: number;
}

// "2023/05/20 (Sat) 00:31": the weekday is optional and ignored; UTC is assumed (none is given).
const LONGMEMEVAL_DATE = /^(\d{4})\/(\d{1,2})\/(\d{1,2})(?:\s*\([A-Za-z]{2,9}\))?(?:\s+(\d{1,2}):(\d{2}))?$/;

/** "2023/05/20 (Sat) 00:31" → "2023-05-20T00:31:00.000Z"; undefined when it is not such a date. */
export function parseLongMemEvalDate(text: unknown): string | undefined {
  if (typeof text !== 'string') return undefined;
  const match = LONGMEMEVAL_DATE.exec(text.trim());
  if (!match) return undefined;
  const [year, month, day, hour, minute] = match.slice(1).map((part) => (part === undefined ? 0 : Number(part)));
  const date = new Date(Date.UTC(year!, month! - 1, day!, hour!, minute!));
  // Date.UTC rolls 2023/02/31 into March: a date that does not exist is no date.
  if (date.getUTCMonth() !== month! - 1 || date.getUTCDate() !== day! || hour! > 23 || minute! > 59) return undefined;
  return date.toISOString();
}

/** Converts parsed LongMemEval data (an array of questions, or one) to evaluation lines and a report. */
export function convertLongMemEval(data: unknown, options: LongMemEvalOptions = {}): BenchmarkConversion {
  const level = options.level ?? 'turn';
  const maxBytes = options.maxContentBytes ?? DEFAULT_SETTINGS.memory.maxContentBytes;
  const questions = Array.isArray(data) ? data : [data];
  const counts: Counts = {
    questions: 0,
    scored: 0,
    abstention: 0,
    withoutUserEvidence: 0,
    malformedQuestions: 0,
    sessions: 0,
    userTurns: 0,
    assistantTurns: 0,
    memories: 0,
    emptyTurns: 0,
    malformedTurns: 0,
    otherRoles: 0,
    undatedSessions: 0,
    undatedQuestions: 0,
    duplicateIds: 0,
  };
  const repairs = { controls: 0, surrogates: 0, clippedBytes: 0, clippedTurns: 0 };
  const withoutEvidenceByType = new Map<string, number>();
  const memoryLines: string[] = [];
  const queryLines: string[] = [];
  const usedScopes = new Set<string>();
  const clean = (raw: string): string => {
    const repaired = repairTurnText(raw, maxBytes);
    addRepairs(repairs, repaired.repairs);
    return repaired.text;
  };

  questions.forEach((record, index) => {
    counts.questions += 1;
    if (record === null || typeof record !== 'object' || Array.isArray(record)) {
      counts.malformedQuestions += 1;
      return;
    }
    const question = record as Record<string, unknown>;
    const sessions = question.haystack_sessions;
    const asked = typeof question.question === 'string' ? clean(question.question) : '';
    if (!Array.isArray(sessions) || asked === '') {
      counts.malformedQuestions += 1;
      return;
    }
    const questionId =
      typeof question.question_id === 'string' && question.question_id.trim() !== ''
        ? question.question_id.trim()
        : `question-${index + 1}`;
    if (questionId.endsWith('_abs')) {
      counts.abstention += 1;
      return;
    }
    let key = scopeIdFrom(questionId);
    if (usedScopes.has(key)) {
      counts.duplicateIds += 1;
      let suffix = 2;
      while (usedScopes.has(`${key}-${suffix}`)) suffix += 1;
      key = `${key}-${suffix}`;
    }
    usedScopes.add(key);
    const scope = `project:longmemeval-${key}`;
    const dates = Array.isArray(question.haystack_dates) ? question.haystack_dates : [];
    const relevant: string[] = [];
    const lines: string[] = [];
    sessions.forEach((session, sessionIndex) => {
      counts.sessions += 1;
      const createdAt = parseLongMemEvalDate(dates[sessionIndex]);
      if (createdAt === undefined) counts.undatedSessions += 1;
      const userTurns: Array<{ number: number; text: string; evidence: boolean }> = [];
      (Array.isArray(session) ? session : []).forEach((turn, turnIndex) => {
        if (turn === null || typeof turn !== 'object' || typeof (turn as { content?: unknown }).content !== 'string') {
          counts.malformedTurns += 1;
          return;
        }
        const {
          role,
          content,
          has_answer: hasAnswer,
        } = turn as { role?: unknown; content: string; has_answer?: unknown };
        if (role === 'assistant') {
          counts.assistantTurns += 1;
          return;
        }
        if (role !== 'user') {
          counts.otherRoles += 1;
          return;
        }
        counts.userTurns += 1;
        const text = clean(content);
        if (text === '') {
          counts.emptyTurns += 1;
          return;
        }
        userTurns.push({ number: turnIndex + 1, text, evidence: hasAnswer === true });
      });
      if (!Array.isArray(session)) counts.malformedTurns += 1;
      const memory = (id: string, content: string): string =>
        JSON.stringify({ kind: 'memory', id, scope, content, ...(createdAt && { created_at: createdAt }) });
      if (level === 'turn') {
        for (const turn of userTurns) {
          const id = `${key}:${sessionIndex + 1}:${turn.number}`;
          lines.push(memory(id, turn.text));
          if (turn.evidence) relevant.push(id);
        }
      } else if (userTurns.length > 0) {
        const id = `${key}:${sessionIndex + 1}`;
        const joined = userTurns.map((turn) => turn.text).join('\n\n');
        lines.push(memory(id, clean(joined)));
        if (userTurns.some((turn) => turn.evidence)) relevant.push(id);
      }
    });
    counts.memories += lines.length;
    memoryLines.push(...lines);
    const type = typeof question.question_type === 'string' ? question.question_type : 'untyped';
    if (relevant.length === 0) {
      counts.withoutUserEvidence += 1;
      withoutEvidenceByType.set(type, (withoutEvidenceByType.get(type) ?? 0) + 1);
      return;
    }
    const at = parseLongMemEvalDate(question.question_date);
    if (at === undefined) counts.undatedQuestions += 1;
    counts.scored += 1;
    queryLines.push(
      JSON.stringify({ kind: 'query', id: key, scope, query: asked, relevant, tags: [type], ...(at && { at }) }),
    );
  });

  const notes: string[] = [];
  if (counts.abstention > 0)
    notes.push(`${counts.abstention} abstention question(s) (_abs) left out: they have no evidence.`);
  if (counts.withoutUserEvidence > 0)
    notes.push(
      `${counts.withoutUserEvidence} question(s) without user-side evidence left out (${[...withoutEvidenceByType]
        .map(([type, count]) => `${type} ${count}`)
        .join(', ')}).`,
    );
  if (counts.malformedQuestions > 0)
    notes.push(`${counts.malformedQuestions} question record(s) without a question or haystack_sessions left out.`);
  if (counts.duplicateIds > 0) notes.push(`${counts.duplicateIds} repeated question_id(s) given a suffix.`);
  if (counts.emptyTurns > 0) notes.push(`${counts.emptyTurns} empty user turn(s) left out.`);
  if (counts.malformedTurns > 0)
    notes.push(`${counts.malformedTurns} turn(s) or session(s) that are not {role, content} left out.`);
  if (counts.otherRoles > 0)
    notes.push(`${counts.otherRoles} turn(s) of a role other than user or assistant left out.`);
  if (counts.undatedSessions > 0)
    notes.push(
      `${counts.undatedSessions} session(s) without a readable haystack date: their memories are dated at the evaluation's clock.`,
    );
  if (counts.undatedQuestions > 0)
    notes.push(
      `${counts.undatedQuestions} question(s) without a readable question_date: asked at the evaluation's clock.`,
    );
  notes.push(...repairNotes(repairs, maxBytes));
  return {
    lines: [...memoryLines, ...queryLines],
    report: { format: 'longmemeval', counts: { ...counts, ...repairs }, notes },
  };
}
