// First person → "the user", outside code spans: what explicit memory (explicit-memory.ts) writes reads on its own.

const MODALS = new Set([
  'can',
  'could',
  'will',
  'would',
  'should',
  'must',
  'might',
  'may',
  'shall',
  'did',
  'cannot',
  "can't",
  'didn’t',
  "didn't",
  "won't",
  "wouldn't",
  "shouldn't",
  "couldn't",
]);
const ADVERBS = new Set([
  'always',
  'never',
  'usually',
  'often',
  'sometimes',
  'really',
  'also',
  'only',
  'just',
  'mostly',
  'generally',
  'still',
  'rarely',
  'typically',
  'normally',
  'strongly',
  'definitely',
  'mainly',
]);
const IRREGULAR_THIRD: ReadonlyMap<string, string> = new Map([
  ['have', 'has'],
  ['be', 'is'],
  ['am', 'is'],
  ['do', 'does'],
  ['go', 'goes'],
]);

/** Third person singular of a verb in its base form: use → uses, push → pushes, try → tries. */
function thirdPerson(verb: string): string {
  const lower = verb.toLowerCase();
  const irregular = IRREGULAR_THIRD.get(lower);
  if (irregular) return irregular;
  if (!/^[a-z]+$/.test(lower) || /ed$/.test(lower) || MODALS.has(lower)) return verb;
  if (/(?:s|sh|ch|x|z|o)$/.test(lower)) return `${verb}es`;
  if (/[^aeiou]y$/.test(lower)) return `${verb.slice(0, -1)}ies`;
  return `${verb}s`;
}

/**
 * Rewrites first person as "the user" so a statement reads on its own: "I use tabs" → "the user uses
 * tabs", "my editor" → "the user's editor", "ask me" → "ask the user". Code spans are left alone.
 */
export function toThirdPerson(text: string): string {
  return text
    .split(/(`[^`\n]*`)/)
    .map((part, index) => (index % 2 === 1 ? part : rewriteFirstPerson(part)))
    .join('');
}

function rewriteFirstPerson(text: string): string {
  let out = text
    .replace(/\b[Ii](?:'m|’m| am)\b/g, 'the user is')
    .replace(/\b[Ii](?:'ve|’ve| have)\b/g, 'the user has')
    .replace(/\b[Ii](?:'d|’d)\b/g, 'the user would')
    .replace(/\b[Ii](?:'ll|’ll)\b/g, 'the user will')
    .replace(/\b[Ii] was\b/g, 'the user was')
    .replace(/\b[Ii] (?:don't|don’t)\b/g, "the user doesn't")
    .replace(/\b[Ii] do not\b/g, 'the user does not')
    .replace(/\b[Mm]y\b/g, "the user's")
    .replace(/\b[Mm]ine\b/g, "the user's")
    .replace(/\b[Mm]yself\b/g, 'the user')
    .replace(/\b[Mm]e\b/g, 'the user');
  // "I <adverb>? <verb>": conjugate the verb for "the user".
  out = out.replace(
    /\b[Ii]\b(?![.'’-]\p{L})(\s+)(?:(\p{L}+)(\s+))?(\p{L}[\p{L}'’-]*)/gu,
    (whole, space: string, adverb: string | undefined, space2: string | undefined, verb: string) => {
      if (adverb !== undefined && !ADVERBS.has(adverb.toLowerCase())) {
        // Not an adverb: the first word is the verb itself.
        return `the user${space}${thirdPerson(adverb)}${space2}${verb}`;
      }
      return `the user${space}${adverb !== undefined ? `${adverb}${space2}` : ''}${thirdPerson(verb)}`;
    },
  );
  // A lone "I" left (at the end, before punctuation).
  return out.replace(/\b[Ii]\b(?![.'’-]\p{L})(?=\s*[,.;:!?)]|\s*$)/gu, 'the user');
}
