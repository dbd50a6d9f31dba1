import { EngramError } from '../kernel/errors.js';
import { INJECTED_PREAMBLES, MEMORY_CONTEXT_CLOSE, MEMORY_CONTEXT_OPEN } from './injected-markers.js';

/**
 * Text that must never reach a model or the store (SPEC §3, "never stored"):
 * - what the user wrapped in `<private>…</private>` (any case, spaces or attributes in the tag,
 *   across lines, nested). Unbalanced tags fail safe: an unclosed `<private>` hides everything after
 *   it, and a stray `</private>` hides what came before it since the last private block ended (or
 *   the start), because its opener was most likely cut off (a window that starts mid-block);
 * - engram's own injected texts, recognised by their exact opening words, so a recalled memory is
 *   never stored again as a new one: the `<memory_context>` block (to its closing tag, or to the end
 *   when cut off) and the static part (its preamble and the MEMORY.md index lines after it).
 * Pure: no I/O, linear in the text's length.
 */

export interface StripOptions {
  /** Put in place of each removed block (e.g. "[private]"); default nothing. */
  marker?: string;
}

/** What was removed, and whether the text ended inside a private block. */
export interface StripResult {
  text: string;
  /** Private blocks removed (an unclosed one and a stray closer count too). */
  privateBlocks: number;
  /** engram's own injected blocks removed. */
  injectedBlocks: number;
  /** The text ended inside a `<private>` block: everything after its opener was hidden. */
  unclosed: boolean;
}

