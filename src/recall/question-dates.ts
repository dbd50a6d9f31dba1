/**
 * Dates named in a question ("in July 2023", "on 13 October", "May 8th, 2023", "in 2022",
 * "yesterday", "last month") as time ranges, so recall can favour memories written in them: a
 * memory's creation date is when its fact was said, and a fact about an event is said on or after
 * the event. English only; what it cannot read it ignores (a question without a date it understands
 * is ranked as before). Pure: "now" comes from the caller.
 */

import { MONTH_INDEX, NUMBER_WORDS, WEEKDAYS, wordAlternation } from '../kernel/calendar-words.js';

/** A stretch of time a question names: [start, end) in epoch milliseconds, or one month of any year. */
export type QuestionDate =
  | { kind: 'range'; start: number; end: number; text: string }
  /** A month named without a year ("in June"): that month of any year. */
  | { kind: 'month-of-year'; month: number; text: string };

const MONTH = `(${wordAlternation(MONTH_INDEX.keys())})\\.?`;
const DAY = '(\\d{1,2})(?:st|nd|rd|th)?';
const YEAR = '((?:1[89]|2[01])\\d\\d)';

// Most specific first: a span read by one pattern is not read again by a later one.
const PATTERNS: ReadonlyArray<{ pattern: RegExp; read: (match: RegExpExecArray) => DateParts | undefined }> = [
  // 2023-05-08, 2023-05
  {
    pattern: new RegExp(`\\b${YEAR}-(\\d{2})(?:-(\\d{2}))?\\b`, 'g'),
    read: (m) => ({ year: Number(m[1]), month: Number(m[2]) - 1, ...(m[3] && { day: Number(m[3]) }) }),
  },
  // 8 May 2023, 8th of May, 2023, 8 May
  {
    pattern: new RegExp(`\\b${DAY}\\s+(?:of\\s+)?${MONTH}(?:,?\\s+${YEAR})?\\b`, 'g'),
    read: (m) => named(m[2]!, { day: Number(m[1]), year: m[3] }),
  },
  // May 8, 2023, May 8th, October 13
  {
    pattern: new RegExp(`\\b${MONTH}\\s+${DAY}(?!\\d)(?:,?\\s+${YEAR})?\\b`, 'g'),
    read: (m) => named(m[1]!, { day: Number(m[2]), year: m[3] }),
  },
  // May 2023, July of 2022
  { pattern: new RegExp(`\\b${MONTH},?\\s+(?:of\\s+)?${YEAR}\\b`, 'g'), read: (m) => named(m[1]!, { year: m[2] }) },
  // in June, during March, early August (a bare "may" or "march" is a verb, so a preposition must lead)
  {
    pattern: new RegExp(`\\b(?:in|during|since|until|through|throughout|early|late|mid|mid-)\\s+${MONTH}\\b`, 'g'),
    read: (m) => named(m[1]!, {}),
  },
  // in 2022, 2021's
  { pattern: new RegExp(`\\b${YEAR}\\b`, 'g'), read: (m) => ({ year: Number(m[1]) }) },
];

/** Phrases that name a stretch of time relative to now; read only when the question names no calendar date. */
const RELATIVE = /\b(today|tonight|yesterday|(?:this|last|past)\s+(week|weekend|month|year))\b/g;

const COUNT = `(\\d{1,3}|${wordAlternation([...NUMBER_WORDS.keys(), 'a few', 'a couple of', 'couple of', 'few', 'several'])})`;
const SPAN_UNIT = '(day|week|month)s?';
/** "two weeks ago", "a few days ago": about that long before now. */
const AGO = new RegExp(`\\b${COUNT}\\s+${SPAN_UNIT}\\s+ago\\b`, 'g');
/** "in the past two months", "over the last 3 weeks", "the past few days": from that long ago up to now. */
const PAST_SPAN = new RegExp(`\\b(?:past|last)\\s+${COUNT}\\s+${SPAN_UNIT}\\b`, 'g');
/** "last Saturday", "this past Friday", "on Tuesday": the latest such day before today. */
const WEEKDAY = new RegExp(`\\b(?:last|this\\s+past|past|on)\\s+(${wordAlternation(WEEKDAYS)})\\b`, 'g');
/** "two weeks before", "3 days after": a shift of the calendar date that follows. */
const SHIFT = new RegExp(
  `\\b${COUNT}\\s+${SPAN_UNIT}\\s+(before|after|prior\\s+to|earlier\\s+than)\\s+(?:on\\s+|the\\s+)?$`,
);
const UNIT_DAYS: Readonly<Record<string, number>> = { day: 1, week: 7, month: 30 };

