import { EngramError } from '../kernel/errors.js';
import { MEMORY_TYPES, type Memory } from './memory.js';
import { DEFAULT_SETTINGS } from '../kernel/settings.js';

/** The index file of a memory directory. */
export const MEMORY_INDEX_FILE = 'MEMORY.md';

export interface MemoryIndexOptions {
  /** Line cap of MEMORY.md; default `index.maxLines` (200). */
  maxLines?: number;
  /** Byte cap of MEMORY.md; default `index.maxBytes` (25,000). */
  maxBytes?: number;
  /** Longest entry line in characters; default `index.entryMaxChars` (150). */
  entryMaxChars?: number;
  /** The topic file of each memory, by id; default `assignFileNames(memories)`. */
  fileNames?: ReadonlyMap<string, string>;
}

export interface MemoryIndex {
  text: string;
  truncated: boolean;
  /** Memories listed in the text. */
  shown: number;
  /** Active memories given (the ones an index may list). */
  total: number;
  /** Archived or invalidated memories given: never listed (their topic files may exist, marked in their frontmatter). */
  inactive: number;
}

const HEADER = ['# Memory index', ''];
// Header, warning and the blank line that keeps the list out of the warning's blockquote.
const TRUNCATED_OVERHEAD_LINES = HEADER.length + 2;
const MAX_STEM_LENGTH = 100;
// Names Windows reserves for devices, with or without an extension.
const RESERVED_STEM = /^(con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³]|conin\$|conout\$)(\.|$)/i;
const WRITABLE_FILE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*\.md$/;
const LINE_BREAKS_AND_CONTROLS = /[\u0000-\u001F\u007F-\u009F\u2028\u2029]+/g;

/**
 * Builds MEMORY.md: a header and one `- [name](file.md) — description` line per active memory, in a
 * stable order (type, name, id) so the text is byte-identical between calls. Archived and
 * invalidated memories are never listed: the index is loaded into prompts, and a forgotten or
 * merged-away fact must not come back through it. Past the line or byte cap it is cut at a line
 * boundary and a warning line says how many memories it shows.
 */
export function buildMemoryIndex(given: readonly Memory[], options: MemoryIndexOptions = {}): MemoryIndex {
  const memories = given.filter(isIndexable);
  const inactive = given.length - memories.length;
  const maxLines = positiveInteger(options.maxLines ?? DEFAULT_SETTINGS.index.maxLines, 'maxLines');
  const maxBytes = positiveInteger(options.maxBytes ?? DEFAULT_SETTINGS.index.maxBytes, 'maxBytes');
  const entryMaxChars = positiveInteger(options.entryMaxChars ?? DEFAULT_SETTINGS.index.entryMaxChars, 'entryMaxChars');
  const fileNames = options.fileNames ?? assignFileNames(given);
  const total = memories.length;

  const entries = [...memories].sort(compareForIndex).map((memory) => {
    const fileName = fileNames.get(memory.id);
    if (fileName === undefined || !WRITABLE_FILE_NAME.test(fileName) || isReservedFileName(fileName)) {
      throw new EngramError(
        'INVALID_INPUT',
        `No safe file name for memory ${JSON.stringify(memory.id)}: give fileNames from assignFileNames().`,
      );
    }
    return renderEntry(memory, fileName, entryMaxChars);
  });

  const full = joinLines([...HEADER, ...entries]);
  if (HEADER.length + entries.length <= maxLines && utf8Length(full) <= maxBytes) {
    return { text: full, truncated: false, shown: total, total, inactive };
  }

  const headerBytes = utf8Length(joinLines(HEADER)) + 1; // the blank line after the warning
  const entryBytes = [0];
  for (const entry of entries) entryBytes.push((entryBytes[entryBytes.length - 1] ?? 0) + utf8Length(entry) + 1);
  for (let shown = Math.min(total, maxLines - TRUNCATED_OVERHEAD_LINES); shown >= 0; shown -= 1) {
    const warning = warningLine(shown, total, maxLines, maxBytes);
    if (headerBytes + utf8Length(warning) + 1 + (entryBytes[shown] ?? 0) <= maxBytes) {
      return {
        text: joinLines([...HEADER, warning, '', ...entries.slice(0, shown)]),
        truncated: true,
        shown,
        total,
        inactive,
      };
    }
  }
  // Caps too small for even the header: the warning alone, cut by bytes if it must be.
  const cut = cutToCaps(joinLines([warningLine(0, total, maxLines, maxBytes)]), { maxLines, maxBytes });
  return { text: cut.text, truncated: true, shown: 0, total, inactive };
}

