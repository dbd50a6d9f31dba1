import { porterStem } from './porter-stemmer.js';

/**
 * Turns a natural-language question into plain search terms: words lowercased, stop words and
 * duplicates dropped. Terms are data, never query syntax; the store quotes each one.
 */
export const MAX_QUERY_TERMS = 64;

const STOP_WORDS = new Set(
  `a about above after again against all am an and any are as at be because been before being below between both but by
  can could did do does doing down during each few for from further had has have having he her here hers herself him
  himself his how i if in into is it its itself just me more most my myself no nor not now of off on once only or other
  our ours ourselves out over own same she should so some such than that the their theirs them themselves then there
  these they this those through to too under until up very was we were what when where which while who whom why will
  with would you your yours yourself yourselves ever also yes yeah oh ok okay hey hi hello did does done get got go
  going gone let lets like may might must shall thing things really much many well still even would could should tell
  told say said know knew think thought want wanted`.split(/\s+/),
);

// Contractions would split into a stem and a clitic ("don't" → "don" + "t"), neither a word: the
// negative ending goes (can't and won't keep their verb), as do possessive and other clitics.
const IRREGULAR_NEGATIVES: ReadonlyMap<string, string> = new Map([
  ['ca', 'can'],
  ['wo', 'will'],
  ['sha', 'shall'],
]);
const NEGATIVE = /\b(\p{L}+)n['’]t\b/gu;
const CLITIC = /['’](?:s|re|ve|ll|d|m)\b/g;
const WORD = /[\p{L}\p{N}]+/gu;
const MAX_WORD_LENGTH = 64;

/** Whether a lowercased word carries no meaning for search (articles, pronouns, question words…). */
export function isStopWord(word: string): boolean {
  return STOP_WORDS.has(word);
}

let stopTokens: ReadonlySet<string> | undefined;

/** Whether an index token (a Porter stem, see `fullTextTokens`) is the stem of a stop word. */
export function isStopToken(token: string): boolean {
  stopTokens ??= new Set([...STOP_WORDS].map(porterStem));
  return stopTokens.has(token);
}

/** Every word of a text, lowercased and in order, possessives and contraction endings removed. */
export function textWords(text: string): string[] {
  return (
    text
      .normalize('NFKC')
      .toLowerCase()
      .replace(NEGATIVE, (_, stem: string) => IRREGULAR_NEGATIVES.get(stem) ?? stem)
      .replace(CLITIC, '')
      .match(WORD) ?? []
  );
}

/** Stop words that are also month names: kept when a number stands beside them ("May 6th", "8 May 2023"). */
const MONTH_STOP_WORDS = new Set(['may']);
const NUMBER = /^\d+(?:st|nd|rd|th)?$/;

/** The content words of a question, in order: stop words and duplicates out, dates kept whole. */
export function queryTerms(text: string, maxTerms: number = MAX_QUERY_TERMS): string[] {
  const seen = new Set<string>();
  const content: string[] = [];
  const all: string[] = [];
  const words = textWords(text);
  words.forEach((word, index) => {
    if (seen.has(word) || word.length > MAX_WORD_LENGTH) return;
    seen.add(word);
    all.push(word);
    const dated =
      MONTH_STOP_WORDS.has(word) &&
      [words[index - 1], words[index + 1]].some((next) => next !== undefined && NUMBER.test(next));
    if (!STOP_WORDS.has(word) || dated) content.push(word);
  });
  // A query made only of stop words ("who am I") still deserves a search.
  return (content.length > 0 ? content : all).slice(0, maxTerms);
}
