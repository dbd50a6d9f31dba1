import { EngramError } from '../../kernel/errors.js';
import { assertMemoryType, type Memory, type MemoryType } from '../../memory/memory.js';
import { assertScope, type Scope } from '../../memory/scope.js';
import type { ChangeContext } from '../../memory/memory-history.js';
import type { ImportOptions, MemoryFilter, TextSearch } from '../memory-store.js';

const TRI_STATE = ['exclude', 'include', 'only'] as const;
const ORDERS = ['updated-desc', 'created-asc', 'created-desc', 'importance-desc'] as const;
const MAX_TERMS = 256;
/** The most memories one list or search returns. */
export const MAX_LIMIT = 100_000;

/**
 * Checks a list filter once, for every backend: scopes valid and de-duplicated, enums known,
 * numbers finite and in range. Malformed filters are refused with INVALID_INPUT, never guessed at.
 */
export function checkMemoryFilter(
  filter: MemoryFilter,
): Required<Pick<MemoryFilter, 'archived' | 'invalid' | 'order'>> & MemoryFilter & { scopes: Scope[] } {
  if (filter === null || typeof filter !== 'object') throw invalid('A filter is an object with scopes.');
  const archived = filter.archived ?? 'exclude';
  const invalidState = filter.invalid ?? 'exclude';
  const order = filter.order ?? 'updated-desc';
  if (!TRI_STATE.includes(archived)) throw invalid(`archived must be one of ${TRI_STATE.join(', ')}.`);
  if (!TRI_STATE.includes(invalidState)) throw invalid(`invalid must be one of ${TRI_STATE.join(', ')}.`);
  if (!ORDERS.includes(order)) throw invalid(`order must be one of ${ORDERS.join(', ')}.`);
  if (filter.limit !== undefined) wholeNumber(filter.limit, 'limit', 0, MAX_LIMIT);
  if (filter.offset !== undefined) wholeNumber(filter.offset, 'offset', 0, Number.MAX_SAFE_INTEGER);
  if (
    filter.importanceBelow !== undefined &&
    (typeof filter.importanceBelow !== 'number' || !Number.isFinite(filter.importanceBelow))
  ) {
    throw invalid('importanceBelow must be a number.');
  }
  if (
    filter.importanceAtLeast !== undefined &&
    (typeof filter.importanceAtLeast !== 'number' || !Number.isFinite(filter.importanceAtLeast))
  ) {
    throw invalid('importanceAtLeast must be a number.');
  }
  for (const field of ['updatedBefore', 'accessedBefore'] as const) {
    const value = filter[field];
    if (value !== undefined && (typeof value !== 'string' || Number.isNaN(Date.parse(value))))
      throw invalid(`${field} must be an ISO-8601 date-time.`);
  }
  return {
    ...filter,
    scopes: checkScopes(filter.scopes),
    ...(filter.types !== undefined && { types: checkTypes(filter.types) }),
    archived,
    invalid: invalidState,
    order,
  };
}

/** Checks a full-text query: terms are strings, limit a whole number, match and types known. */
export function checkTextSearch(query: TextSearch): TextSearch & { scopes: Scope[]; match: 'any' | 'all' } {
  if (query === null || typeof query !== 'object') throw invalid('A search is an object with scopes, terms and limit.');
  if (!Array.isArray(query.terms) || query.terms.some((term) => typeof term !== 'string'))
    throw invalid('terms must be an array of strings.');
  if (query.terms.length > MAX_TERMS) throw invalid(`A search takes at most ${MAX_TERMS} terms.`);
  const match = query.match ?? 'any';
  if (match !== 'any' && match !== 'all') throw invalid('match must be "any" or "all".');
  wholeNumber(query.limit, 'limit', 0, MAX_LIMIT);
  if (query.sufficientHits !== undefined) wholeNumber(query.sufficientHits, 'sufficientHits', 1, MAX_LIMIT);
  return {
    ...query,
    scopes: checkScopes(query.scopes),
    match,
    ...(query.types !== undefined && { types: checkTypes(query.types) }),
  };
}

/** The actor of a change (1-200 characters), or INVALID_INPUT: every change names who made it. */
export function checkActor(change: ChangeContext): string {
  const actor = change?.actor;
  if (typeof actor !== 'string' || actor.length === 0 || actor.length > 200) {
    throw new EngramError('INVALID_INPUT', 'Every change names its actor (1-200 characters).');
  }
  return actor;
}

