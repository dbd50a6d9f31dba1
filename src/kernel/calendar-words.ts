/**
 * The English words for months, weekdays and small numbers, in one place: recall reads them in
 * questions and memories, consolidation writes dates with them, the dataset scripts parse them.
 * Pure data and regular-expression pieces; every pattern is lowercase (match lowercased text).
 */

/** Month names, January first, each with the abbreviations people write ("sept", "jan"). */
export const MONTH_NAMES: ReadonlyArray<readonly [string, ...string[]]> = [
  ['january', 'jan'],
  ['february', 'feb'],
  ['march', 'mar'],
  ['april', 'apr'],
  ['may'],
  ['june', 'jun'],
  ['july', 'jul'],
  ['august', 'aug'],
  ['september', 'sep', 'sept'],
  ['october', 'oct'],
  ['november', 'nov'],
  ['december', 'dec'],
];

/** Full month names, January first, lowercase. */
export const MONTHS: readonly string[] = MONTH_NAMES.map(([name]) => name);

/** Month index (0 = January) of a lowercase full name or abbreviation. */
export const MONTH_INDEX: ReadonlyMap<string, number> = new Map(
  MONTH_NAMES.flatMap((names, month) => names.map((name) => [name, month] as const)),
);

/** Weekday names in `Date.getUTCDay()` order (Sunday first), lowercase. */
export const WEEKDAYS: readonly string[] = [
  'sunday',
  'monday',
  'tuesday',
  'wednesday',
  'thursday',
  'friday',
  'saturday',
];

/** The number words engram reads as counts ("two weeks ago"). */
export const NUMBER_WORDS: ReadonlyMap<string, number> = new Map([
  ['a', 1],
  ['an', 1],
  ['one', 1],
  ['two', 2],
  ['three', 3],
  ['four', 4],
  ['five', 5],
  ['six', 6],
  ['seven', 7],
  ['eight', 8],
  ['nine', 9],
  ['ten', 10],
  ['eleven', 11],
  ['twelve', 12],
]);

/** "March": a name as written in a sentence. */
export function capitalized(word: string): string {
  return word.charAt(0).toUpperCase() + word.slice(1);
}

/** A non-capturing alternation of words, longest first so a prefix never wins ("sept" before "sep"). */
export function wordAlternation(words: Iterable<string>): string {
  return `(?:${[...new Set(words)].sort((a, b) => b.length - a.length).join('|')})`;
}