// `<private>`, `< PRIVATE >`, `<private reason="x">`, `</private>`, `</ private >`; not `<private_notes>`.
const PRIVATE_TAG = /<[ \t]*(\/?)[ \t]*private(?![\w-])([^<>]{0,200})>/gi;
const INDEX_LINE = /^(?:# Memory index|> .*|- \[.*|[ \t]*)$/;

/**
 * Removes private blocks and engram's injected blocks from a text.
 * @example
 * stripPrivateContent('I use <private>my home address</private> tabs.').text // 'I use tabs.'
 */
export function stripPrivateContent(text: string, options: StripOptions = {}): StripResult {
  checkText(text, options);
  const injected = stripInjectedBlocks(text, options.marker ?? '');
  const state = { depth: 0 };
  const stripped = stripPrivateBlocks(injected.text, state, options.marker ?? '');
  return {
    text: stripped.text,
    privateBlocks: stripped.removed,
    injectedBlocks: injected.removed,
    unclosed: state.depth > 0,
  };
}

/** A text filter that carries an unclosed `<private>` from one text to the next (the messages of a conversation, in order). */
export interface PrivateContentFilter {
  (text: string): string;
  /** Whether the texts so far ended inside a private block (the next text is hidden until it closes). */
  readonly insidePrivate: boolean;
}

/**
 * A filter for the messages of one conversation, in order: a `<private>` opened in one message and
 * closed in a later one hides the messages between, which a filter of one message at a time would leak.
 */
export function createPrivateContentFilter(options: StripOptions = {}): PrivateContentFilter {
  checkText('', options);
  const state = { depth: 0 };
  const marker = options.marker ?? '';
  const filter = ((text: string) =>
    checkText(text, options) ??
    stripPrivateBlocks(stripInjectedBlocks(text, marker).text, state, marker).text) as PrivateContentFilter;
  Object.defineProperty(filter, 'insidePrivate', { get: () => state.depth > 0 });
  return filter;
}

function checkText(text: unknown, options: StripOptions): undefined {
  if (typeof text !== 'string')
    throw new EngramError('INVALID_INPUT', 'Private-content stripping takes a string of text.');
  if (
    options === null ||
    typeof options !== 'object' ||
    (options.marker !== undefined && typeof options.marker !== 'string')
  ) {
    throw new EngramError('INVALID_INPUT', 'Strip options are an object; marker, when given, is a string.');
  }
  return undefined;
}

function stripPrivateBlocks(text: string, state: { depth: number }, marker: string): { text: string; removed: number } {
  // Cheap exit for the common case; a text inside a block carried over is hidden even without tags.
  if (state.depth === 0 && !/private/i.test(text)) return { text, removed: 0 };
  const kept: string[] = [];
  let keepFrom = state.depth > 0 ? -1 : 0;
  let removed = 0;
  PRIVATE_TAG.lastIndex = 0;
  for (let tag = PRIVATE_TAG.exec(text); tag !== null; tag = PRIVATE_TAG.exec(text)) {
    const closing = tag[1] === '/';
    if (!closing && tag[2]!.trimEnd().endsWith('/')) continue; // `<private/>` holds nothing
    if (!closing) {
      if (state.depth === 0) kept.push(text.slice(keepFrom, tag.index));
      state.depth += 1;
      continue;
    }
    if (state.depth > 0) {
      state.depth -= 1;
      if (state.depth === 0) {
        removed += 1;
        if (marker !== '') kept.push(marker);
        keepFrom = tag.index + tag[0].length;
      }
      continue;
    }
    // A closer with no opener: what came before it since the last block (or the start) goes too.
    removed += 1;
    if (marker !== '') kept.push(marker);
    keepFrom = tag.index + tag[0].length;
  }
  if (state.depth === 0) kept.push(text.slice(keepFrom));
  else {
    // Inside a block at the end (opened here, or carried over and not closed): the rest is hidden.
    removed += 1;
    if (marker !== '') kept.push(marker);
  }
  return { text: joinPieces(kept), removed };
}

function stripInjectedBlocks(text: string, marker: string, depth = 0): { text: string; removed: number } {
  if (!text.includes(MEMORY_CONTEXT_OPEN) && !text.includes(STATIC_HEAD)) return { text, removed: 0 };
  const kept: string[] = [];
  let position = 0;
  let removed = 0;
  while (position < text.length) {
    const block = nextInjectedBlock(text, position);
    if (!block) break;
    kept.push(text.slice(position, block.start));
    if (marker !== '') kept.push(marker);
    removed += 1;
    position = block.end;
  }
  kept.push(text.slice(position));
  const raw = { text: joinPieces(kept), removed };
  if (depth >= MAX_ESCAPE_DEPTH) return raw;
  const escaped = stripEscapedBlocks(raw.text, marker, depth);
  return { text: escaped.text, removed: raw.removed + escaped.removed };
}

// engram's injected texts also reach transcripts as JSON: a hook's stdout (`{"hookSpecificOutput":
// {"additionalContext":"# Long-term memory\n\n…"}}`) kept as a string, that line itself inside a
// tool result or a pasted log, so escaped once, twice or more. There the opening words read with
// `\n` for each line break and the checks above never match.
const STATIC_HEAD = '# Long-term memory';
/** JSON string levels searched for an escaped block (a hook's JSON inside a transcript line inside a tool result is three). */
const MAX_ESCAPE_DEPTH = 4;
const escapeOnce = (text: string): string => JSON.stringify(text).slice(1, -1);
/** The opening words of each injected text as they read inside 1..MAX_ESCAPE_DEPTH levels of JSON strings. */
const ESCAPED_OPENINGS: readonly string[] = (() => {
  const openings = [
    `${MEMORY_CONTEXT_OPEN}\n${INJECTED_PREAMBLES.memoryContext.slice(0, 30)}`,
    ...INJECTED_PREAMBLES.staticParts.map((preamble) => preamble.slice(0, 50)),
  ];
  const found: string[] = [];
  for (const opening of openings) {
    let text = opening;
    for (let level = 1; level <= MAX_ESCAPE_DEPTH; level += 1) {
      text = escapeOnce(text);
      found.push(text);
    }
  }
  return found;
})();

/**
 * engram's texts inside JSON strings: each string (one level of quoting) that holds an escaped opening
 * is decoded, stripped (its own inner strings too, to MAX_ESCAPE_DEPTH), and written back as JSON. A
 * string cut off before its closing quote (a preview, a torn line) is read to the end of the text.
 */
function stripEscapedBlocks(text: string, marker: string, depth: number): { text: string; removed: number } {
  const kept: string[] = [];
  let position = 0;
  let removed = 0;
  // Where each opening occurs next (-1: nowhere after): searched again only once passed, so many
  // openings in a long text cost one pass per opening, not one per match.
  const next = ESCAPED_OPENINGS.map((opening) => text.indexOf(opening));
  for (;;) {
    let at = -1;
    for (const [index, opening] of ESCAPED_OPENINGS.entries()) {
      if (next[index]! !== -1 && next[index]! < position) next[index] = text.indexOf(opening, position);
      const found = next[index]!;
      if (found !== -1 && (at === -1 || found < at)) at = found;
    }
    if (at === -1) break;
    const open = quoteBefore(text, at, position);
    const close = quoteAfter(text, at);
    const literal =
      open === -1 ? undefined : decodeJsonString(text.slice(open, close === -1 ? text.length : close + 1));
    if (literal === undefined) {
      // Not a JSON string after all (escapes typed by hand): what follows the opening words is engram's, cut at the end.
      kept.push(text.slice(position, at));
      if (marker !== '') kept.push(marker);
      removed += 1;
      position = text.length;
      break;
    }
    const inner = stripInjectedBlocks(literal, marker, depth + 1);
    kept.push(text.slice(position, open), JSON.stringify(inner.text));
    removed += Math.max(1, inner.removed);
    position = close === -1 ? text.length : close + 1;
  }
  if (removed === 0) return { text, removed: 0 };
  kept.push(text.slice(position));
  return { text: kept.join(''), removed };
}

/** Whether the character at `at` is escaped (an odd run of backslashes before it). */
function isEscaped(text: string, at: number): boolean {
  let count = 0;
  for (let index = at - 1; index >= 0 && text[index] === '\\'; index -= 1) count += 1;
  return count % 2 === 1;
}

/** The opening quote of the JSON string holding `at`: the nearest unescaped `"` before it (not before `floor`). */
function quoteBefore(text: string, at: number, floor: number): number {
  for (let index = text.lastIndexOf('"', at); index >= floor; index = text.lastIndexOf('"', index - 1)) {
    if (!isEscaped(text, index)) return index;
    if (index === 0) break;
  }
  return -1;
}

/** The closing quote of the JSON string holding `at`, or -1 when it was cut off. */
function quoteAfter(text: string, at: number): number {
  for (let index = text.indexOf('"', at); index !== -1; index = text.indexOf('"', index + 1))
    if (!isEscaped(text, index)) return index;
  return -1;
}

/** A JSON string literal's value; one cut off (no closing quote, maybe mid-escape) is closed first. Undefined when it is not one. */
function decodeJsonString(literal: string): string | undefined {
  const attempts =
    literal.length > 1 && literal.endsWith('"') && !isEscaped(literal, literal.length - 1)
      ? [literal]
      : [`${literal}"`, `${literal.replace(/\\(?:u[0-9a-fA-F]{0,3})?$/, '')}"`];
  for (const attempt of attempts) {
    try {
      const value: unknown = JSON.parse(attempt);
      if (typeof value === 'string') return value;
    } catch {
      // Try the next reading.
    }
  }
  return undefined;
}

/** The next `<memory_context>` block or static part from `from`, whichever starts first. */
function nextInjectedBlock(text: string, from: number): { start: number; end: number } | undefined {
  const candidates: Array<{ start: number; end: number }> = [];
  const blockStart = findMemoryContextBlock(text, from);
  if (blockStart !== -1) {
    const close = text.indexOf(MEMORY_CONTEXT_CLOSE, blockStart);
    // The block ends with its closing tag and the line break engram writes after it.
    const end =
      close === -1
        ? text.length
        : close + MEMORY_CONTEXT_CLOSE.length + (text.startsWith('\n', close + MEMORY_CONTEXT_CLOSE.length) ? 1 : 0);
    candidates.push({ start: blockStart, end });
  }
  for (const preamble of INJECTED_PREAMBLES.staticParts) {
    const staticStart = text.indexOf(preamble.trimEnd(), from);
    if (staticStart !== -1)
      candidates.push({ start: staticStart, end: staticPartEnd(text, staticStart + preamble.trimEnd().length) });
  }
  return candidates.sort((a, b) => a.start - b.start)[0];
}

/** The start of a real block: the opening tag followed by the block's own preamble (a tag named in prose is kept). */
function findMemoryContextBlock(text: string, from: number): number {
  const preamble = INJECTED_PREAMBLES.memoryContext.slice(0, 40);
  for (let at = text.indexOf(MEMORY_CONTEXT_OPEN, from); at !== -1; at = text.indexOf(MEMORY_CONTEXT_OPEN, at + 1)) {
    const after = text.slice(at + MEMORY_CONTEXT_OPEN.length, at + MEMORY_CONTEXT_OPEN.length + 80).replace(/^\s+/, '');
    if (after.startsWith(preamble)) return at;
  }
  return -1;
}

/** The end of the static part: after its preamble (ending at `afterPreamble`), the index's header, warning, entry and blank lines. */
function staticPartEnd(text: string, afterPreamble: number): number {
  let position = afterPreamble;
  while (position < text.length) {
    const newline = text.indexOf('\n', position + 1);
    const lineStart = text[position] === '\n' ? position + 1 : position;
    const lineEnd = newline === -1 ? text.length : newline;
    if (!INDEX_LINE.test(text.slice(lineStart, lineEnd))) break;
    position = lineEnd;
  }
  return position;
}

/** Joins kept pieces without leaving a double space where a block was cut out. */
function joinPieces(pieces: readonly string[]): string {
  let out = '';
  for (const piece of pieces) {
    if (/[ \t]$/.test(out) && /^[ \t]/.test(piece)) out += piece.replace(/^[ \t]+/, '');
    else if (/[ \t]$/.test(out) && /^[.,;:!?]/.test(piece)) out = out.replace(/[ \t]+$/, '') + piece;
    else out += piece;
  }
  return out;
}
