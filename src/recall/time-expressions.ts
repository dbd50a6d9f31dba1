/**
 * Whether a question asks when something happened (or how long ago, or for how long), and whether a
 * memory says when: a weekday, a month, a year, a date, "yesterday", "last week", "two years ago",
 * "since 2019". A "when" question is answered by a memory that carries a time, so recall can favour
 * those among the ones that match its words. English only, and deliberately plain.
 */

import { MONTHS, NUMBER_WORDS, WEEKDAYS, wordAlternation } from '../kernel/calendar-words.js';

const WHEN_QUESTION =
  /(?:^|[.!?]\s+|\b(?:and|so|but|then)\s+)when\b|\b(?:what|which)\s+(?:time|date|day|week|weekend|month|year|season)\b|\bhow\s+(?:long|recently)\b|\bsince\s+when\b|\bin\s+what\s+year\b/;

const WEEKDAY = wordAlternation(WEEKDAYS);
const MONTH = wordAlternation(MONTHS);
const UNIT =
  '(?:second|minute|hour|day|night|week|weekend|month|year|decade|summer|winter|spring|autumn|fall|morning|afternoon|evening)s?';
const COUNT = `(?:\\d+|${wordAlternation(NUMBER_WORDS.keys())}|a\\s+few|a\\s+couple\\s+of|several|many|some)`;
const TIME_MENTION = new RegExp(
  [
    `\\b(?:yesterday|today|tonight|tomorrow|recently|lately|nowadays|earlier|soon)\\b`,
    `\\b(?:last|next|this|past|coming|previous|following)\\s+(?:${UNIT}|${WEEKDAY})\\b`,
    `\\b${COUNT}\\s+${UNIT}\\s+(?:ago|later|before|after|back|from\\s+now)\\b`,
    `\\b(?:for|in|over|since|within|after)\\s+(?:the\\s+(?:last|past)\\s+)?${COUNT}\\s+${UNIT}\\b`,
    `\\b${WEEKDAY}s?\\b`,
    `\\b(?:in|on|since|during|until|by|early|late|mid|of)\\s+${MONTH}\\b`,
    `\\b${MONTH}\\s+\\d{1,2}(?:st|nd|rd|th)?\\b`,
    `\\b\\d{1,2}(?:st|nd|rd|th)?\\s+(?:of\\s+)?${MONTH}\\b`,
    `\\b(?:1[89]|20)\\d\\d\\b`,
    `\\b\\d{4}-\\d{2}-\\d{2}\\b`,
    `\\b\\d{1,2}(?::\\d{2})?\\s*(?:am|pm)\\b`,
    `\\bago\\b`,
  ].join('|'),
);

/** Whether a question asks for a time: "When did …", "What year …", "How long ago …", "How long have …". */
export function asksWhen(question: string): boolean {
  return WHEN_QUESTION.test(question.normalize('NFKC').toLowerCase().trim());
}

/** Whether a text says when: a date, a weekday, a month, a year, or a relative time ("last week", "two years ago"). */
export function mentionsTime(text: string): boolean {
  return TIME_MENTION.test(text.normalize('NFKC').toLowerCase());
}
