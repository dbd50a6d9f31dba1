import { ageNote, formatDays, type AgeNoteOptions } from './age-notes.js';
import {
  BLOCK_PREAMBLE,
  MEMORY_CONTEXT_CLOSE,
  MEMORY_CONTEXT_OPEN,
  staticPreamble,
  type MemoryPlacement,
} from '../privacy/injected-markers.js';
import { EngramError } from '../kernel/errors.js';
import { deriveName, type Memory } from '../memory/memory.js';
import { DEFAULT_SETTINGS } from '../kernel/settings.js';
import { tokensForBytes, utf8ByteLength } from '../kernel/token-estimate.js';

/** One memory offered to the block, in the order it should be considered (best first). */
export interface ContextCandidate {
  memory: Memory;
  /** Ranked recall's normalized score, or null for a memory only the LLM retriever picked. */
  score: number | null;
  /** `ranked` (full-text ranking), `selected` (the LLM retriever) or `both`. */
  source: 'ranked' | 'selected' | 'both';
  /** A newer memory that says otherwise of the same subject (recall's `disagrees`): this one is marked older. */
  newer?: string;
}

/** A candidate with the estimated tokens its entry takes in the block. */
export interface PackedMemory extends ContextCandidate {
  tokens: number;
}

export interface PackOptions extends AgeNoteOptions {
  /** Budget of the whole block, wrapper tags included; default `injection.maxTokens` (3,000). */
  maxTokens?: number;
  /** The instant age notes are computed at (ISO-8601). */
  now: string;
  /** Default `tokens.bytesPerTextToken` (4). */
  bytesPerToken?: number;
}

export interface PackedContext {
  /** `<memory_context>…</memory_context>`, or '' when nothing fits or nothing was offered. */
  block: string;
  /** Estimated tokens of `block`; never above the budget. */
  tokens: number;
  included: PackedMemory[];
  /** Offered but left out because they did not fit the budget. */
  omitted: PackedMemory[];
}

const BLOCK_HEAD = `${MEMORY_CONTEXT_OPEN}\n${BLOCK_PREAMBLE}\n`;
const BLOCK_TAIL = `${MEMORY_CONTEXT_CLOSE}\n`;

// A "<" that could open or close a tag ("</memory_context>", "<system>", "< /memory>", "<!--"),
// including full-width and small look-alikes that normalize to "<".
const TAG_OPENER = /[<\uFF1C\uFE64](?=\s*[/\uFF0F!?A-Za-z])/g;

/**
 * Makes memory text safe inside the block: every "<" that could start a tag becomes "&lt;", so a
 * memory can neither close `<memory_context>` (or a host's wrapper such as `<system-reminder>`)
 * nor open a tag that reads like a new instruction segment. "x <= 3" and "2 < 5" stay as they are.
 */
export function escapeContextText(text: string): string {
  return text.replace(TAG_OPENER, '&lt;');
}

/**
 * One memory as the model sees it: `<memory id type [name] [age] [note]>content</memory>` on one line
 * (a multi-line content keeps its lines), escaped. Every byte of an entry is paid once per memory, so
 * what the preamble says once is not repeated: the age is "N days" (the preamble says it is the time
 * since the memory was written, and what an age and "stale" mean), no line breaks pad the tags, and
 * a name derived from the content's first words (what a memory written without one gets) is left out.
 * With the shorter preamble: 7 bytes fewer per memory with an age, 3 without, and 98 fewer per block
 * than a line per tag and "N days old" (on LoCoMo, the same 7.3 memories in 7% fewer tokens).
 * `newer` names a newer memory that says otherwise: the note tells the model this one may be superseded.
 */
