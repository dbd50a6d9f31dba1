import { EngramError } from '../kernel/errors.js';
import { cleanControlCharacters, controlCharacterWarning } from '../kernel/text-cleaning.js';
import { MEMORY_FIELD_ORDER, normalizeNewMemory, type Memory, type MemoryLimits, type NewMemory } from './memory.js';

/** Options of `parseJsonl`. */
export interface ParseJsonlOptions {
  /** Longest line accepted, in UTF-8 bytes; default 1 MB. */
  maxLineBytes?: number;
  limits?: MemoryLimits;
}

/** What a JSONL interchange file holds: memories, other lines by kind, and what was wrong with the rest. */
export interface ParsedJsonl {
  memories: Array<{ line: number; input: NewMemory }>;
  others: Array<{ line: number; value: Record<string, unknown> }>;
  /** `id` is the line's memory id when it had a string one, so a dataset can tell which memories were left out. */
  errors: Array<{ line: number; message: string; id?: string }>;
  warnings: string[];
}

export const DEFAULT_MAX_LINE_BYTES = 1024 * 1024;

const MEMORY_FIELDS = MEMORY_FIELD_ORDER;

type MemoryField = (typeof MEMORY_FIELDS)[number];

// Other tools and the evaluation datasets write snake_case (`created_at`); both spellings are read.
// Maps, not object literals: a key such as "constructor" must not find Object.prototype's.
const SNAKE_CASE_ALIASES: ReadonlyMap<string, MemoryField> = new Map([
  ['created_at', 'createdAt'],
  ['updated_at', 'updatedAt'],
  ['last_accessed_at', 'lastAccessedAt'],
  ['hit_count', 'hitCount'],
  ['valid_from', 'validFrom'],
  ['invalid_at', 'invalidAt'],
  ['superseded_by', 'supersededBy'],
]);

const SOURCE_ALIASES: ReadonlyMap<string, string> = new Map([
  ['session_id', 'sessionId'],
  ['turn_id', 'turnId'],
]);
const REQUIRED_FIELDS = ['id', 'scope', 'content'] as const;
const MAX_LISTED_WARNINGS = 50;
// Only to satisfy normalizeNewMemory while validating; the parsed input never carries them.
const VALIDATION_CONTEXT = { now: '1970-01-01T00:00:00.000Z', id: 'validation-placeholder' };

/** Serializes a memory as one JSONL line (no trailing newline): `{"kind":"memory", …every field}`. */
export function serializeMemoryLine(memory: Memory): string {
  const line: Record<string, unknown> = { kind: 'memory' };
  for (const field of MEMORY_FIELDS) line[field] = memory[field];
  return JSON.stringify(line);
}

/**
 * Parses a JSONL interchange file. Memory lines (`"kind":"memory"` or no kind) are validated
 * with the memory model; lines of other kinds are returned as they are; bad lines become
 * errors with their 1-based line number and never stop the rest from being read.
 */
export function parseJsonl(text: string, options: ParseJsonlOptions = {}): ParsedJsonl {
  const maxLineBytes = options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES;
  if (!Number.isSafeInteger(maxLineBytes) || maxLineBytes < 1) {
    throw new EngramError(
      'INVALID_INPUT',
      `Invalid maxLineBytes ${JSON.stringify(maxLineBytes)}: a whole number from 1.`,
    );
  }
  if (typeof text !== 'string') throw new EngramError('INVALID_INPUT', 'JSONL input is text.');
  const result: ParsedJsonl = { memories: [], others: [], errors: [], warnings: [] };
  let unlistedWarnings = 0;
  const warn = (warning: string): void => {
    if (result.warnings.length < MAX_LISTED_WARNINGS) result.warnings.push(warning);
    else unlistedWarnings += 1;
  };
  const source = text.startsWith('\uFEFF') ? text.slice(1) : text;
  let lineNumber = 0;
  for (let position = 0; position < source.length;) {
    const newline = source.indexOf('\n', position);
    const end = newline === -1 ? source.length : newline;
    let line = source.slice(position, end);
    position = end + 1;
    lineNumber += 1;
    if (line.endsWith('\r')) line = line.slice(0, -1);
    if (line.trim().length === 0) continue;

    const outcome = parseLine(line, maxLineBytes, options.limits);
    if ('error' in outcome) {
      result.errors.push({
        line: lineNumber,
        message: outcome.error,
        ...(outcome.id !== undefined && { id: outcome.id }),
      });
    } else if ('other' in outcome) {
      result.others.push({ line: lineNumber, value: outcome.other });
    } else {
      result.memories.push({ line: lineNumber, input: outcome.memory });
      if (outcome.unknownFields.length > 0)
        warn(`Line ${lineNumber}: ignored unknown fields ${listFields(outcome.unknownFields)}.`);
      const cleaned = controlCharacterWarning(`Line ${lineNumber}`, outcome.replacedControls);
      if (cleaned !== undefined) warn(cleaned);
    }
  }
  if (unlistedWarnings > 0) {
    result.warnings.push(`${unlistedWarnings} more warnings (unknown fields, control characters) not listed.`);
  }
  return result;
}