/** CONFLICT when a change names the `updatedAt` it expects (`ifUpdatedAt`) and the memory has moved on since. */
export function checkUnchangedSince(memory: Memory, change: ChangeContext): void {
  const expected = change.ifUpdatedAt;
  if (expected === undefined) return;
  if (typeof expected !== 'string')
    throw new EngramError('INVALID_INPUT', 'ifUpdatedAt is the ISO-8601 updatedAt the change expects.');
  if (memory.updatedAt !== expected) {
    throw new EngramError(
      'CONFLICT',
      `Memory ${memory.id} changed since ${expected} (now ${memory.updatedAt}); nothing was applied. Read it again and retry.`,
    );
  }
}

/** The most memories one import may name in `ifUpdatedAt`. */
const MAX_EXPECTATIONS = 100_000;

/**
 * Checks `importMany`'s `ifUpdatedAt`: memory id → the ISO-8601 `updatedAt` it must still have, or
 * null for "no such memory"; each instant in the store's own form, the ids sorted (the order rows are locked in).
 */
export function checkExpectedVersions(value: unknown): Array<[string, string | null]> {
  if (value === undefined) return [];
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw invalid('ifUpdatedAt maps memory ids to the updatedAt each was read at (null: no such memory).');
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length > MAX_EXPECTATIONS) throw invalid(`ifUpdatedAt names at most ${MAX_EXPECTATIONS} memories.`);
  const checked: Array<[string, string | null]> = [];
  for (const [id, updatedAt] of entries) {
    if (id.length === 0) throw invalid('ifUpdatedAt names a memory by an empty id.');
    checked.push([
      id,
      updatedAt === null
        ? null
        : new Date(checkInstant(updatedAt, `ifUpdatedAt of ${JSON.stringify(id.slice(0, 80))}`)).toISOString(),
    ]);
  }
  return checked.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

/** CONFLICT naming the memories that are no longer at the version a caller read (`current` undefined: gone; expected null: must be absent). */
export function checkVersions(
  expected: ReadonlyArray<[string, string | null]>,
  current: (id: string) => Memory | undefined,
): void {
  const changed = expected
    .filter(([id, updatedAt]) => (current(id)?.updatedAt ?? null) !== updatedAt)
    .map(([id]) => id);
  if (changed.length === 0) return;
  throw new EngramError(
    'CONFLICT',
    `${changed.length === 1 ? `Memory ${changed[0]} has` : `${changed.length} memories (${changed.slice(0, 5).join(', ')}) have`} changed since they were read; nothing was imported. Read them again and retry.`,
    { details: { changed } },
  );
}

/** Checks `importMany`'s arguments before anything is normalized: an array of memories and a known `onExisting`. */
export function checkImportOptions(inputs: unknown, options: ImportOptions): void {
  if (!Array.isArray(inputs)) throw new EngramError('INVALID_INPUT', 'An import is an array of memories.');
  if (!['skip', 'replace', 'fail'].includes(options?.onExisting)) {
    throw new EngramError('INVALID_INPUT', 'onExisting must be "skip", "replace" or "fail".');
  }
}

/** CONFLICT when one id appears twice among memories written together: neither could be the one kept. */
export function refuseRepeatedIds(memories: readonly Memory[], what: 'batch' | 'import'): void {
  const ids = new Set<string>();
  for (const memory of memories) {
    if (ids.has(memory.id)) throw new EngramError('CONFLICT', `Memory id ${memory.id} appears twice in one ${what}.`);
    ids.add(memory.id);
  }
}

/** The error for a memory id that is not in the store. */
export function memoryNotFound(id: string): EngramError {
  return new EngramError('NOT_FOUND', `No memory with id ${JSON.stringify(String(id).slice(0, 140))}.`);
}

/** An ISO-8601 instant as milliseconds, or INVALID_INPUT. */
export function checkInstant(value: unknown, field: string): number {
  const milliseconds = typeof value === 'string' ? Date.parse(value) : Number.NaN;
  if (Number.isNaN(milliseconds)) throw invalid(`${field} must be an ISO-8601 date-time.`);
  return milliseconds;
}

export function checkScopes(scopes: readonly Scope[]): Scope[] {
  if (!Array.isArray(scopes)) throw invalid('A read must name its scopes (an array).');
  return [...new Set(scopes.map((scope) => assertScope(scope)))];
}

function checkTypes(types: readonly MemoryType[]): MemoryType[] {
  if (!Array.isArray(types)) throw invalid('types must be an array.');
  return types.map((type) => assertMemoryType(type));
}

function wholeNumber(value: unknown, field: string, minimum: number, maximum: number): void {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < minimum || value > maximum) {
    throw invalid(`${field} must be a whole number from ${minimum} to ${maximum}.`);
  }
}

function invalid(message: string): EngramError {
  return new EngramError('INVALID_INPUT', `Invalid query: ${message}`);
}
