import { findSecrets } from '../privacy/secret-redaction.js';

// The sentences of a user message that explicit memory reads (explicit-memory.ts), with code and
// quotes masked so a trigger inside them is never seen.

const MASK = '\u0001';
const CODE_FENCE = /(^|\n)[ \t]*(```|~~~)[^\n]*\n[\s\S]*?(?:\n[ \t]*\2[^\n]*(?=\n|$)|$)/g;
const INLINE_CODE = /`[^`\n]*`/g;
const QUOTED_LINE = /(^|\n)[ \t]*>[^\n]*/g;
const DOUBLE_QUOTED = /"[^"\n]{0,2000}"|“[^”\n]{0,2000}”|«[^»\n]{0,2000}»/g;
const ABBREVIATION = /\b(?:e\.g|i\.e|etc|vs|mr|mrs|ms|dr|approx|incl|no|fig)\.$/i;

/** The text with code, quotes and secrets masked (same length), so no trigger inside them is seen and no secret is cut. */
export function maskSpans(text: string): string {
  let masked = text;
  for (const regex of [CODE_FENCE, INLINE_CODE, QUOTED_LINE, DOUBLE_QUOTED]) {
    masked = masked.replace(regex, (span) => span.replace(/[^\n]/g, MASK));
  }
  // A secret's own punctuation (`Winter0754!`, `p@ss. w0rd`) must not end the sentence and cut the secret in two:
  // half a secret would be kept past the redactor, which only sees whole ones.
  for (const secret of findSecrets(text)) {
    masked = masked.slice(0, secret.start) + MASK.repeat(secret.end - secret.start) + masked.slice(secret.end);
  }
  return masked;
}

/** Sentence spans of the masked text: split at line breaks and at . ! ? followed by a space or the end. */
export function sentenceSpans(masked: string): Array<{ start: number; end: number }> {
  const spans: Array<{ start: number; end: number }> = [];
  let start = 0;
  for (let index = 0; index < masked.length; index += 1) {
    const character = masked[index]!;
    let cut = -1;
    if (character === '\n') cut = index;
    else if (
      (character === '.' || character === '!' || character === '?') &&
      (index + 1 === masked.length || /\s/.test(masked[index + 1]!))
    ) {
      if (character === '.' && ABBREVIATION.test(masked.slice(Math.max(start, index - 8), index + 1))) continue;
      cut = index + 1;
    }
    if (cut === -1) continue;
    if (cut > start) spans.push({ start, end: cut });
    start = character === '\n' ? index + 1 : cut;
  }
  if (start < masked.length) spans.push({ start, end: masked.length });
  return spans;
}