interface DateParts {
  year?: number;
  month?: number;
  day?: number;
}

const DAY_MS = 86_400_000;

/**
 * The date ranges a question names, at most `limit` (default 4), in the order they appear. A
 * calendar date wins over relative phrases: "last weekend before April 10" is about April 10, not
 * about the weekend before now. Days are UTC days.
 */
export function questionDates(question: string, now: string, limit = 4): QuestionDate[] {
  const text = question.normalize('NFKC').toLowerCase();
  const taken: Array<[number, number]> = [];
  const found: Array<{ at: number; date: QuestionDate }> = [];
  for (const { pattern, read } of PATTERNS) {
    pattern.lastIndex = 0;
    for (let match = pattern.exec(text); match !== null; match = pattern.exec(text)) {
      const start = match.index;
      const end = start + match[0].length;
      if (taken.some(([from, to]) => start < to && end > from)) continue;
      const parts = read(match);
      const named = parts && toQuestionDate(parts, match[0].trim());
      if (!named) continue;
      const date = shifted(named, text.slice(Math.max(0, start - 40), start));
      taken.push([start, end]);
      found.push({ at: start, date });
    }
  }
  if (found.length === 0) {
    const reference = Date.parse(now);
    if (Number.isFinite(reference)) {
      for (const [pattern, read] of RELATIVE_READERS) {
        pattern.lastIndex = 0;
        for (let match = pattern.exec(text); match !== null; match = pattern.exec(text)) {
          const start = match.index;
          const end = start + match[0].length;
          if (taken.some(([from, to]) => start < to && end > from)) continue;
          const date = read(match, reference);
          if (!date) continue;
          taken.push([start, end]);
          found.push({ at: start, date });
        }
      }
    }
  }
  return found
    .sort((a, b) => a.at - b.at)
    .slice(0, limit)
    .map((entry) => entry.date);
}

/** Whether an instant (epoch ms) falls in a question date, or at most `afterMs` after its end. */
export function dateMatches(date: QuestionDate, instant: number, afterMs: number): boolean {
  if (!Number.isFinite(instant)) return false;
  if (date.kind === 'range') return instant >= date.start && instant < date.end + afterMs;
  // That month of any year, or the days after it (a memory of late June written in early July).
  const at = new Date(instant);
  const monthStart = (year: number): number => Date.UTC(year, date.month, 1);
  return [at.getUTCFullYear() - 1, at.getUTCFullYear()].some(
    (year) => instant >= monthStart(year) && instant < Date.UTC(year, date.month + 1, 1) + afterMs,
  );
}

function named(monthName: string, parts: { day?: number; year?: string | undefined }): DateParts | undefined {
  const month = MONTH_INDEX.get(monthName.replace(/\.$/, ''));
  if (month === undefined) return undefined;
  return {
    month,
    ...(parts.day !== undefined && { day: parts.day }),
    ...(parts.year !== undefined && { year: Number(parts.year) }),
  };
}

function toQuestionDate(parts: DateParts, text: string): QuestionDate | undefined {
  const { year, month, day } = parts;
  if (month !== undefined && (month < 0 || month > 11)) return undefined;
  if (day !== undefined && (day < 1 || day > 31)) return undefined;
  if (year === undefined) {
    if (month === undefined) return undefined;
    // A day without a year ("on 13 October") is taken as that month of any year: still a useful cut.
    return { kind: 'month-of-year', month, text };
  }
  if (month === undefined) return { kind: 'range', start: Date.UTC(year, 0, 1), end: Date.UTC(year + 1, 0, 1), text };
  if (day === undefined)
    return { kind: 'range', start: Date.UTC(year, month, 1), end: Date.UTC(year, month + 1, 1), text };
  const start = Date.UTC(year, month, day);
  // "31 June" is no day: Date.UTC would roll it into July.
  if (new Date(start).getUTCMonth() !== month) return undefined;
  return { kind: 'range', start, end: start + DAY_MS, text };
}

/** Relative phrases, most specific first: "past two weeks" is read before "past week" could be. */
const RELATIVE_READERS: ReadonlyArray<
  readonly [RegExp, (match: RegExpExecArray, now: number) => QuestionDate | undefined]
> = [
  [AGO, (match, now) => ago(match, now)],
  [PAST_SPAN, (match, now) => pastSpan(match, now)],
  [WEEKDAY, (match, now) => lastWeekday(match, now)],
  [RELATIVE, (match, now) => relativeRange(match[1]!.replace(/\s+/g, ' '), now)],
];

