import { readJsonText } from '../kernel/json-answer.js';
import { cleanControlCharacters } from '../kernel/text-cleaning.js';
import { deriveDescription, deriveName, isMemoryType, type MemoryLimits, type MemoryType } from '../memory/memory.js';
import type { Scope } from '../memory/scope.js';
import { utf8ByteLength } from '../kernel/token-estimate.js';
import { neverStoredReason } from '../privacy/never-stored.js';
import { findKnownDuplicate, type KnownTexts } from './recalled-memories.js';

/**
 * Reading a cheap-mode answer: `{"memories": [...]}` (or a bare array) of {type, name, description,
 * content, importance, scope}. Models drift, so the answer is repaired where its meaning is clear (JSON
 * in a fence or in prose, one object instead of an array, a missing name or description, a synonym for a type) and
 * each item that cannot be used is dropped with a reason. Nothing here throws on model output.
 */

/** Why an item of an answer was not saved. */
export type DropReason =
  | 'not-json'
  | 'not-an-object'
  | 'no-content'
  | 'content-too-large'
  | 'scope-not-allowed'
  | 'already-known'
  | 'duplicate-in-answer'
  | 'over-limit'
  | 'conversation-summary'
  | 'code'
  | 'task-state'
  | 'git-history'
  | 'invalid';

/** An item that was not saved, with the reason and enough of it to recognise it. */
export interface DroppedItem {
  reason: DropReason;
  detail: string;
  name?: string;
  excerpt?: string;
  /** The known memory it repeats, for `already-known`. */
  knownId?: string;
}

/** A memory ready to save, with the repairs made to it. */
export interface ExtractedCandidate {
  type: MemoryType;
  name: string;
  description: string;
  content: string;
  importance: number;
  scope: Scope;
  repairs: string[];
}

/** The scopes extraction may write: the project, global, and the user's scope when one is configured. */
export interface WriteScopes {
  project: Scope;
  user?: Scope;
}

export interface OutputContext {
  scopes: WriteScopes;
  maxMemories: number;
  limits: MemoryLimits;
  /** Memories the model was told are known (recalled this turn, written this run). */
  known: KnownTexts;
  /** Similarity at which an item repeats a known memory (dedupe.lexicalThreshold). */
  threshold: number;
}

/** What an answer gave: the memories to save, the items dropped, and the repairs made to the answer as a whole. */
export interface ParsedOutput {
  candidates: ExtractedCandidate[];
  dropped: DroppedItem[];
  repairs: string[];
}

const TYPE_SYNONYMS: ReadonlyMap<string, MemoryType> = new Map([
  ['preference', 'user'],
  ['preferences', 'user'],
  ['profile', 'user'],
  ['fact', 'project'],
  ['decision', 'project'],
  ['correction', 'feedback'],
  ['pointer', 'reference'],
  ['link', 'reference'],
  ['how-to', 'procedure'],
  ['howto', 'procedure'],
  ['skill', 'procedure'],
]);
const CONTENT_KEYS = ['content', 'fact', 'memory', 'text'] as const;
const ANSWER_KEY = 'memories';
const WRAPPER_KEYS = ['items', 'results', 'extractions', 'data'] as const;
const NAME_PATTERN = /^[a-z0-9][a-z0-9._-]*$/;

/** Reads a cheap-mode answer into candidates and dropped items. Pure; never throws on the answer's content. */
export function parseExtractionOutput(text: string, context: OutputContext): ParsedOutput {
  const repairs: string[] = [];
  const dropped: DroppedItem[] = [];
  const items = readItems(typeof text === 'string' ? text : '', repairs, dropped);
  const candidates: ExtractedCandidate[] = [];
  const seen = new Set<string>();
  for (const item of items) {
    const result = readCandidate(item, context);
    if ('reason' in result) {
      dropped.push(result);
      continue;
    }
    const key = result.content.toLowerCase().replace(/\s+/g, ' ');
    if (seen.has(key)) {
      dropped.push(drop('duplicate-in-answer', 'the answer lists this memory twice', result));
      continue;
    }
    seen.add(key);
    if (candidates.length >= context.maxMemories) {
      dropped.push(
        drop(
          'over-limit',
          `at most ${context.maxMemories} memories are kept per turn (extraction.maxMemoriesPerTurn)`,
          result,
        ),
      );
      continue;
    }
    candidates.push(result);
  }
  return { candidates, dropped, repairs };
}

