import { EngramError } from './errors.js';

/**
 * Reading JSON out of a model's text: the model adapters use it for answers asked for as JSON,
 * extraction for the memories it asked for (with repairs). Pure.
 */

/** How a text was read: as it is, or which repair made it JSON. */
export type JsonReading =
  'as-is' | 'json-in-code-fence' | 'json-in-prose' | 'trailing-commas-removed' | 'cut-off-array-closed';

/** A JSON value found in a text, its JSON text, and how it was read. */
export interface JsonTextValue {
  value: unknown;
  json: string;
  reading: JsonReading;
}

/**
 * The first reading of a text that parses: the text itself; the inside of a Markdown code fence;
 * the span from the first `[` or `{` (whichever opens first) to the last matching bracket. With
 * `repair`, also those readings without trailing commas, and an array cut off mid-item closed after
 * its last whole object (an answer that hit the output token limit). Undefined when none parses.
 */
export function readJsonText(text: string, options: { repair?: boolean } = {}): JsonTextValue | undefined {
  const trimmed = text.trim();
  const readings: Array<[string, JsonReading]> = [[trimmed, 'as-is']];
  const fence = /```[a-zA-Z]*\s*\n?([\s\S]*?)\n?\s*```/.exec(trimmed);
  if (fence) readings.push([fence[1]!.trim(), 'json-in-code-fence']);
  const arrayStart = trimmed.indexOf('[');
  const objectStart = trimmed.indexOf('{');
  const objectEnd = trimmed.lastIndexOf('}');
  // The bracket that opens first holds the value; a `{` after an unclosed `[` is an item of it.
  const opensArray = arrayStart >= 0 && (objectStart < 0 || arrayStart < objectStart);
  const [start, end] = opensArray ? [arrayStart, trimmed.lastIndexOf(']')] : [objectStart, objectEnd];
  if (start >= 0 && end > start) readings.push([trimmed.slice(start, end + 1), 'json-in-prose']);
  if (options.repair) {
    readings.push(
      ...readings.map(
        ([reading, how]) =>
          [reading.replace(/,(\s*[\]}])/g, '$1'), how === 'as-is' ? 'trailing-commas-removed' : how] as [
            string,
            JsonReading,
          ],
      ),
    );
    if (opensArray && objectEnd > arrayStart)
      readings.push([`${trimmed.slice(arrayStart, objectEnd + 1)}]`, 'cut-off-array-closed']);
  }
  for (const [reading, how] of readings) {
    if (reading === '') continue;
    try {
      return { value: JSON.parse(reading) as unknown, json: reading, reading: how };
    } catch {
      // Try the next reading.
    }
  }
  return undefined;
}

/**
 * Reads a JSON answer (see `readJsonText`, without repairs) and returns its JSON text, or throws
 * MODEL_OUTPUT_INVALID carrying the raw text (`details.text`) so a caller may still repair it,
 * e.g. an answer cut off at max_tokens. `service` names the model service in the message.
 */
export function readJsonAnswer(text: string, stopReason: string, service: string): string {
  const found = readJsonText(text);
  if (found) return found.json;
  const cut =
    stopReason === 'max_tokens'
      ? ' It was cut off at the output token limit: raise maxOutputTokens or ask for less.'
      : '';
  throw new EngramError(
    'MODEL_OUTPUT_INVALID',
    `${service} was asked for JSON but answered text that is not JSON.${cut}`,
    {
      details: { text, stopReason },
    },
  );
}
