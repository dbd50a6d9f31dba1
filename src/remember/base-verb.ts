// Words after "always"/"never" that are not a verb in its base form (so not an instruction).
const NOT_A_VERB = new Set(
  `the a an my your his her its our their this that these those there here again ever before after in on at for with without by
  about so too very more less much mind enough late early easy hard same different one been being available possible sure happy
  good great nice true false fine ok okay i you we they he she it me us them was were had did is are am has does said seen heard
  gone done made got thought told knew went came saw felt found`.split(/\s+/),
);
const VERB_ALLOWLIST_ED = new Set([
  'embed',
  'feed',
  'seed',
  'need',
  'proceed',
  'exceed',
  'succeed',
  'shred',
  'bleed',
  'breed',
  'speed',
  'heed',
]);
const VERB_ALLOWLIST_S = new Set([
  'pass',
  'press',
  'access',
  'address',
  'process',
  'focus',
  'discuss',
  'dismiss',
  'bypass',
  'express',
  'stress',
  'guess',
  'miss',
  'kiss',
  'toss',
  'cross',
  'bless',
  'assess',
  'compress',
  'possess',
  'harass',
  'canvas',
  'alias',
]);

/** Whether a word after "always"/"never" reads as a verb in its base form ("run", not "fails" or "the"): an instruction. */
export function looksLikeBaseVerb(word: string): boolean {
  const lower = word.toLowerCase();
  if (lower.length < 2 || NOT_A_VERB.has(lower) || !/^[a-z][a-z-]*$/.test(lower)) return false;
  if (VERB_ALLOWLIST_S.has(lower) || VERB_ALLOWLIST_ED.has(lower)) return true;
  if (/ing$/.test(lower) && lower.length > 4) return false;
  if (/ed$/.test(lower) && lower.length > 3) return false;
  if (/(?:[^su]s|[^aeiou]es)$/.test(lower)) return false;
  if (/(?:ful|ous|able|ible|less|ness)$/.test(lower)) return false;
  return true;
}