function count(word: string): number | undefined {
  if (/^\d+$/.test(word)) return Number(word);
  if (/few|several/.test(word)) return 3;
  if (/couple/.test(word)) return 2;
  return NUMBER_WORDS.get(word);
}

/** "two weeks ago": about half the unit on either side of that long before today (a day or two for days). */
function ago(match: RegExpExecArray, now: number): QuestionDate | undefined {
  const amount = count(match[1]!.replace(/\s+/g, ' '));
  const unit = UNIT_DAYS[match[2]!];
  if (amount === undefined || unit === undefined || amount < 1) return undefined;
  const today = Math.floor(now / DAY_MS) * DAY_MS;
  const center = today - amount * unit * DAY_MS;
  const half = (unit === 1 ? Math.min(amount, 2) : Math.ceil(unit / 2)) * DAY_MS;
  return { kind: 'range', start: center - half, end: center + half + DAY_MS, text: match[0] };
}

/** "in the past two months": from that long before today through today. */
function pastSpan(match: RegExpExecArray, now: number): QuestionDate | undefined {
  const amount = count(match[1]!.replace(/\s+/g, ' '));
  const unit = UNIT_DAYS[match[2]!];
  if (amount === undefined || unit === undefined || amount < 1) return undefined;
  const today = Math.floor(now / DAY_MS) * DAY_MS;
  return { kind: 'range', start: today - amount * unit * DAY_MS, end: today + DAY_MS, text: match[0] };
}

/** "last Saturday": the latest Saturday before today (a week back when today is one). */
function lastWeekday(match: RegExpExecArray, now: number): QuestionDate | undefined {
  const weekday = WEEKDAYS.indexOf(match[1]!);
  if (weekday === -1) return undefined;
  const today = Math.floor(now / DAY_MS) * DAY_MS;
  const back = (new Date(today).getUTCDay() - weekday + 7) % 7 || 7;
  const start = today - back * DAY_MS;
  return { kind: 'range', start, end: start + DAY_MS, text: match[0] };
}

/** A calendar date moved by the shift written just before it ("two weeks before August 11, 2023"). */
function shifted(date: QuestionDate, before: string): QuestionDate {
  const match = SHIFT.exec(before);
  if (!match || date.kind !== 'range') return date;
  const amount = count(match[1]!.replace(/\s+/g, ' '));
  const unit = UNIT_DAYS[match[2]!];
  if (amount === undefined || unit === undefined) return date;
  const offset = (match[3]!.startsWith('after') ? 1 : -1) * amount * unit * DAY_MS;
  const slack = (unit === 1 ? 0 : Math.ceil(unit / 4)) * DAY_MS;
  return {
    kind: 'range',
    start: date.start + offset - slack,
    end: date.end + offset + slack,
    text: `${match[0]}${date.text}`,
  };
}

function relativeRange(phrase: string, now: number): QuestionDate | undefined {
  const today = Math.floor(now / DAY_MS) * DAY_MS;
  const at = new Date(now);
  const year = at.getUTCFullYear();
  const month = at.getUTCMonth();
  switch (phrase) {
    case 'today':
    case 'tonight':
      return { kind: 'range', start: today, end: today + DAY_MS, text: phrase };
    case 'yesterday':
      return { kind: 'range', start: today - DAY_MS, end: today, text: phrase };
    case 'this week':
    case 'this weekend':
    case 'past week':
    case 'past weekend':
      return { kind: 'range', start: today - 6 * DAY_MS, end: today + DAY_MS, text: phrase };
    case 'past month':
      return { kind: 'range', start: today - 30 * DAY_MS, end: today + DAY_MS, text: phrase };
    case 'past year':
      return { kind: 'range', start: today - 365 * DAY_MS, end: today + DAY_MS, text: phrase };
    case 'last week':
    case 'last weekend':
      return { kind: 'range', start: today - 13 * DAY_MS, end: today - 6 * DAY_MS, text: phrase };
    case 'this month':
      return { kind: 'range', start: Date.UTC(year, month, 1), end: Date.UTC(year, month + 1, 1), text: phrase };
    case 'last month':
      return { kind: 'range', start: Date.UTC(year, month - 1, 1), end: Date.UTC(year, month, 1), text: phrase };
    case 'this year':
      return { kind: 'range', start: Date.UTC(year, 0, 1), end: Date.UTC(year + 1, 0, 1), text: phrase };
    case 'last year':
      return { kind: 'range', start: Date.UTC(year - 1, 0, 1), end: Date.UTC(year, 0, 1), text: phrase };
    default:
      return undefined;
  }
}
