/**
 * The high-entropy rule of secret redaction (src/privacy/secret-redaction.ts): whether a token with no
 * known format looks random enough to be a credential. Pure.
 */

/**
 * The high-entropy rule, in numbers. A token (a run of `[A-Za-z0-9+/_=-]`, outside URLs, UUIDs and
 * public keys) is a secret when ALL hold:
 * - at least `minLength` characters;
 * - lowercase letters, uppercase letters and digits all present, with at least `minDigitRuns`
 *   separate runs of digits (random base62/base64 scatters digits; identifiers like `sha256Hash` or
 *   `getUserById2` hold one run at most);
 * - Shannon entropy of its characters at least `log2(length) - entropySlackBits`, capped at
 *   `maxEntropyBits` for long tokens (an alphabet of 64 characters holds at most 6 bits), and at
 *   least `minEntropyBits` (random text of that length reaches about log2(length) - 0.4; prose words
 *   and identifiers repeat letters and stay far below);
 * - at most `maxWordShare` of its letters in dictionary-shaped chunks (camelCase or snake_case words
 *   of 3+ letters with a vowel, like `Profile`, `memory`), so code identifiers survive;
 * - when it holds `/`, not a path: fewer than half of its segments are word-shaped.
 * Hex-only strings (git SHAs, hashes), UUIDs and lowercase-only tokens never match, so hex or base32
 * secrets are caught only by their format or their name (`token=…`). These numbers define the rule
 * itself, not a preference: the store applies this one rule whatever the configuration, so no setting
 * can turn redaction off.
 */
export const HIGH_ENTROPY_RULE = Object.freeze({
  minLength: 20,
  minDigitRuns: 2,
  entropySlackBits: 1.1,
  minEntropyBits: 3.3,
  maxEntropyBits: 4.5,
  maxWordShare: 0.5,
});

/**
 * Whether one token (no spaces) is a random-looking secret by HIGH_ENTROPY_RULE. Exported so the
 * rule can be tested and tuned on its own.
 */
export function isHighEntropyToken(token: string): boolean {
  const rule = HIGH_ENTROPY_RULE;
  const core = token.replace(/=+$/, '');
  if (core.length < rule.minLength) return false;
  if (!/[a-z]/.test(core) || !/[A-Z]/.test(core) || !/[0-9]/.test(core)) return false;
  if ((core.match(/[0-9]+/g)?.length ?? 0) < rule.minDigitRuns) return false;
  const entropy = shannonEntropy(core);
  if (
    entropy <
    Math.max(rule.minEntropyBits, Math.min(rule.maxEntropyBits, Math.log2(core.length) - rule.entropySlackBits))
  )
    return false;
  if (wordShare(core) > rule.maxWordShare) return false;
  if (core.includes('/')) {
    const segments = core.split('/').filter((segment) => segment.length > 0);
    const wordy = segments.filter((segment) => wordShare(segment) >= 0.6 || /^[a-z0-9._-]+$/.test(segment)).length;
    if (segments.length >= 2 && wordy * 2 >= segments.length) return false;
  }
  return true;
}

/** Shannon entropy of a string's characters, in bits per character. */
export function shannonEntropy(text: string): number {
  if (text.length === 0) return 0;
  const counts = new Map<string, number>();
  for (const character of text) counts.set(character, (counts.get(character) ?? 0) + 1);
  let entropy = 0;
  const length = [...text].length;
  for (const count of counts.values()) {
    const share = count / length;
    entropy -= share * Math.log2(share);
  }
  return entropy;
}

/** Whether a token reads as words (camelCase or snake_case chunks with vowels, like `rsa2048-public`) rather than random text. */
export function isWordShaped(token: string): boolean {
  return wordShare(token) > HIGH_ENTROPY_RULE.maxWordShare;
}

// A word chunk: an optional capital then 2+ lowercase letters, or 3+ capitals followed by no lowercase
// (an acronym such as `HTTP` in `parseHTTPResponse`). Chunks without a vowel (`Xkcd`, `Jwb`) are noise.
const WORD_CHUNK = /[A-Z]?[a-z]{2,}|[A-Z]{3,}(?![a-z])/g;

/** The share of a token's letters that sit in word-shaped chunks with a vowel: high for identifiers, low for random text. */
function wordShare(token: string): number {
  const letters = token.replace(/[^A-Za-z]/g, '').length;
  if (letters === 0) return 0;
  let inWords = 0;
  for (const chunk of token.match(WORD_CHUNK) ?? []) {
    if (chunk.length >= 3 && /[aeiouyAEIOUY]/.test(chunk) && !hasRandomLetterPattern(chunk)) inWords += chunk.length;
  }
  return inWords / letters;
}

// Four consonants in a row (outside common clusters) or a doubled rare letter: random, not a word.
function hasRandomLetterPattern(chunk: string): boolean {
  const lower = chunk.toLowerCase();
  return /[bcdfghjklmnpqrstvwxz]{5,}/.test(lower) || /[qxzj]{2}|[qxjz][bcdfgkmpvwxz]/.test(lower);
}