/** The items of an answer: the JSON array, however it was wrapped, or nothing (with a `not-json` drop). */
function readItems(text: string, repairs: string[], dropped: DroppedItem[]): unknown[] {
  const trimmed = text.trim();
  if (trimmed === '') {
    repairs.push('empty-answer-read-as-empty-array');
    return [];
  }
  const found = readJsonText(trimmed, { repair: true });
  if (found === undefined) {
    dropped.push({
      reason: 'not-json',
      detail: 'the answer holds no JSON array or object that could be read',
      excerpt: excerpt(trimmed),
    });
    return [];
  }
  if (found.reading !== 'as-is') repairs.push(found.reading);
  const value = found.value;
  if (value === null) return [];
  if (Array.isArray(value)) return value;
  if (typeof value === 'object') {
    const record = value as Record<string, unknown>;
    // The form the prompt asks for (JSON modes want an object at the root).
    if (Array.isArray(record[ANSWER_KEY])) return record[ANSWER_KEY] as unknown[];
    for (const key of WRAPPER_KEYS) {
      if (Array.isArray(record[key])) {
        repairs.push(`array-unwrapped-from-${key}`);
        return record[key] as unknown[];
      }
    }
    repairs.push('single-object-read-as-array');
    return [record];
  }
  dropped.push({
    reason: 'not-json',
    detail: `the answer is a JSON ${typeof value}, not an array of memories`,
    excerpt: excerpt(trimmed),
  });
  return [];
}

function readCandidate(item: unknown, context: OutputContext): ExtractedCandidate | DroppedItem {
  const repairs: string[] = [];
  let record: Record<string, unknown>;
  if (typeof item === 'string') {
    record = { content: item };
    repairs.push('string-item-read-as-content');
  } else if (item === null || typeof item !== 'object' || Array.isArray(item)) {
    return {
      reason: 'not-an-object',
      detail: `an item is ${item === null ? 'null' : Array.isArray(item) ? 'an array' : `a ${typeof item}`}, not an object`,
      excerpt: excerpt(safeJson(item)),
    };
  } else {
    record = item as Record<string, unknown>;
  }
  const contentKey = CONTENT_KEYS.find(
    (key) => typeof record[key] === 'string' && (record[key] as string).trim() !== '',
  );
  if (contentKey === undefined)
    return { reason: 'no-content', detail: 'an item has no content text', excerpt: excerpt(safeJson(record)) };
  if (contentKey !== 'content') repairs.push(`content-read-from-${contentKey}`);
  const cleaned = cleanControlCharacters((record[contentKey] as string).trim());
  const content = cleaned.text.trim();
  if (cleaned.replaced > 0) repairs.push('control-characters-removed');
  const name = readName(record.name, content, context.limits, repairs);
  if (utf8ByteLength(content) > context.limits.maxContentBytes) {
    return {
      reason: 'content-too-large',
      detail: `the content is over ${context.limits.maxContentBytes} bytes; a memory is one fact`,
      name,
      excerpt: excerpt(content),
    };
  }
  const scope = readScope(record.scope, context.scopes, repairs);
  if (scope === undefined) {
    return {
      reason: 'scope-not-allowed',
      detail: `scope ${JSON.stringify(String(record.scope).slice(0, 80))} is not one extraction may write (project, user or global)`,
      name,
      excerpt: excerpt(content),
    };
  }
  const neverStored = neverStoredReason(content);
  if (neverStored) return { reason: neverStored.reason, detail: neverStored.detail, name, excerpt: excerpt(content) };
  const knownId = findKnownDuplicate(content, context.known, context.threshold);
  if (knownId !== undefined)
    return {
      reason: 'already-known',
      detail: `it repeats memory ${knownId}, which was already known`,
      name,
      excerpt: excerpt(content),
      knownId,
    };
  return {
    type: readType(record.type, repairs),
    name,
    description: readDescription(record.description, content, context.limits, repairs),
    content,
    importance: readImportance(record.importance, repairs),
    scope,
    repairs,
  };
}

