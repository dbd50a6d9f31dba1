import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest';

/** Opens a value around tests and gives an object that reads through to it (`what` names it in the error when read outside them). */
export type ValueAroundTests = <T extends object>(
  what: string,
  open: () => Promise<T> | T,
  close: (value: T) => Promise<void> | void,
) => T;

/**
 * Opens a value before each test of the enclosing `describe` and closes it after. The object
 * returned reads through to the current test's value, so a describe can hold it in a const; it is
 * there only inside a test or hook, not while the suite is being collected (`what` says so).
 */
export const perTest: ValueAroundTests = (what, open, close) =>
  openAround({ before: beforeEach, after: afterEach, missing: `${what} exists only while a test runs` }, open, close);

/** As {@link perTest}, but opened once before the tests of the enclosing `describe` (or file) and closed after them all. */
export const perSuite: ValueAroundTests = (what, open, close) =>
  openAround({ before: beforeAll, after: afterAll, missing: `${what} exists only while its tests run` }, open, close);

function openAround<T extends object>(
  hooks: { before: (run: () => Promise<void>) => void; after: (run: () => Promise<void>) => void; missing: string },
  open: () => Promise<T> | T,
  close: (value: T) => Promise<void> | void,
): T {
  let current: T | undefined;
  hooks.before(async () => {
    current = await open();
  });
  hooks.after(async () => {
    const value = current;
    current = undefined;
    if (value !== undefined) await close(value);
  });
  return readThrough(() => {
    if (current === undefined) throw new Error(hooks.missing);
    return current;
  });
}

/** An object that reads through to `now()`'s value at each use: reads, `in` and spreading (`{ ...value, home }`). */
export function readThrough<T extends object>(now: () => T): T {
  return new Proxy({} as T, {
    get: (_target, key) => Reflect.get(now(), key),
    has: (_target, key) => Reflect.has(now(), key),
    ownKeys: () => Reflect.ownKeys(now()),
    getOwnPropertyDescriptor: (_target, key) => Reflect.getOwnPropertyDescriptor(now(), key),
  });
}

/** Collects steps to run after the current test, in the order given: for what a test opens partway. */
export function useAfterTest(): (step: () => Promise<void> | void) => void {
  const steps: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const step of steps.splice(0)) await step();
  });
  return (step) => {
    steps.push(step);
  };
}

/** Collects undo steps (drop a schema, close a store) and runs them after the current test, last first; one that fails does not stop the rest. */
export function useCleanups(): (step: () => Promise<unknown>) => void {
  const steps: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const step of steps.splice(0).reverse()) await step().catch(() => undefined);
  });
  return (step) => {
    steps.push(step);
  };
}

/** Closes, after the current test, each value it is given (what a test opens with its own options), and gives the value back. */
export function useClosedAfterTest(): <T extends { close(): Promise<void> | void }>(value: T) => T {
  const afterTest = useAfterTest();
  return (value) => {
    afterTest(() => value.close());
    return value;
  };
}

/**
 * Gives a function that makes a new temp folder (named from `prefix`) each time it is called; every
 * folder made during a test is removed after that test.
 */
export function useTemporaryFolders(prefix: string): () => Promise<string> {
  const folders: string[] = [];
  afterEach(async () => {
    await Promise.all(folders.splice(0).map((folder) => rm(folder, { recursive: true, force: true })));
  });
  return async () => {
    const folder = await mkdtemp(join(tmpdir(), prefix));
    folders.push(folder);
    return folder;
  };
}

/** A temp folder made before the tests of the enclosing `describe` (or file) and removed after them; the function gives its path. */
export function useTemporaryFolder(prefix: string): () => string {
  let path: string | undefined;
  beforeAll(async () => {
    path = await mkdtemp(join(tmpdir(), prefix));
  });
  afterAll(async () => {
    if (path !== undefined) await rm(path, { recursive: true, force: true });
    path = undefined;
  });
  return () => {
    if (path === undefined) throw new Error(`the ${prefix} folder exists only while its tests run`);
    return path;
  };
}
