import { cleanControlCharacters } from '../kernel/text-cleaning.js';
import { utf8ByteLength } from '../kernel/token-estimate.js';

/**
 * What the benchmark readers (LoCoMo, LongMemEval) do to the text of one turn before it becomes a
 * memory: published conversations are real text, with control characters, lone UTF-16 surrogates
 * and the odd turn longer than a memory holds. Each is mended and counted, never refused.
 */

/** What reading a published benchmark found, counted and named, for the report `engram eval` prints. */
export interface BenchmarkReadReport {
  format: 'locomo' | 'longmemeval';
  /** Counts by what was found ("conversations", "turns", "emptyTurns", …). */
  counts: Record<string, number>;
  /** One line per kind of thing mended or left out, for people; empty when the text was clean. */
  notes: string[];
}

/** Evaluation lines (memory lines, then query lines, as `parseEvalDataset` reads them) and what was found. */
export interface BenchmarkConversion {
  lines: string[];
  report: BenchmarkReadReport;
}

/** How much of one turn's text was mended. */
export interface TextRepairs {
  controls: number;
  surrogates: number;
  /** Bytes cut off the end to fit a memory. */
  clippedBytes: number;
}

// A UTF-16 surrogate not paired with its other half: memory content refuses them.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/**
 * The text a memory can hold: control characters replaced (tab and newline kept), lone surrogates
 * replaced with U+FFFD, trimmed, and cut to `maxBytes` of UTF-8 at a character boundary.
 */
export function repairTurnText(raw: string, maxBytes: number): { text: string; repairs: TextRepairs } {
  const controls = cleanControlCharacters(raw);
  let surrogates = 0;
  let text = controls.text.replace(LONE_SURROGATE, () => {
    surrogates += 1;
    return '\uFFFD';
  });
  text = text.trim();
  let clippedBytes = 0;
  const bytes = utf8ByteLength(text);
  if (bytes > maxBytes) {
    const clipped = clipToBytes(text, maxBytes);
    clippedBytes = bytes - utf8ByteLength(clipped);
    text = clipped;
  }
  return { text, repairs: { controls: controls.replaced, surrogates, clippedBytes } };
}

/** The longest prefix of `text` of at most `maxBytes` UTF-8 bytes that ends on a whole character. */
function clipToBytes(text: string, maxBytes: number): string {
  const encoded = new TextEncoder().encode(text);
  let end = maxBytes;
  // Back up past continuation bytes (10xxxxxx) so the cut falls between characters.
  while (end > 0 && (encoded[end]! & 0xc0) === 0x80) end -= 1;
  return new TextDecoder().decode(encoded.subarray(0, end)).trimEnd();
}

/** Adds one turn's repairs to running counts. */
export function addRepairs(total: TextRepairs & { clippedTurns: number }, repairs: TextRepairs): void {
  total.controls += repairs.controls;
  total.surrogates += repairs.surrogates;
  total.clippedBytes += repairs.clippedBytes;
  if (repairs.clippedBytes > 0) total.clippedTurns += 1;
}

/** The notes for repaired text, in the words of the report. */
export function repairNotes(total: TextRepairs & { clippedTurns: number }, maxBytes: number): string[] {
  const notes: string[] = [];
  if (total.controls > 0) notes.push(`${total.controls} control character(s) replaced (tab and newline kept).`);
  if (total.surrogates > 0)
    notes.push(`${total.surrogates} lone UTF-16 surrogate(s) (half of a character) replaced with U+FFFD.`);
  if (total.clippedTurns > 0)
    notes.push(
      `${total.clippedTurns} memory text(s) longer than ${maxBytes} bytes (memory.maxContentBytes) cut to fit; ${total.clippedBytes} bytes left out.`,
    );
  return notes;
}

/** A scope id made of what scope ids allow: other characters become "-". */
export function scopeIdFrom(raw: string): string {
  const id = raw.replace(/[^A-Za-z0-9._~:/@+%=!,$&*;-]/g, '-').slice(0, 200);
  return id === '' ? 'unnamed' : id;
}