/** Whether a memory belongs in an index: not archived, not invalidated. */
export function isIndexable(memory: Pick<Memory, 'archived' | 'invalidAt'>): boolean {
  return !memory.archived && (memory.invalidAt === null || memory.invalidAt === undefined);
}

/**
 * Cuts text to at most `maxLines` lines and `maxBytes` UTF-8 bytes: at a line boundary when one
 * fits, otherwise by bytes, never inside a character. This is how an index over its caps is loaded.
 */
export function cutToCaps(text: string, caps: { maxLines: number; maxBytes: number }): { text: string; cut: boolean } {
  let result = text;
  let lineCount = 0;
  for (let position = 0; position < result.length;) {
    const newline = result.indexOf('\n', position);
    lineCount += 1;
    if (lineCount > caps.maxLines) {
      result = result.slice(0, position);
      break;
    }
    if (newline === -1) break;
    position = newline + 1;
  }
  const bytes = Buffer.from(result, 'utf8');
  if (bytes.length > caps.maxBytes) {
    const lastNewline = bytes.lastIndexOf(0x0a, caps.maxBytes - 1);
    result =
      lastNewline >= 0
        ? bytes.subarray(0, lastNewline + 1).toString('utf8')
        : bytes.subarray(0, utf8Boundary(bytes, caps.maxBytes)).toString('utf8');
  }
  return { text: result, cut: result.length !== text.length };
}

/**
 * Assigns each memory a topic file name: `<name>.md`, then `<name>-2.md`… when names collide,
 * decided by (name, createdAt, id) so it does not depend on input order. Never `MEMORY.md`,
 * never a path, a hidden file or a name Windows reserves.
 */
export function assignFileNames(memories: readonly Pick<Memory, 'id' | 'name' | 'createdAt'>[]): Map<string, string> {
  const seen = new Set<string>();
  for (const memory of memories) {
    if (seen.has(memory.id)) {
      throw new EngramError(
        'INVALID_INPUT',
        `Memory id ${JSON.stringify(memory.id)} appears twice; ids must be unique.`,
      );
    }
    seen.add(memory.id);
  }
  const candidates = memories
    .map((memory) => ({ memory, stem: fileStem(memory.name) }))
    .sort(
      (a, b) =>
        compareText(a.stem, b.stem) ||
        compareText(a.memory.createdAt, b.memory.createdAt) ||
        compareText(a.memory.id, b.memory.id),
    );
  // Lowercase keys: two names differing only in case would be one file on macOS and Windows.
  const taken = new Set<string>([MEMORY_INDEX_FILE.toLowerCase().replace(/\.md$/, '')]);
  const fileNames = new Map<string, string>();
  const waiting: typeof candidates = [];
  // First pass: each name's first memory claims the bare name, so a memory really named
  // `notes-2` keeps `notes-2.md` rather than losing it to the second `notes`.
  for (const candidate of candidates) {
    if (taken.has(candidate.stem)) {
      waiting.push(candidate);
      continue;
    }
    taken.add(candidate.stem);
    fileNames.set(candidate.memory.id, `${candidate.stem}.md`);
  }
  for (const candidate of waiting) {
    let suffix = 2;
    while (taken.has(`${candidate.stem}-${suffix}`)) suffix += 1;
    taken.add(`${candidate.stem}-${suffix}`);
    fileNames.set(candidate.memory.id, `${candidate.stem}-${suffix}.md`);
  }
  return fileNames;
}

/**
 * Lists the topic files MEMORY.md links to, in order of first appearance. Only plain `*.md`
 * names in the same folder count; paths, URLs, hidden files and MEMORY.md itself are ignored.
 */
export function parseMemoryIndex(text: string): string[] {
  const found: string[] = [];
  const seen = new Set<string>();
  const link = /\[(?:[^\]\\\n]|\\.)*\]\(\s*(<[^>\n]*>|[^)\s]+)(?:\s+"[^"\n]*")?\s*\)/g;
  for (const match of text.matchAll(link)) {
    const fileName = plainFileName(match[1] ?? '');
    if (fileName !== undefined && !seen.has(fileName)) {
      seen.add(fileName);
      found.push(fileName);
    }
  }
  return found;
}

