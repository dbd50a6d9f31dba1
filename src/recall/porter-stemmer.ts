/**
 * The original Porter (1980) stemmer, the algorithm of SQLite FTS5's `porter` tokenizer, so that
 * engram can name the index's own tokens (for document frequencies) and compare words lexically.
 * Words shorter than 3 letters or holding anything but a-z are returned unchanged.
 */
export function porterStem(word: string): string {
  if (word.length < 3 || !/^[a-z]+$/.test(word)) return word;
  let w = word;
  w = step1a(w);
  w = step1b(w);
  w = step1c(w);
  w = replaceSuffix(w, STEP2, 0);
  w = replaceSuffix(w, STEP3, 0);
  w = step4(w);
  w = step5(w);
  return w;
}

function isConsonant(word: string, index: number): boolean {
  const character = word[index]!;
  if ('aeiou'.includes(character)) return false;
  if (character === 'y') return index === 0 ? true : !isConsonant(word, index - 1);
  return true;
}

/** m, the number of vowel-consonant sequences in the stem. */
function measure(stem: string): number {
  let count = 0;
  let index = 0;
  const length = stem.length;
  while (index < length && isConsonant(stem, index)) index += 1;
  while (index < length) {
    while (index < length && !isConsonant(stem, index)) index += 1;
    if (index >= length) break;
    while (index < length && isConsonant(stem, index)) index += 1;
    count += 1;
  }
  return count;
}

function hasVowel(stem: string): boolean {
  for (let index = 0; index < stem.length; index += 1) if (!isConsonant(stem, index)) return true;
  return false;
}

function endsWithDoubleConsonant(stem: string): boolean {
  const length = stem.length;
  return length >= 2 && stem[length - 1] === stem[length - 2] && isConsonant(stem, length - 1);
}

/** *o: the stem ends consonant-vowel-consonant, the last not w, x or y. */
function endsCvc(stem: string): boolean {
  const length = stem.length;
  if (length < 3) return false;
  return (
    isConsonant(stem, length - 1) &&
    !isConsonant(stem, length - 2) &&
    isConsonant(stem, length - 3) &&
    !'wxy'.includes(stem[length - 1]!)
  );
}

function step1a(w: string): string {
  if (w.endsWith('sses')) return w.slice(0, -2);
  if (w.endsWith('ies')) return w.slice(0, -2);
  if (w.endsWith('ss')) return w;
  if (w.endsWith('s')) return w.slice(0, -1);
  return w;
}

function step1b(w: string): string {
  if (w.endsWith('eed')) {
    const stem = w.slice(0, -3);
    return measure(stem) > 0 ? w.slice(0, -1) : w;
  }
  let stem: string | undefined;
  if (w.endsWith('ed')) stem = w.slice(0, -2);
  else if (w.endsWith('ing')) stem = w.slice(0, -3);
  if (stem === undefined || !hasVowel(stem)) return w;
  if (stem.endsWith('at') || stem.endsWith('bl') || stem.endsWith('iz')) return `${stem}e`;
  if (endsWithDoubleConsonant(stem) && !'lsz'.includes(stem.at(-1)!)) return stem.slice(0, -1);
  if (measure(stem) === 1 && endsCvc(stem)) return `${stem}e`;
  return stem;
}

function step1c(w: string): string {
  if (w.endsWith('y') && hasVowel(w.slice(0, -1))) return `${w.slice(0, -1)}i`;
  return w;
}

const STEP2: ReadonlyArray<[string, string]> = [
  ['ational', 'ate'],
  ['tional', 'tion'],
  ['enci', 'ence'],
  ['anci', 'ance'],
  ['izer', 'ize'],
  ['abli', 'able'],
  ['alli', 'al'],
  ['entli', 'ent'],
  ['eli', 'e'],
  ['ousli', 'ous'],
  ['ization', 'ize'],
  ['ation', 'ate'],
  ['ator', 'ate'],
  ['alism', 'al'],
  ['iveness', 'ive'],
  ['fulness', 'ful'],
  ['ousness', 'ous'],
  ['aliti', 'al'],
  ['iviti', 'ive'],
  ['biliti', 'ble'],
];

const STEP3: ReadonlyArray<[string, string]> = [
  ['icate', 'ic'],
  ['ative', ''],
  ['alize', 'al'],
  ['iciti', 'ic'],
  ['ical', 'ic'],
  ['ful', ''],
  ['ness', ''],
];

/** Replaces the longest matching suffix when the remaining stem's measure exceeds `minimum`. */
function replaceSuffix(w: string, rules: ReadonlyArray<[string, string]>, minimum: number): string {
  let best: [string, string] | undefined;
  for (const rule of rules) if (w.endsWith(rule[0]) && (!best || rule[0].length > best[0].length)) best = rule;
  if (!best) return w;
  const stem = w.slice(0, -best[0].length);
  return measure(stem) > minimum ? stem + best[1] : w;
}

const STEP4 = [
  'al',
  'ance',
  'ence',
  'er',
  'ic',
  'able',
  'ible',
  'ant',
  'ement',
  'ment',
  'ent',
  'ion',
  'ou',
  'ism',
  'ate',
  'iti',
  'ous',
  'ive',
  'ize',
];

function step4(w: string): string {
  let suffix: string | undefined;
  for (const candidate of STEP4)
    if (w.endsWith(candidate) && (!suffix || candidate.length > suffix.length)) suffix = candidate;
  if (!suffix) return w;
  const stem = w.slice(0, -suffix.length);
  if (measure(stem) <= 1) return w;
  if (suffix === 'ion' && !(stem.endsWith('s') || stem.endsWith('t'))) return w;
  return stem;
}

function step5(w: string): string {
  let word = w;
  if (word.endsWith('e')) {
    const stem = word.slice(0, -1);
    const m = measure(stem);
    if (m > 1 || (m === 1 && !endsCvc(stem))) word = stem;
  }
  if (measure(word) > 1 && endsWithDoubleConsonant(word) && word.endsWith('l')) word = word.slice(0, -1);
  return word;
}