export function formatMemoryEntry(memory: Memory, now: string, options: AgeNoteOptions = {}, newer?: string): string {
  const note = ageNote(memory, now, options);
  const age = note.age === undefined ? '' : `${formatDays(note.days)}${note.state === 'stale' ? ', stale' : ''}`;
  const attributes = [
    attribute('id', memory.id),
    attribute('type', memory.type),
    ...(memory.name === deriveName(memory.content) ? [] : [attribute('name', memory.name)]),
    ...(age === '' ? [] : [attribute('age', age)]),
    ...(newer === undefined ? [] : [attribute('note', supersededNote(newer))]),
  ].join(' ');
  const content = escapeContextText(memory.content.replace(/\r\n?/g, '\n').trim());
  return `<memory ${attributes}>${content}</memory>\n`;
}

/**
 * Packs candidates greedily, in the order given, into a `<memory_context>` block of at most
 * `maxTokens` estimated tokens counting the wrapper: a memory that does not fit is left out and
 * the next one is tried. Pure and deterministic: the same candidates and `now` give the same bytes.
 */
export function packMemoryContext(candidates: readonly ContextCandidate[], options: PackOptions): PackedContext {
  const maxTokens = options.maxTokens ?? DEFAULT_SETTINGS.injection.maxTokens;
  if (typeof maxTokens !== 'number' || !Number.isInteger(maxTokens) || maxTokens < 0) {
    throw new EngramError('INVALID_INPUT', `Invalid maxTokens ${JSON.stringify(maxTokens)}: a whole number from 0.`);
  }
  const bytesPerToken = options.bytesPerToken ?? DEFAULT_SETTINGS.tokens.bytesPerTextToken;
  const ageOptions: AgeNoteOptions = {
    ...(options.ageNoteDays !== undefined && { ageNoteDays: options.ageNoteDays }),
    ...(options.staleDays !== undefined && { staleDays: options.staleDays }),
  };
  const wrapperBytes = utf8ByteLength(BLOCK_HEAD) + utf8ByteLength(BLOCK_TAIL);
  const entries: string[] = [];
  const included: PackedMemory[] = [];
  const omitted: PackedMemory[] = [];
  const seen = new Set<string>();
  let bytes = wrapperBytes;
  for (const candidate of candidates) {
    if (seen.has(candidate.memory.id)) continue;
    seen.add(candidate.memory.id);
    const entry = formatMemoryEntry(candidate.memory, options.now, ageOptions, candidate.newer);
    const entryBytes = utf8ByteLength(entry);
    const packed = { ...candidate, tokens: tokensForBytes(entryBytes, bytesPerToken) };
    if (tokensForBytes(bytes + entryBytes, bytesPerToken) <= maxTokens) {
      bytes += entryBytes;
      entries.push(entry);
      included.push(packed);
    } else {
      omitted.push(packed);
    }
  }
  if (included.length === 0) return { block: '', tokens: 0, included, omitted };
  const block = `${BLOCK_HEAD}${entries.join('')}${BLOCK_TAIL}`;
  const tokens = tokensForBytes(utf8ByteLength(block), bytesPerToken);
  if (tokens > maxTokens)
    throw new EngramError('INTERNAL', `Memory context packed to ${tokens} tokens over a budget of ${maxTokens}.`);
  return { block, tokens, included, omitted };
}

/**
 * The static part for the start of the system prompt: fixed instructions and the MEMORY.md index
 * text, escaped like the block. '' when there is no index text. Depends only on its input, so an
 * unchanged index gives byte-identical text (what keeps the provider's prompt cache valid).
 */
export function formatStaticMemoryPart(indexText: string, placement: MemoryPlacement = 'system-end'): string {
  if (indexText.trim() === '') return '';
  return `${staticPreamble(placement)}\n${escapeContextText(indexText)}`;
}

/** What the block says of a memory a newer one contradicts (the newer is ranked before it). */
export function supersededNote(newer: string): string {
  return `older than ${newer}, which says otherwise: possibly superseded`;
}

function attribute(name: string, value: string): string {
  const escaped = value
    .replace(/&/g, '&amp;')
    .replace(/"/g, '&quot;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/[\u0000-\u001F\u007F-\u009F]/g, ' ');
  return `${name}="${escaped}"`;
}
