import {
  LineCounter,
  parseDocument,
  stringify,
  type CreateNodeOptions,
  type DocumentOptions,
  type ParseOptions,
  type SchemaOptions,
  type ToStringOptions,
  type YAMLError,
} from 'yaml';
import { EngramError } from '../kernel/errors.js';
import {
  assertName,
  assertTimestamp,
  deriveName,
  DEFAULT_MEMORY_LIMITS,
  MEMORY_FIELD_ORDER,
  normalizeNewMemory,
  type Memory,
  type MemoryLimits,
  type NewMemory,
} from './memory.js';
import type { Scope } from './scope.js';

/** What a topic file cannot say for itself: the scope, clock and id to use when its frontmatter is silent. */
export interface MemoryFileFallback {
  scope: Scope;
  now: string;
  /** Id of a memory whose frontmatter carries none; without it, such a result has no id. */
  id?: string;
  /** The file's name (`user_role.md`), used for the memory's name when the frontmatter has none. */
  fileName?: string;
  limits?: MemoryLimits;
}

/** Frontmatter larger than this is refused before YAML ever sees it. */
export const MAX_FRONTMATTER_BYTES = 64 * 1024;

// Legitimate frontmatter never needs aliases; a small allowance keeps hand-written anchors working
// while an alias bomb ("billion laughs") fails fast instead of expanding.
const MAX_ALIAS_COUNT = 10;

const DELIMITER = /^---[ \t]*$/;
// Lets validation run when the caller gives no fallback id; it never reaches the result.
const PLACEHOLDER_ID = 'memory-file-placeholder';

// Core schema only, no custom or YAML 1.1 tags, no merge keys: frontmatter is data, never code.
const PARSE_OPTIONS: ParseOptions & DocumentOptions & SchemaOptions = {
  schema: 'core',
  customTags: [],
  resolveKnownTags: false,
  merge: false,
  uniqueKeys: true,
  strict: true,
  prettyErrors: false,
  intAsBigInt: false,
};

// `compat: 'yaml-1.1'` quotes values such as `yes` or ISO dates, so YAML 1.1 readers (as many
// frontmatter libraries are) read back the same strings; `lineWidth: 0` keeps each value on one line.
const STRINGIFY_OPTIONS: DocumentOptions & SchemaOptions & CreateNodeOptions & ToStringOptions = {
  schema: 'core',
  compat: 'yaml-1.1',
  lineWidth: 0,
  minContentWidth: 0,
  aliasDuplicateObjects: false,
};

/** What a topic file leaves out or adds to engram's own metadata. */
export interface RenderMemoryFileOptions {
  /** Whether the recall bookkeeping (lastAccessedAt, hitCount) is written; default true. A synced file leaves it out: each machine counts its own recalls. */
  accessCounts?: boolean;
  /** More `metadata` keys after engram's own (sync's field versions); a key engram writes itself is refused. */
  extraMetadata?: Readonly<Record<string, unknown>>;
}

/** Renders a memory as a Claude-Code-compatible topic file: YAML frontmatter, then the content as the body. */
export function renderMemoryFile(memory: Memory, options: RenderMemoryFileOptions = {}): string {
  const frontmatter = {
    name: memory.name,
    description: memory.description,
    metadata: {
      type: memory.type,
      id: memory.id,
      scope: memory.scope,
      importance: memory.importance,
      source: memory.source === null ? null : { ...memory.source },
      createdAt: memory.createdAt,
      updatedAt: memory.updatedAt,
      lastAccessedAt: memory.lastAccessedAt,
      hitCount: memory.hitCount,
      validFrom: memory.validFrom,
      invalidAt: memory.invalidAt,
      supersededBy: memory.supersededBy,
      archived: memory.archived,
    } as Record<string, unknown>,
  };
  if (options.accessCounts === false) {
    delete frontmatter.metadata.lastAccessedAt;
    delete frontmatter.metadata.hitCount;
  }
  for (const [key, value] of Object.entries(options.extraMetadata ?? {})) {
    if (Object.hasOwn(frontmatter.metadata, key) || key === 'lastAccessedAt' || key === 'hitCount')
      throw new EngramError('INTERNAL', `Extra metadata ${JSON.stringify(key)} would replace engram's own.`);
    frontmatter.metadata[key] = value;
  }
  // The blank line after the frontmatter and the final newline are part of the layout, not the
  // content: the parser removes exactly one of each, so content keeps its own edge whitespace.
  return `---\n${stringify(frontmatter, STRINGIFY_OPTIONS)}---\n\n${memory.content}\n`;
}