/** Whether a name is a plain Markdown file name that stays inside its folder. */
export function isPlainMarkdownFileName(name: string): boolean {
  return (
    name.length > 0 &&
    name.length <= 255 &&
    /\.md$/i.test(name) &&
    !name.startsWith('.') &&
    !/[\/\\:\u0000-\u001F\u007F]/.test(name) &&
    name.toLowerCase() !== MEMORY_INDEX_FILE.toLowerCase()
  );
}

function plainFileName(target: string): string | undefined {
  let name = target.startsWith('<') && target.endsWith('>') ? target.slice(1, -1) : target;
  name = name.replace(/[#?].*$/, '');
  try {
    name = decodeURIComponent(name);
  } catch {
    return undefined;
  }
  if (name.startsWith('./')) name = name.slice(2);
  return isPlainMarkdownFileName(name) ? name : undefined;
}

function isReservedFileName(name: string): boolean {
  return RESERVED_STEM.test(name);
}

function fileStem(name: string): string {
  let stem = name
    .normalize('NFKC')
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, '-')
    .replace(/\.{2,}/g, '.')
    .replace(/^[._-]+/, '')
    .slice(0, MAX_STEM_LENGTH)
    .replace(/[._-]+$/, '');
  if (stem.length === 0) stem = 'memory';
  return RESERVED_STEM.test(stem) ? `memory-${stem}` : stem;
}

function renderEntry(memory: Memory, fileName: string, maxChars: number): string {
  const title = singleLine(memory.name).replace(/[\\[\]]/g, '\\$&');
  const link = `- [${title}](${fileName})`;
  const description = singleLine(memory.description);
  const full = description.length > 0 ? `${link} — ${description}` : link;
  if (characterCount(full) <= maxChars) return full;
  const room = maxChars - characterCount(link) - ' — '.length - 1;
  if (room >= 1) return `${link} — ${cutCharacters(description, room).trimEnd()}…`;
  // Even the bare link is too long: shorten its text, never its target, so it still resolves.
  const titleRoom = Math.max(1, maxChars - characterCount(`- [](${fileName})`) - 1);
  return characterCount(link) <= maxChars ? link : `- [${cutCharacters(title, titleRoom)}…](${fileName})`;
}

function warningLine(shown: number, total: number, maxLines: number, maxBytes: number): string {
  const byteCap = maxBytes % 1000 === 0 ? `${maxBytes / 1000} KB` : `${maxBytes} bytes`;
  return `> WARNING: MEMORY.md shows ${shown} of ${total} memories (cut at ${maxLines} lines / ${byteCap}); the others are still saved as topic files in this folder.`;
}

function compareForIndex(a: Memory, b: Memory): number {
  return typeRank(a) - typeRank(b) || compareText(a.name, b.name) || compareText(a.id, b.id);
}

function typeRank(memory: Memory): number {
  const rank = (MEMORY_TYPES as readonly string[]).indexOf(memory.type);
  return rank === -1 ? MEMORY_TYPES.length : rank;
}

// Code-unit order, not localeCompare: the index must not change with the machine's locale.
function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function singleLine(text: string): string {
  return text.replace(LINE_BREAKS_AND_CONTROLS, ' ').trim();
}

// Code points, so an emoji counts once and is never cut in half.
function characterCount(text: string): number {
  return Array.from(text).length;
}

function cutCharacters(text: string, count: number): string {
  return Array.from(text).slice(0, count).join('');
}

function joinLines(lines: readonly string[]): string {
  return lines.map((line) => `${line}\n`).join('');
}

function utf8Length(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

// The largest cut point at or below `limit` that does not fall inside a multi-byte character.
function utf8Boundary(bytes: Uint8Array, limit: number): number {
  let end = Math.min(limit, bytes.length);
  while (end > 0 && end < bytes.length && ((bytes[end] ?? 0) & 0xc0) === 0x80) end -= 1;
  return end;
}

function positiveInteger(value: number, field: string): number {
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new EngramError(
      'INVALID_INPUT',
      `Invalid index option ${field} ${JSON.stringify(value)}: a whole number from 1.`,
    );
  }
  return value;
}
