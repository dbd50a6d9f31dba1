import { utf8ByteLength } from './token-estimate.js';

/** One parsed JSON Lines record and where it was. */
export interface TranscriptLine {
  /** 1-based line number. */
  line: number;
  record: Record<string, unknown>;
}

/** Limits of a JSON Lines transcript reader. */
export interface TranscriptLineOptions {
  /** Longer lines are skipped with a warning; default 32 MiB. */
  maxLineBytes?: number;
}

export const DEFAULT_TRANSCRIPT_MAX_LINE_BYTES = 32 * 1024 * 1024;

const MAX_LISTED_WARNINGS = 20;

/**
 * Splits JSON Lines into objects. A line that is not JSON (torn by a crash mid-write, or garbage),
 * a JSON value that is not an object, or a line over the size limit is skipped with a warning,
 * never fatal: transcripts are written while a session runs and may end half-way through a line.
 */
export function readTranscriptLines(
  text: string,
  options: TranscriptLineOptions = {},
): { lines: TranscriptLine[]; warnings: string[]; skipped: number } {
  const maxLineBytes = options.maxLineBytes ?? DEFAULT_TRANSCRIPT_MAX_LINE_BYTES;
  const lines: TranscriptLine[] = [];
  const problems: string[] = [];
  const raw = text.split('\n');
  // The last non-empty line is the one a crash tears; say so instead of calling it garbage.
  let last = raw.length - 1;
  while (last >= 0 && raw[last]!.trim() === '') last -= 1;
  for (let index = 0; index < raw.length; index += 1) {
    const source = raw[index]!;
    if (source.trim() === '') continue;
    const number = index + 1;
    if (source.length > maxLineBytes || utf8ByteLength(source) > maxLineBytes) {
      problems.push(`line ${number} is over ${maxLineBytes} bytes: skipped`);
      continue;
    }
    let value: unknown;
    try {
      value = JSON.parse(source);
    } catch {
      problems.push(
        index === last
          ? `line ${number} (the last) is cut off, as when a session is still writing or crashed: skipped`
          : `line ${number} is not JSON: skipped`,
      );
      continue;
    }
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      problems.push(`line ${number} is not a JSON object: skipped`);
      continue;
    }
    lines.push({ line: number, record: value as Record<string, unknown> });
  }
  const warnings = problems.slice(0, MAX_LISTED_WARNINGS);
  if (problems.length > MAX_LISTED_WARNINGS)
    warnings.push(`… and ${problems.length - MAX_LISTED_WARNINGS} more lines skipped`);
  return { lines, warnings, skipped: problems.length };
}

/** A string field of a record, or undefined. */
export function stringField(record: Record<string, unknown>, key: string): string | undefined {
  const value = record[key];
  return typeof value === 'string' ? value : undefined;
}

/** A nested object field of a record, or undefined. */
export function objectField(record: Record<string, unknown>, key: string): Record<string, unknown> | undefined {
  const value = record[key];
  return value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}