/**
 * Parses a topic file written by engram or by Claude Code (current `metadata.type` or v2.1.120
 * top-level `type` with a title as name) into a validated new memory. Throws INVALID_INPUT when
 * the frontmatter is malformed and the memory validators' errors when a field is invalid.
 */
export function parseMemoryFile(text: string, fallback: MemoryFileFallback): NewMemory {
  return parseMemoryFileWithMetadata(text, fallback).memory;
}

/**
 * Parses a topic file as `parseMemoryFile` does, and also returns its frontmatter's `metadata`
 * mapping as written (for keys engram does not read itself, such as sync's field versions).
 */
export function parseMemoryFileWithMetadata(
  text: string,
  fallback: MemoryFileFallback,
): { memory: NewMemory; metadata: Record<string, unknown> } {
  if (typeof text !== 'string') throw invalid('A memory file is text.');
  const limits = fallback.limits ?? DEFAULT_MEMORY_LIMITS;
  const { frontmatter, body } = splitFrontmatter(normalizeLineEndings(text));
  const fields = frontmatter === undefined ? {} : parseFrontmatter(frontmatter.text, frontmatter.firstLine);
  const metadata = readMetadata(fields);
  const content = frontmatter === undefined ? stripOne(body, '', '\n') : stripOne(body, '\n', '\n');
  if (content.trim().length === 0) {
    throw invalid('The memory file has no content: the Markdown after the frontmatter is the memory itself.');
  }

  const input: Record<string, unknown> = { scope: metadata.scope ?? fallback.scope, content };
  const id = metadata.id ?? fallback.id;
  if (id !== undefined && id !== null) input.id = id;
  const type = metadata.type ?? fields.type;
  if (type !== undefined && type !== null) input.type = typeof type === 'string' ? type.trim().toLowerCase() : type;
  const name = resolveName(fields.name, fallback.fileName, limits);
  if (name !== undefined) input.name = name;
  const description = readDescription(fields.description);
  if (description !== undefined) input.description = description;
  for (const key of COPIED_METADATA) {
    if (metadata[key] !== undefined) input[key] = metadata[key];
  }
  applyModified(input, fields.modified);

  const memory = normalizeNewMemory(input as unknown as NewMemory, { now: fallback.now, id: PLACEHOLDER_ID, limits });
  // Return only what the file said (normalized), so the caller's own defaults fill the rest.
  const result: Record<string, unknown> = {};
  for (const key of Object.keys(input)) result[key] = memory[key as keyof Memory];
  return { memory: result as unknown as NewMemory, metadata };
}

// The bookkeeping fields after the content travel in the frontmatter's metadata as they are.
const COPIED_METADATA = MEMORY_FIELD_ORDER.slice(MEMORY_FIELD_ORDER.indexOf('importance'));

function invalid(message: string): EngramError {
  return new EngramError('INVALID_INPUT', message);
}

// A file whose first line ends in CRLF was saved with Windows line endings throughout. engram
// itself always writes LF, so a carriage return inside an engram-written body is left alone.
function normalizeLineEndings(text: string): string {
  const source = text.startsWith('\uFEFF') ? text.slice(1) : text;
  const firstNewline = source.indexOf('\n');
  return firstNewline > 0 && source[firstNewline - 1] === '\r' ? source.replace(/\r\n/g, '\n') : source;
}

interface SplitFile {
  frontmatter?: { text: string; firstLine: number };
  body: string;
}

function splitFrontmatter(source: string): SplitFile {
  const firstNewline = source.indexOf('\n');
  const firstLine = firstNewline === -1 ? source : source.slice(0, firstNewline);
  if (!DELIMITER.test(firstLine)) return { body: source };
  if (firstNewline === -1) throw unclosed();
  const start = firstNewline + 1;
  let position = start;
  while (position <= source.length) {
    if (position - start > MAX_FRONTMATTER_BYTES) {
      throw invalid(
        `Malformed frontmatter: longer than ${MAX_FRONTMATTER_BYTES} bytes, or never closed with a "---" line.`,
      );
    }
    const lineEnd = source.indexOf('\n', position);
    const line = source.slice(position, lineEnd === -1 ? source.length : lineEnd);
    if (DELIMITER.test(line)) {
      return {
        frontmatter: { text: source.slice(start, position), firstLine: 2 },
        body: lineEnd === -1 ? '' : source.slice(lineEnd + 1),
      };
    }
    if (lineEnd === -1) break;
    position = lineEnd + 1;
  }
  throw unclosed();
}

function unclosed(): EngramError {
  return invalid('Malformed frontmatter: the file opens with "---" on line 1 but no closing "---" line follows.');
}

