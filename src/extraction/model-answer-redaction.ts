import { readJsonText, type JsonReading } from '../kernel/json-answer.js';
import { redactSecrets } from '../privacy/secret-redaction.js';

/**
 * A model's answer made safe to keep and to read: its JSON is parsed FIRST, then every string in it
 * (keys too) goes through the secret redaction, and the result is written back as JSON. Redacting
 * the raw text instead cuts through JSON's quoting: a placeholder that swallows a closing quote or
 * the backslash of a `\"` breaks the JSON (every memory of the answer is then dropped), and a secret
 * the JSON spells with escapes (`\n` inside a key block, `\u002d`, `\/`) is not seen until it is
 * decoded, so the kept answer held it. An answer with no JSON in it is redacted as text. Pure.
 */
export interface RedactedAnswer {
  /** The answer to keep and to parse: JSON when JSON was found (read as it is), else the redacted text. */
  text: string;
  /** How the JSON was found in the answer (a repair), or undefined when none was. */
  reading?: JsonReading;
}

/** Parses a model's answer, redacts each string in it, and writes it back (see RedactedAnswer). */
export function redactModelAnswer(answer: string): RedactedAnswer {
  const found = readJsonText(answer, { repair: true });
  if (found === undefined) return { text: redactSecrets(answer).text };
  return { text: JSON.stringify(redactStrings(found.value)), reading: found.reading };
}

function redactStrings(value: unknown): unknown {
  if (typeof value === 'string') return redactSecrets(value).text;
  if (Array.isArray(value)) return value.map(redactStrings);
  if (value !== null && typeof value === 'object') {
    // No prototype: a key `__proto__` in the answer stays a key.
    const redacted = Object.create(null) as Record<string, unknown>;
    for (const [key, inner] of Object.entries(value)) redacted[redactSecrets(key).text] = redactStrings(inner);
    return redacted;
  }
  return value;
}
