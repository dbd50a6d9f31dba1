import { EngramError } from '../kernel/errors.js';
import type { Memory } from '../memory/memory.js';
import { dateMatches, type QuestionDate } from './question-dates.js';
import { mentionsTime } from './time-expressions.js';

/**
 * Time-aware recall: a question that names a date favours memories written in it (or in the days
 * after: a fact about an event is said on or after the event), and a "when" question favours
 * memories that say when. Both multiply the full-text relevance of hits that already match the
 * question's words, so they re-order what full-text found and never add a match.
 */
export interface TimeWeights {
  /** Relevance × (1 + this) for a memory created within a date the question names; 0 = off. */
  dateWeight: number;
  /** Days after a named date during which a memory still counts as written in it. */
  dateAfterDays: number;
  /** Relevance × (1 + this) for a memory that mentions a time, when the question asks when; 0 = off. */
  timeMentionWeight: number;
}

/** What the question says about time: the dates it names and whether it asks when. */
export interface QuestionTime {
  dates: readonly QuestionDate[];
  asksWhen: boolean;
}

/** The factors time-aware recall multiplied a hit's relevance by (shown by `recall --explain`). */
export interface TimeSignals {
  /** The memory was written within a date the question names. */
  date?: number;
  /** The question asks when and the memory says when. */
  timeMention?: number;
}

/** Largest weight of a time signal. */
export const MAX_TIME_WEIGHT = 10;

const DAY_MS = 86_400_000;

/**
 * Multiplies the relevance of hits by their time signals and re-sorts them, best first (ties keep
 * their order). Hits without a signal keep their relevance; a question with nothing about time
 * returns the hits as they were.
 */
export function applyTimeSignals<T extends { memory: Memory; relevance: number }>(
  hits: readonly T[],
  time: QuestionTime,
  weights: TimeWeights,
): Array<T & { time?: TimeSignals }> {
  checkWeights(weights);
  const dated = weights.dateWeight > 0 && time.dates.length > 0;
  const when = weights.timeMentionWeight > 0 && time.asksWhen;
  if (!dated && !when) return [...hits];
  const afterMs = weights.dateAfterDays * DAY_MS;
  const weighed = hits.map((hit, index) => {
    const signals: TimeSignals = {};
    if (dated) {
      const created = Date.parse(hit.memory.createdAt);
      if (time.dates.some((date) => dateMatches(date, created, afterMs))) signals.date = 1 + weights.dateWeight;
    }
    if (when && memoryMentionsTime(hit.memory)) signals.timeMention = 1 + weights.timeMentionWeight;
    const factor = (signals.date ?? 1) * (signals.timeMention ?? 1);
    return { hit, index, relevance: hit.relevance * factor, signals: factor === 1 ? undefined : signals };
  });
  if (!weighed.some((entry) => entry.signals)) return [...hits];
  return weighed
    .sort((a, b) => b.relevance - a.relevance || a.index - b.index)
    .map(({ hit, relevance, signals }) => (signals ? { ...hit, relevance, time: signals } : { ...hit }));
}

// Whether a memory says when does not depend on the question: a frozen memory (a store hands the
// same ones to question after question) keeps the answer.
const MENTIONS_TIME = new WeakMap<Memory, boolean>();

function memoryMentionsTime(memory: Memory): boolean {
  let mentions = MENTIONS_TIME.get(memory);
  if (mentions === undefined) {
    mentions = mentionsTime(`${memory.description}\n${memory.content}`);
    if (Object.isFrozen(memory)) MENTIONS_TIME.set(memory, mentions);
  }
  return mentions;
}

function checkWeights(weights: TimeWeights): void {
  for (const [key, maximum] of [
    ['dateWeight', MAX_TIME_WEIGHT],
    ['dateAfterDays', 366],
    ['timeMentionWeight', MAX_TIME_WEIGHT],
  ] as const) {
    const value = weights[key];
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > maximum) {
      throw new EngramError(
        'CONFIG_INVALID',
        `Invalid time-aware recall ${key} ${JSON.stringify(value)}: a number from 0 to ${maximum}.`,
      );
    }
  }
}