type LineOutcome =
  | { error: string; id?: string }
  | { other: Record<string, unknown> }
  | { memory: NewMemory; unknownFields: string[]; replacedControls: number };

function parseLine(line: string, maxLineBytes: number, limits: MemoryLimits | undefined): LineOutcome {
  // Cheap bound first: a line of more UTF-16 units than allowed bytes is too long in any encoding.
  const bytes = line.length > maxLineBytes ? line.length : Buffer.byteLength(line, 'utf8');
  if (bytes > maxLineBytes) return { error: `Line is ${bytes} bytes; at most ${maxLineBytes} are accepted.` };
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch (error) {
    return { error: `Not valid JSON: ${error instanceof Error ? error.message.slice(0, 200) : String(error)}.` };
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return { error: 'Each line must be a JSON object, for example {"kind":"memory","id":…,"scope":…,"content":…}.' };
  }
  const record = value as Record<string, unknown>;
  const kind = record.kind;
  if (kind !== undefined && typeof kind !== 'string') return { error: '"kind" must be a string such as "memory".' };
  if (kind !== undefined && kind !== 'memory') return { other: record };
  const outcome = parseMemoryRecord(record, limits);
  if ('error' in outcome && typeof record.id === 'string' && record.id.length <= 200)
    return { error: outcome.error, id: record.id };
  return outcome;
}

function parseMemoryRecord(record: Record<string, unknown>, limits: MemoryLimits | undefined): LineOutcome {
  const missing = REQUIRED_FIELDS.filter((field) => !Object.hasOwn(record, field) || record[field] === null);
  if (missing.length > 0) return { error: `Memory line is missing ${missing.join(', ')}.` };

  const input: Record<string, unknown> = {};
  const unknownFields: string[] = [];
  let replacedControls = 0;
  for (const key of Object.keys(record)) {
    if (key === 'kind') continue;
    const field = (MEMORY_FIELDS as readonly string[]).includes(key)
      ? (key as MemoryField)
      : SNAKE_CASE_ALIASES.get(key);
    if (field === undefined) {
      unknownFields.push(key);
      continue;
    }
    let value = field === 'source' ? renameSourceAliases(record[key]) : record[key];
    // Real text (pasted from PDFs, terminals) carries control characters: cleaned, counted, kept.
    if ((field === 'content' || field === 'description') && typeof value === 'string') {
      const cleaned = cleanControlCharacters(value);
      if (field === 'description') value = cleaned.text.replace(/[\n\t]+/g, ' ');
      else value = cleaned.text;
      replacedControls += cleaned.replaced;
    }
    if (Object.hasOwn(input, field) && JSON.stringify(input[field]) !== JSON.stringify(value)) {
      return { error: `Conflicting values for ${field}: give it once, in camelCase or snake_case.` };
    }
    input[field] = value;
  }
  try {
    normalizeNewMemory(
      input as unknown as NewMemory,
      limits === undefined ? VALIDATION_CONTEXT : { ...VALIDATION_CONTEXT, limits },
    );
  } catch (error) {
    if (error instanceof EngramError) return { error: error.message };
    throw error;
  }
  return { memory: input as unknown as NewMemory, unknownFields, replacedControls };
}

function renameSourceAliases(source: unknown): unknown {
  if (source === null || typeof source !== 'object' || Array.isArray(source)) return source;
  // fromEntries defines own properties, so a "__proto__" key stays a key (and is refused later).
  return Object.fromEntries(Object.entries(source).map(([key, value]) => [SOURCE_ALIASES.get(key) ?? key, value]));
}

// Field names come from the input: shorten and quote them so a hostile key cannot flood the report.
function listFields(fields: string[]): string {
  const shown = fields
    .slice(0, 10)
    .map((field) => JSON.stringify(field.length > 40 ? `${field.slice(0, 40)}…` : field));
  return fields.length > 10 ? `${shown.join(', ')} and ${fields.length - 10} more` : shown.join(', ');
}