function readType(value: unknown, repairs: string[]): MemoryType {
  const text = typeof value === 'string' ? value.trim().toLowerCase() : '';
  if (isMemoryType(text)) return text;
  const synonym = TYPE_SYNONYMS.get(text);
  if (synonym) {
    repairs.push(`type-mapped-from-${text}`);
    return synonym;
  }
  repairs.push(value === undefined ? 'type-defaulted' : 'unknown-type-defaulted');
  return 'project';
}

function readName(value: unknown, content: string, limits: MemoryLimits, repairs: string[]): string {
  if (typeof value === 'string' && value.length <= limits.maxNameLength && NAME_PATTERN.test(value)) return value;
  if (typeof value === 'string' && value.trim() !== '') {
    const slug = deriveName(value, limits.maxNameLength);
    if (slug !== 'memory') {
      repairs.push('name-made-a-slug');
      return slug;
    }
  }
  repairs.push('name-derived-from-content');
  return deriveName(content, limits.maxNameLength);
}

function readDescription(value: unknown, content: string, limits: MemoryLimits, repairs: string[]): string {
  if (typeof value === 'string' && value.trim() !== '') {
    let line = value.replace(/[\u0000-\u001F\u007F-\u009F]+/g, ' ').trim();
    if (line !== value) repairs.push('description-made-one-line');
    if (line.length > limits.maxDescriptionLength) {
      line = `${line.slice(0, limits.maxDescriptionLength - 1).trimEnd()}…`;
      repairs.push('description-shortened');
    }
    return line;
  }
  repairs.push('description-derived-from-content');
  return deriveDescription(content, Math.min(150, limits.maxDescriptionLength));
}

function readImportance(value: unknown, repairs: string[]): number {
  const number = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
  if (typeof number !== 'number' || !Number.isFinite(number)) {
    repairs.push('importance-defaulted');
    return 0.5;
  }
  if (number >= 0 && number <= 1) return number;
  if (number > 1 && number <= 10) {
    repairs.push('importance-scaled-from-0-10');
    return number / 10;
  }
  repairs.push('importance-clamped');
  return number < 0 ? 0 : 1;
}

/** The scope an item asked for, if extraction may write it: `project`, `global`, `user` (the user's scope, else global), or one of those scopes by name. */
function readScope(value: unknown, scopes: WriteScopes, repairs: string[]): Scope | undefined {
  if (value === undefined || value === null || (typeof value === 'string' && value.trim() === '')) {
    repairs.push('scope-defaulted-to-project');
    return scopes.project;
  }
  if (typeof value !== 'string') return undefined;
  const text = value.trim();
  const lower = text.toLowerCase();
  if (lower === 'project' || text === scopes.project) return scopes.project;
  if (lower === 'global') return 'global';
  if (lower === 'user' || (scopes.user !== undefined && text === scopes.user)) {
    if (scopes.user !== undefined) return scopes.user;
    // No user scope is configured: what is true of the user everywhere goes where every project reads it.
    repairs.push('user-scope-written-to-global');
    return 'global';
  }
  return undefined;
}

function drop(reason: DropReason, detail: string, candidate: ExtractedCandidate): DroppedItem {
  return { reason, detail, name: candidate.name, excerpt: excerpt(candidate.content) };
}

function excerpt(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length <= 160 ? line : `${line.slice(0, 159)}…`;
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
