import { expect } from 'vitest';
import type { EngramErrorCode } from '../kernel/errors.js';
import type { Memory } from '../memory/memory.js';
import type { Scope } from '../memory/scope.js';
import type { MemoryFilter, MemoryStore, StoreRole, StoreStats, StoreWith } from '../contracts/memory-store.js';
import type { ChangeContext } from '../memory/memory-history.js';

/** What one conformance case gets: an opened, empty store with the roles `R` it needs, and a URL another process can open. */
export interface StoreSuiteContext<R extends StoreRole = never> {
  store: StoreWith<R>;
  url: string;
}

/** One case of the conformance suite. Its name is also the key that `skip` uses. */
export interface StoreSuiteCase {
  name: string;
  /** The optional roles the case uses besides the ledger: skipped, naming them, for a backend whose `roles` leave one out. */
  roles: readonly StoreRole[];
  run: (context: StoreSuiteContext<StoreRole>) => Promise<void>;
  timeoutMs?: number;
}

/** A group of cases that test one role and need the same roles. */
export interface StoreSuiteGroup {
  title: string;
  cases: readonly StoreSuiteCase[];
}

/** A case as written in a group: its context has exactly the roles the group names, so a case cannot use another. */
export interface StoreCaseDefinition<R extends StoreRole> {
  name: string;
  run: (context: StoreSuiteContext<R>) => Promise<void>;
  timeoutMs?: number;
}

/**
 * Defines a group of cases over the ledger and the optional `roles` (none: the ledger alone). The
 * cases see a store typed with those roles only; the suite skips them for a backend without one.
 */
export function storeCaseGroup<R extends StoreRole = never>(group: {
  title: string;
  roles: readonly R[];
  cases: ReadonlyArray<StoreCaseDefinition<R>>;
}): StoreSuiteGroup {
  return {
    title: group.title,
    cases: group.cases.map((definition) => ({
      ...definition,
      roles: group.roles,
      // The suite passes a store with every role it names (and maybe more): the roles R at least.
      run: (context: StoreSuiteContext<StoreRole>) => definition.run(context as StoreSuiteContext<R>),
    })),
  };
}

export const SUITE_ACTOR: ChangeContext = { actor: 'conformance-suite' };

/** A filter that sees every memory in the scopes: archived and invalidated ones too. */
export function everything(scopes: readonly Scope[]): MemoryFilter {
  return { scopes, archived: 'include', invalid: 'include' };
}

/**
 * Runs an action that must fail with an EngramError of the given code, and returns the error.
 * Checked by name and code rather than `instanceof`, so a backend built from another copy of
 * engram (e.g. `dist` next to `src`) is judged by its behaviour.
 */
export async function expectEngramError(
  action: () => Promise<unknown>,
  code: EngramErrorCode | readonly EngramErrorCode[],
): Promise<Error & { code: string }> {
  const codes: readonly EngramErrorCode[] = typeof code === 'string' ? [code] : code;
  let caught: unknown;
  let succeeded = false;
  try {
    await action();
    succeeded = true;
  } catch (error) {
    caught = error;
  }
  if (succeeded) expect.fail(`expected an EngramError with code ${codes.join(' or ')}, but the call succeeded`);
  expect(caught, `expected an EngramError with code ${codes.join(' or ')}`).toBeInstanceOf(Error);
  const error = caught as Error & { code?: unknown };
  expect({ name: error.name, code: error.code, message: error.message }).toEqual({
    name: 'EngramError',
    code: codes.length === 1 ? codes[0] : expect.toBeOneOf([...codes]),
    message: expect.stringMatching(/\S/),
  });
  return error as Error & { code: string };
}

/**
 * How a call ended: `resolved`, the EngramError code, or the name of any other error. Lets a
 * case check many hostile inputs at once and report every one that was not refused.
 */
export async function outcomeOf(action: () => Promise<unknown>): Promise<string> {
  try {
    await action();
    return 'resolved';
  } catch (error) {
    const { name, code } = error as { name?: string; code?: unknown };
    return name === 'EngramError' && typeof code === 'string' ? code : `${name ?? 'thrown'} (not an EngramError)`;
  }
}

/** Runs each labelled action and lists those whose outcome (see `outcomeOf`) is not the one expected: `[]` when all are. */
export async function unexpectedOutcomes(
  cases: ReadonlyArray<readonly [label: string, action: () => Promise<unknown>, expected: string]>,
): Promise<string[]> {
  const unexpected: string[] = [];
  for (const [label, action, expected] of cases) {
    const outcome = await outcomeOf(action);
    if (outcome !== expected) unexpected.push(`${label}: ${outcome}, expected ${expected}`);
  }
  return unexpected;
}

/** A readable label for a hostile input, with NaN and Infinity spelled out (JSON would print null). */
export function describeInput(input: Record<string, unknown>): string {
  return JSON.stringify(input, (_key, value: unknown) =>
    typeof value === 'number' && !Number.isFinite(value) ? String(value) : value,
  );
}

/** Everything a refused write must leave as it was: whole-store stats and the memories of some scopes. */
export async function fingerprint(
  store: MemoryStore,
  scopes: readonly Scope[],
): Promise<{ stats: StoreStats; memories: Memory[] }> {
  return { stats: await store.stats(), memories: await store.list({ ...everything(scopes), order: 'created-asc' }) };
}

export function sortedIds(memories: ReadonlyArray<{ id: string }>): string[] {
  return memories.map((memory) => memory.id).sort();
}

/** A small seeded random source (mulberry32), so a failing random run can be replayed. */
export interface RandomSource {
  next(): number;
  integer(min: number, max: number): number;
  pick<T>(items: readonly T[]): T;
  sample<T>(items: readonly T[], count: number): T[];
}

export function createRandomSource(seed: number): RandomSource {
  let state = seed >>> 0;
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let value = state;
    value = Math.imul(value ^ (value >>> 15), value | 1);
    value ^= value + Math.imul(value ^ (value >>> 7), value | 61);
    return ((value ^ (value >>> 14)) >>> 0) / 4_294_967_296;
  };
  const integer = (min: number, max: number): number => min + Math.floor(next() * (max - min + 1));
  return {
    next,
    integer,
    pick: (items) => items[integer(0, items.length - 1)]!,
    sample: (items, count) => {
      const pool = [...items];
      for (let index = pool.length - 1; index > 0; index -= 1) {
        const other = integer(0, index);
        [pool[index], pool[other]] = [pool[other]!, pool[index]!];
      }
      return pool.slice(0, Math.min(count, pool.length));
    },
  };
}
