import { porterStem } from './porter-stemmer.js';

/**
 * Irregular English word forms the Porter stemmer cannot join to their base ("bought" and "buy",
 * "children" and "child"). Recall searches every form of a query word, and scoring counts the forms
 * as one term, so "What did Nate buy?" finds "I bought a tank". The list is deliberately short and
 * unambiguous: forms that are also common words of their own ("saw", "left", "found", "rose",
 * "lit", "bore", "shot", "fed", "led", "lay"), forms whose stem collides with another word's
 * ("ate" stems to "at"), and verbs that are stop words (be, do, go, get, have, know, say, tell,
 * think, want) are left out.
 */
const IRREGULAR_FORMS: ReadonlyArray<readonly string[]> = [
  ['arise', 'arose', 'arisen'],
  ['awake', 'awoke', 'awoken'],
  ['become', 'became'],
  ['begin', 'began', 'begun'],
  ['bend', 'bent'],
  ['bite', 'bitten'],
  ['bleed', 'bled'],
  ['blow', 'blew', 'blown'],
  ['break', 'broke', 'broken'],
  ['bring', 'brought'],
  ['build', 'built'],
  ['burn', 'burnt'],
  ['buy', 'bought'],
  ['catch', 'caught'],
  ['choose', 'chose', 'chosen'],
  ['come', 'came'],
  ['creep', 'crept'],
  ['deal', 'dealt'],
  ['dig', 'dug'],
  ['draw', 'drew', 'drawn'],
  ['dream', 'dreamt'],
  ['drink', 'drank', 'drunk'],
  ['drive', 'drove', 'driven'],
  ['eat', 'eaten'],
  ['fall', 'fell', 'fallen'],
  ['feel', 'felt'],
  ['fight', 'fought'],
  ['flee', 'fled'],
  ['fly', 'flew', 'flown'],
  ['forbid', 'forbade', 'forbidden'],
  ['forget', 'forgot', 'forgotten'],
  ['forgive', 'forgave', 'forgiven'],
  ['freeze', 'froze', 'frozen'],
  ['give', 'gave', 'given'],
  ['grow', 'grew', 'grown'],
  ['hang', 'hung'],
  ['hear', 'heard'],
  ['hide', 'hid', 'hidden'],
  ['hold', 'held'],
  ['keep', 'kept'],
  ['kneel', 'knelt'],
  ['leap', 'leapt'],
  ['learn', 'learnt'],
  ['lend', 'lent'],
  ['lose', 'lost'],
  ['make', 'made'],
  ['mean', 'meant'],
  ['meet', 'met'],
  ['pay', 'paid'],
  ['ride', 'rode', 'ridden'],
  ['ring', 'rang', 'rung'],
  ['run', 'ran'],
  ['seek', 'sought'],
  ['sell', 'sold'],
  ['send', 'sent'],
  ['shake', 'shook', 'shaken'],
  ['shine', 'shone'],
  ['shrink', 'shrank', 'shrunk'],
  ['sing', 'sang', 'sung'],
  ['sink', 'sank', 'sunk'],
  ['sit', 'sat'],
  ['sleep', 'slept'],
  ['slide', 'slid'],
  ['speak', 'spoke', 'spoken'],
  ['spend', 'spent'],
  ['spin', 'spun'],
  ['steal', 'stole', 'stolen'],
  ['stick', 'stuck'],
  ['sting', 'stung'],
  ['strike', 'struck'],
  ['swear', 'swore', 'sworn'],
  ['sweep', 'swept'],
  ['swim', 'swam', 'swum'],
  ['swing', 'swung'],
  ['take', 'took', 'taken'],
  ['teach', 'taught'],
  ['tear', 'tore', 'torn'],
  ['throw', 'threw', 'thrown'],
  ['understand', 'understood'],
  ['wake', 'woke', 'woken'],
  ['wear', 'wore', 'worn'],
  ['weave', 'wove', 'woven'],
  ['win', 'won'],
  ['write', 'wrote', 'written'],
  ['child', 'children'],
  ['man', 'men'],
  ['woman', 'women'],
  ['foot', 'feet'],
  ['tooth', 'teeth'],
  ['mouse', 'mice'],
  ['goose', 'geese'],
];

/** Index token (Porter stem) of every listed form → the index token of its base word. */
const BASE_TOKEN = new Map<string, string>();
/** Index token of a base word → the words of its group, base first. */
const GROUP_WORDS = new Map<string, readonly string[]>();
/** Index token of a base word → the index tokens of its whole group. */
const GROUP_TOKENS = new Map<string, readonly string[]>();
for (const group of IRREGULAR_FORMS) {
  const base = porterStem(group[0]!);
  const tokens = [...new Set(group.map((word) => porterStem(word)))];
  for (const token of tokens) BASE_TOKEN.set(token, base);
  GROUP_WORDS.set(base, group);
  GROUP_TOKENS.set(base, tokens);
}

/** The index token that stands for all forms of a word: "bought" and "bui" (buy) → "bui". */
export function baseToken(token: string): string {
  return BASE_TOKEN.get(token) ?? token;
}

/** Every index token of the word group a base token stands for (just the token when it has no irregular forms). */
export function groupTokens(base: string): readonly string[] {
  return GROUP_TOKENS.get(base) ?? [base];
}

const ORDINAL = /^(\d{1,9})(?:st|nd|rd|th)$/i;

/**
 * Query words with the other forms of irregular words added after them ("bought" → "bought",
 * "buy"; "6th" → "6th", "6"), duplicates dropped, so a search finds memories that use any form.
 */
export function withWordForms(terms: readonly string[]): string[] {
  const out: string[] = [];
  const seen = new Set<string>();
  const add = (word: string): void => {
    if (!seen.has(word)) {
      seen.add(word);
      out.push(word);
    }
  };
  for (const term of terms) {
    add(term);
    const words = GROUP_WORDS.get(baseToken(porterStem(term.toLowerCase())));
    if (words) for (const word of words) add(word);
    // Dates are written both ways: "May 6th" in a question, "6 May 2023" in a memory.
    const ordinal = ORDINAL.exec(term);
    if (ordinal) add(String(Number(ordinal[1])));
  }
  return out;
}
