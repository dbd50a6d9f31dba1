import type { Detector } from './secret-detector.js';

/**
 * What a second factor rests on: printed recovery and backup codes (GitHub's `a1b2c-3d4e5`, Google's
 * `1234 5678`, Microsoft's and Apple's dash groups, BitLocker's 48 digits), and TOTP seeds stated in
 * prose or shown as an authenticator's grouped setup key (`otpauth://` URLs are URL query secrets).
 * A code is taken only after words that say what it is, followed by `:` or "is"/"are": on that line
 * and on the lines right after it that start with a code and are mostly codes. Pure; every scan is bounded.
 */

const RECOVERY_TRIGGER =
  /\b(?:recovery|backup|scratch|emergency|bypass|one[- ]time|2fa|mfa|two[- ]factor)[ \t]+(?:codes?|keys?)\b[^\n:]{0,40}?(?::|[ \t](?:is|are|were|was)\b)/gi;
const CODE_TOKEN = /(?<![A-Za-z0-9])[A-Za-z0-9]{3,12}(?:-[A-Za-z0-9]{3,12}){0,9}(?![A-Za-z0-9])/g;
// What may sit between codes on a line of codes: list marks (`1.`, `-`, `*`), commas, bars, spaces.
const SEPARATORS = /(?:^|[ \t])(?:\d{1,2}[.)]|[-*•·|,;])(?=[ \t]|$)|[,;|]/g;
const MAX_CODE_LINES = 40;
/** A line of codes is short: past this many characters a line is read no further. */
const MAX_LINE = 400;
// A line ends at a line end, or at an escaped one (the text of a JSON string).
const LINE_END = /\r?\n|(?:\\r)?\\n/g;

/** Where the line starting at `from` ends (at most MAX_LINE on), whether it ended within that, and where the next begins (-1: none). */
function lineAt(text: string, from: number): { end: number; whole: boolean; next: number } {
  LINE_END.lastIndex = from;
  const found = LINE_END.exec(text);
  if (found && found.index - from <= MAX_LINE) return { end: found.index, whole: true, next: LINE_END.lastIndex };
  const end = Math.min(text.length, from + MAX_LINE);
  return { end, whole: end === text.length, next: -1 };
}

// A code holds two digits or more (a name such as `1Password` or `OAuth2` holds one), or is dash groups of capitals.
function isCode(token: string): boolean {
  const groups = token.split('-');
  if ((token.match(/\d/g)?.length ?? 0) >= 2 && token.replace(/-/g, '').length >= 4) return true;
  return groups.length >= 3 && groups.every((group) => /^[A-Z0-9]{4,8}$/.test(group));
}

/** A line of codes: list marks and separators aside, it starts with a code and codes are at least half of it (a note may follow: "(used)"). */
function codeLine(line: string): boolean {
  const pieces = line
    .replace(SEPARATORS, ' ')
    .trim()
    .split(/[ \t]+/)
    .filter(Boolean);
  const code = (piece: string): boolean => /^[A-Za-z0-9-]+$/.test(piece) && isCode(piece);
  return pieces.length > 0 && code(pieces[0]!) && pieces.filter(code).length * 2 >= pieces.length;
}

/** "GitHub recovery codes:" followed by the codes, "the recovery code is XXXXX-…", "backup codes: 1234 5678, …". */
export const recoveryCodeDetector: Detector = {
  kind: 'recovery-code',
  find(text, emit) {
    if (!/code|key/i.test(text)) return;
    RECOVERY_TRIGGER.lastIndex = 0;
    for (let match = RECOVERY_TRIGGER.exec(text); match !== null; match = RECOVERY_TRIGGER.exec(text)) {
      const from = match.index + match[0].length;
      const emitCodes = (start: number, end: number): void => {
        CODE_TOKEN.lastIndex = 0;
        const line = text.slice(start, end);
        for (let token = CODE_TOKEN.exec(line); token !== null; token = CODE_TOKEN.exec(line))
          if (isCode(token[0])) emit('recovery-code', start + token.index, start + token.index + token[0].length);
      };
      let line = lineAt(text, from);
      emitCodes(from, line.end);
      // The rest of this line is read: a trigger later on it adds nothing (and many would make this quadratic).
      const firstLineEnd = line.end;
      // The lines after it, while they are lines of codes (one blank line between them allowed).
      let blank = 0;
      for (let count = 0; line.next !== -1 && count < MAX_CODE_LINES; count += 1) {
        const start = line.next;
        line = lineAt(text, start);
        const body = text.slice(start, line.end);
        if (body.trim() === '') {
          blank += 1;
          if (blank > 1) break;
        } else if (line.whole && codeLine(body)) {
          blank = 0;
          emitCodes(start, line.end);
        } else break;
      }
      RECOVERY_TRIGGER.lastIndex = Math.max(RECOVERY_TRIGGER.lastIndex, firstLineEnd);
    }
  },
};

const TOTP_SEED =
  /\b(?:totp|2fa|mfa|otp|two[- ]factor|authenticator)\b[^\n]{0,30}?\b(?:secret|seed|key|setup key)\b[^\n:=]{0,40}?(?:[ \t]+(?:is|was)|[ \t]*[:=])[ \t]*([A-Za-z2-7]{4}(?:[ -]?[A-Za-z2-7]{4}){3,31}={0,6})(?![A-Za-z0-9])/dgi;

/** "The TOTP secret … is JBSWY3DP…", "Authenticator setup key: jbsw y3dp ehpk 3pxp": a base32 seed. */
export const totpSeedDetector: Detector = {
  kind: 'totp-secret',
  find(text, emit) {
    TOTP_SEED.lastIndex = 0;
    for (let match = TOTP_SEED.exec(text); match !== null; match = TOTP_SEED.exec(text)) {
      const seed = match[1]!;
      const bare = seed.replace(/[ =-]/g, '');
      // Base32 has digits 2-7 in nearly every random seed; a run of letters only is a word unless it is upper case.
      if (bare.length < 16 || !(/[2-7]/.test(bare) || /^[A-Z]+$/.test(bare))) continue;
      const span = match.indices![1]!;
      emit('totp-secret', span[0], span[1]);
    }
  },
};