function stripOne(text: string, leading: string, trailing: string): string {
  let result = leading !== '' && text.startsWith(leading) ? text.slice(leading.length) : text;
  if (trailing !== '' && result.endsWith(trailing)) result = result.slice(0, -trailing.length);
  return result;
}

function parseFrontmatter(text: string, firstLine: number): Record<string, unknown> {
  if (Buffer.byteLength(text, 'utf8') > MAX_FRONTMATTER_BYTES) {
    throw invalid(`Malformed frontmatter: larger than ${MAX_FRONTMATTER_BYTES} bytes.`);
  }
  const lineCounter = new LineCounter();
  let value: unknown;
  try {
    const document = parseDocument(text, { ...PARSE_OPTIONS, lineCounter });
    // Warnings include unresolved tags (`!!js/function`, `!custom`): refuse them rather than guess.
    const problem = document.errors[0] ?? document.warnings[0];
    if (problem) throw invalid(`Malformed frontmatter: ${describeYamlError(problem, lineCounter, firstLine)}`);
    value = document.toJS({ maxAliasCount: MAX_ALIAS_COUNT });
  } catch (error) {
    if (error instanceof EngramError) throw error;
    const reason =
      error instanceof ReferenceError && /alias/i.test(error.message)
        ? 'too many YAML aliases (a possible alias-expansion attack).'
        : error instanceof RangeError
          ? 'nested too deeply.'
          : `${error instanceof Error ? error.message : String(error)}.`;
    throw invalid(`Malformed frontmatter: ${reason}`);
  }
  if (value === null || value === undefined) return {};
  if (!isRecord(value)) {
    throw invalid('Malformed frontmatter: it must be a YAML mapping of keys to values, not a list or a single value.');
  }
  return value;
}

function describeYamlError(error: YAMLError, lineCounter: LineCounter, firstLine: number): string {
  const message = (error.message.split('\n')[0] ?? error.message).replace(/[.:]\s*$/, '');
  const position = lineCounter.linePos(error.pos[0]);
  const line = Math.max(position.line, 1) + firstLine - 1;
  return `${message} (file line ${line}).`;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function readMetadata(fields: Record<string, unknown>): Record<string, unknown> {
  const metadata = fields.metadata;
  if (metadata === undefined || metadata === null) return {};
  if (!isRecord(metadata))
    throw invalid('Malformed frontmatter: "metadata" must be a mapping (for example "type: user").');
  return metadata;
}

// Claude Code v2.1.120 wrote a 3-4 word title as the name; engram names are slugs, so a title
// becomes its slug, and a file's own name is the next best source when there is no usable name.
function resolveName(raw: unknown, fileName: string | undefined, limits: MemoryLimits): string | undefined {
  if (raw !== undefined && raw !== null) {
    if (typeof raw !== 'string' && typeof raw !== 'number') {
      throw invalid('Malformed frontmatter: "name" must be a short text, for example "user-role".');
    }
    const slug = toSlug(String(raw), limits);
    if (slug !== undefined) return slug;
  }
  if (fileName !== undefined) {
    const base = fileName.split(/[\\/]/).pop() ?? fileName;
    return toSlug(base.replace(/\.md$/i, ''), limits);
  }
  return undefined;
}

function toSlug(text: string, limits: MemoryLimits): string | undefined {
  try {
    return assertName(text, limits);
  } catch {
    // Not already a slug: derive one, unless nothing in it survives (an all-CJK title, say).
    if (!/[a-z0-9]/i.test(text.normalize('NFKD'))) return undefined;
    return deriveName(text, limits.maxNameLength);
  }
}

// A description is one line; YAML folded or literal blocks are joined back into one.
function readDescription(raw: unknown): string | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (typeof raw !== 'string') {
    throw invalid('Malformed frontmatter: "description" must be one line of text.');
  }
  return /[\r\n]/.test(raw) ? raw.replace(/\s*[\r\n]+\s*/g, ' ').trim() : raw;
}

// Claude Code stamps `modified:` when it edits a file, so that edit is newer than engram's own
// updatedAt; with no createdAt at all, the edit is the earliest time the file is known to exist.
function applyModified(input: Record<string, unknown>, modified: unknown): void {
  if (modified === undefined || modified === null) return;
  const stamp = assertTimestamp(modified, 'modified');
  const updatedAt = input.updatedAt;
  // An unreadable updatedAt is left in place so validation reports it instead of hiding it.
  if (updatedAt === undefined || (typeof updatedAt === 'string' && Date.parse(updatedAt) < Date.parse(stamp))) {
    input.updatedAt = stamp;
  }
  if (input.createdAt === undefined) input.createdAt = stamp;
}
