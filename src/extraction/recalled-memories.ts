import { INJECTED_PREAMBLES, MEMORY_CONTEXT_CLOSE, MEMORY_CONTEXT_OPEN } from '../privacy/injected-markers.js';
import { compareLexically, lexicalProfile, wordsContained, type LexicalProfile } from '../remember/near-duplicate.js';

/**
 * Memories engram put in front of the model this turn (its `<memory_context>` block). Extraction
 * shows them to the extractor as already known and drops what merely repeats them, so a recalled
 * memory is never stored again as a new fact.
 */
export interface RecalledMemory {
  id: string;
  /** The text the model saw; looked up in the store by id when absent. */
  content?: string;
  name?: string;
  type?: string;
}

const ENTRY_OPEN = '<memory ';
const ENTRY_CLOSE = '</memory>';
const ATTRIBUTE = /([a-z]+)="([^"]*)"/g;
// A block is read this far at most: far above any injection budget (`injection.maxTokens`), so a
// longer "block" is not engram's and reading it all would only cost time.
const MAX_BLOCK_CHARS = 100_000;
// An entry's opening tag is a few attributes (id, type, name, age).
const MAX_TAG_CHARS = 1_000;

/**
 * The memories listed in the `<memory_context>` blocks engram wrote into a text (the tag followed by
 * its preamble, as src/privacy/private-content.ts recognises them). Pure; one pass over the text with
 * indexOf, so hostile text (unclosed tags, huge blocks) costs time linear in its length.
 */
export function recalledFromText(text: string): RecalledMemory[] {
  const found: RecalledMemory[] = [];
  let position = text.indexOf(MEMORY_CONTEXT_OPEN);
  while (position !== -1) {
    const bodyStart = position + MEMORY_CONTEXT_OPEN.length;
    const close = text.indexOf(MEMORY_CONTEXT_CLOSE, bodyStart);
    const blockEnd = close === -1 ? text.length : close;
    if (!isEngramBlock(text, bodyStart)) {
      // The tag named in prose (the static part names it): the real block may follow before that close.
      position = text.indexOf(MEMORY_CONTEXT_OPEN, bodyStart);
      continue;
    }
    found.push(...readEntries(text.slice(bodyStart, Math.min(blockEnd, bodyStart + MAX_BLOCK_CHARS))));
    position = close === -1 ? -1 : text.indexOf(MEMORY_CONTEXT_OPEN, close + MEMORY_CONTEXT_CLOSE.length);
  }
  return found;
}

// The words that open engram's block, checked as src/privacy/private-content.ts checks them, so what
// the privacy filter strips as engram's block is exactly what is read here as recalled memories.
const PREAMBLE_START = INJECTED_PREAMBLES.memoryContext.slice(0, 40);

/** Whether the block whose body starts at `at` opens with engram's preamble (a tag typed or quoted in prose does not). */
function isEngramBlock(text: string, at: number): boolean {
  return text
    .slice(at, at + 80)
    .replace(/^\s+/, '')
    .startsWith(PREAMBLE_START);
}

function readEntries(block: string): RecalledMemory[] {
  const found: RecalledMemory[] = [];
  let position = block.indexOf(ENTRY_OPEN);
  while (position !== -1) {
    const tagEnd = block.indexOf('>', position);
    if (tagEnd === -1) break;
    const contentEnd = block.indexOf(ENTRY_CLOSE, tagEnd);
    // No closing tag after this one: no later entry can be whole either.
    if (contentEnd === -1) break;
    const next = contentEnd + ENTRY_CLOSE.length;
    if (tagEnd - position <= MAX_TAG_CHARS) {
      const memory = readEntry(block.slice(position + ENTRY_OPEN.length, tagEnd), block.slice(tagEnd + 1, contentEnd));
      if (memory) found.push(memory);
    }
    position = block.indexOf(ENTRY_OPEN, next);
  }
  return found;
}

function readEntry(tag: string, body: string): RecalledMemory | undefined {
  const attributes = new Map<string, string>();
  for (const attribute of tag.matchAll(ATTRIBUTE)) attributes.set(attribute[1]!, unescapeAttribute(attribute[2]!));
  const id = attributes.get('id');
  if (id === undefined || id === '') return undefined;
  const name = attributes.get('name');
  const type = attributes.get('type');
  // formatMemoryEntry writes the content right after the tag; blocks written before it put a line break on each side.
  const content = body.replace(/^\n/, '').replace(/\n$/, '').replace(/&lt;/g, '<');
  return { id, content, ...(name && { name }), ...(type && { type }) };
}

/** Recalled memories by id, the first mention of each kept (content filled in when a later one has it). */
export function uniqueRecalled(memories: readonly RecalledMemory[]): RecalledMemory[] {
  const byId = new Map<string, RecalledMemory>();
  for (const memory of memories) {
    const known = byId.get(memory.id);
    if (!known) byId.set(memory.id, { ...memory });
    else if (known.content === undefined && memory.content !== undefined) known.content = memory.content;
  }
  return [...byId.values()];
}

/** Texts a candidate is compared with, profiled once. */
export interface KnownTexts {
  profiles: Array<{ id: string; profile: LexicalProfile }>;
}

/** Profiles known texts (recalled memories, memories written this run) for `findKnownDuplicate`. */
export function profileKnown(known: ReadonlyArray<{ id: string; content?: string }>): KnownTexts {
  return {
    profiles: known
      .filter((entry) => typeof entry.content === 'string' && entry.content.trim() !== '')
      .map((entry) => ({ id: entry.id, profile: lexicalProfile(entry.content!) })),
  };
}

/**
 * The known memory a candidate repeats, if any: a near-duplicate by words (the dedupe rule, so a
 * changed value such as "PostgreSQL 16" for "PostgreSQL 15" is new, not a repeat), or a text whose
 * words are all in the known one (it says nothing more).
 */
export function findKnownDuplicate(content: string, known: KnownTexts, threshold: number): string | undefined {
  if (known.profiles.length === 0) return undefined;
  const profile = lexicalProfile(content);
  for (const entry of known.profiles) {
    const verdict = compareLexically(profile, entry.profile, threshold);
    if (verdict.duplicate) return entry.id;
    if (
      verdict.reason !== 'negation-differs' &&
      verdict.reason !== 'values-differ' &&
      profile.words.size > 0 &&
      wordsContained(profile, entry.profile)
    )
      return entry.id;
  }
  return undefined;
}

function unescapeAttribute(value: string): string {
  return value
    .replace(/&quot;/g, '"')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
}
