/**
 * Relative dates rewritten as absolute ones (SPEC §3 consolidation): "yesterday" in a memory
 * written on 10 March 2026 becomes "9 March 2026", so the memory still says the right thing a
 * month later. Rules only (no model): the words engram knows, counted from the memory's source
 * time (its creation), in UTC. Text inside backticks is left alone (code, commands, paths).
 */

import { capitalized, MONTHS, NUMBER_WORDS, WEEKDAYS, wordAlternation } from '../kernel/calendar-words.js';

const DAY_MS = 86_400_000;
/** One rewrite made: the words found and what replaced them. */
export interface DateRewrite {
  from: string;
  to: string;
}

/** "9 March 2026": how an absolute date is written back into a memory. */
export function formatAbsoluteDate(time: number): string {
  const date = new Date(time);
  return `${date.getUTCDate()} ${capitalized(MONTHS[date.getUTCMonth()]!)} ${date.getUTCFullYear()}`;
}

function startOfDay(time: number): number {
  return Math.floor(time / DAY_MS) * DAY_MS;
}

function weekday(time: number): string {
  return capitalized(WEEKDAYS[new Date(time).getUTCDay()]!);
}

const PREPOSITIONS = new Set(['on', 'by', 'until', 'till', 'since', 'from', 'before', 'after', 'to', 'for', 'of']);
const COUNT = `(\\d{1,3}|${wordAlternation(NUMBER_WORDS.keys())})`;
const WEEKDAY = `(${WEEKDAYS.join('|')})`;
// Longest phrases first, so "the day before yesterday" is not read as "yesterday".
const PATTERN = new RegExp(
  [
    '\\bthe day before yesterday\\b',
    '\\bthe day after tomorrow\\b',
    `\\b${COUNT} (days?|weeks?) ago\\b`,
    `\\b(?:in) ${COUNT} (days?|weeks?)\\b`,
    `\\b(last|next|this) ${WEEKDAY}\\b`,
    '\\b(last|next|this) week\\b',
    '\\b(this|yesterday|tomorrow) (morning|afternoon|evening)\\b',
    '\\blast night\\b',
    '\\btonight\\b',
    '\\byesterday\\b',
    '\\btoday\\b',
    '\\btomorrow\\b',
  ].join('|'),
  'gi',
);

/** The absolute form of one relative phrase, from the day the memory was written; undefined when it is not one. */
function absolute(phrase: string, day: number): string | undefined {
  const text = phrase.toLowerCase();
  const on = (offsetDays: number): string => formatAbsoluteDate(day + offsetDays * DAY_MS);
  if (text === 'the day before yesterday') return on(-2);
  if (text === 'the day after tomorrow') return on(2);
  if (text === 'yesterday' || text === 'last night') return on(-1);
  if (text === 'today' || text === 'tonight') return on(0);
  if (text === 'tomorrow') return on(1);
  let match = /^(\S+) (days?|weeks?) ago$/.exec(text);
  if (match) {
    const count = countOf(match[1]!);
    return count === undefined ? undefined : on(-count * (match[2]!.startsWith('week') ? 7 : 1));
  }
  match = /^in (\S+) (days?|weeks?)$/.exec(text);
  if (match) {
    const count = countOf(match[1]!);
    return count === undefined ? undefined : on(count * (match[2]!.startsWith('week') ? 7 : 1));
  }
  match = /^(last|next|this) (\w+)$/.exec(text);
  if (match && match[2] === 'week') {
    const monday = day - ((new Date(day).getUTCDay() + 6) % 7) * DAY_MS;
    const offset = match[1] === 'last' ? -7 : match[1] === 'next' ? 7 : 0;
    return `the week of ${formatAbsoluteDate(monday + offset * DAY_MS)}`;
  }
  if (match && WEEKDAYS.includes(match[2]!)) {
    const target = WEEKDAYS.indexOf(match[2]!);
    const today = new Date(day).getUTCDay();
    let offset: number;
    if (match[1] === 'last') offset = -((today - target + 7) % 7 || 7);
    else if (match[1] === 'next') offset = (target - today + 7) % 7 || 7;
    else offset = (target - today + 7) % 7;
    const date = day + offset * DAY_MS;
    return `${weekday(date)} ${formatAbsoluteDate(date)}`;
  }
  match = /^(this|yesterday|tomorrow) (morning|afternoon|evening)$/.exec(text);
  if (match) return `the ${match[2]} of ${on(match[1] === 'yesterday' ? -1 : match[1] === 'tomorrow' ? 1 : 0)}`;
  return undefined;
}

function countOf(word: string): number | undefined {
  const count = /^\d+$/.test(word) ? Number(word) : NUMBER_WORDS.get(word);
  return count !== undefined && count > 0 && count <= 366 ? count : undefined;
}

/**
 * Rewrites the relative dates of `text` as absolute ones counted from `sourceTime` (ISO-8601), in
 * UTC; what is inside backticks is kept. Returns the text unchanged (and no rewrites) when there
 * is nothing to rewrite.
 */
export function rewriteRelativeDates(text: string, sourceTime: string): { text: string; rewrites: DateRewrite[] } {
  const time = Date.parse(sourceTime);
  if (!Number.isFinite(time)) return { text, rewrites: [] };
  const day = startOfDay(time);
  const rewrites: DateRewrite[] = [];
  const parts = text.split(/(`[^`\n]*`)/);
  const rewritten = parts.map((part, index) => {
    if (index % 2 === 1) return part;
    return part.replace(PATTERN, (phrase: string, ...rest: unknown[]) => {
      const offset = rest.at(-2) as number;
      let replacement = absolute(phrase, day);
      if (replacement === undefined) return phrase;
      // "was signed yesterday" → "was signed on 9 March 2026"; "due by tomorrow" keeps its own preposition.
      const before = /(\w+)\s*$/.exec(part.slice(Math.max(0, offset - 24), offset))?.[1]?.toLowerCase();
      if (!replacement.startsWith('the ') && (before === undefined || !PREPOSITIONS.has(before)))
        replacement = `on ${replacement}`;
      const cased = /^[A-Z]/.test(phrase) ? replacement[0]!.toUpperCase() + replacement.slice(1) : replacement;
      rewrites.push({ from: phrase, to: cased });
      return cased;
    });
  });
  return rewrites.length === 0 ? { text, rewrites } : { text: rewritten.join(''), rewrites };
}
