import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteMemoryStore, type SqliteMemoryStoreOptions } from '../../src/adapters/sqlite/sqlite-memory-store.js';
import { Engram } from '../../src/engram.js';
import type { EngramOptions } from '../../src/engram-options.js';
import { perTest } from './per-test.js';

/** A real SQLite store in a fresh temp folder, on a clock the test moves. */
export interface TemporaryStore {
  store: SqliteMemoryStore;
  clock: { now: number };
  /** The temp folder, removed by `close`, and the store's file in it. */
  directory: string;
  path: string;
  close(): Promise<void>;
}

/**
 * Opens a SQLite store in a temp folder whose clock starts at `start` (epoch ms); `options` names the
 * folder's prefix and the file, and sets the store's job settings.
 */
export async function openTemporaryStore(
  start: number,
  options: { prefix?: string; file?: string; jobs?: SqliteMemoryStoreOptions['jobs'] } = {},
): Promise<TemporaryStore> {
  const directory = await mkdtemp(join(tmpdir(), options.prefix ?? 'engram-recall-'));
  const path = join(directory, options.file ?? 'memory.db');
  const clock = { now: start };
  const store = new SqliteMemoryStore({
    path,
    now: () => new Date(clock.now),
    ...(options.jobs !== undefined && { jobs: options.jobs }),
  });
  await store.open();
  return {
    store,
    clock,
    directory,
    path,
    async close() {
      await store.close();
      await rm(directory, { recursive: true, force: true });
    },
  };
}

/** A temporary store opened before each test of the enclosing `describe` and removed after it. */
export interface TemporaryStoreHandle {
  /** The open store; read it inside a test or hook, not while the suite is being collected. */
  readonly store: SqliteMemoryStore;
  readonly clock: { now: number };
}

/** Opens a fresh {@link openTemporaryStore} before each test of the enclosing `describe` and closes it after. */
export function useTemporaryStore(start: number): TemporaryStoreHandle {
  return perTest(
    'useTemporaryStore: the store',
    () => openTemporaryStore(start),
    (opened) => opened.close(),
  );
}

/** An Engram over a temporary store, on its clock; `options` say the rest (scopes, warnings, actor). */
export function engramOver(opened: TemporaryStoreHandle, options: Omit<EngramOptions, 'store' | 'now'>): Engram {
  return new Engram({ store: opened.store, now: () => new Date(opened.clock.now), ...options });
}

/**
 * A SQLite store on the real clock in a fresh temp folder, as a store suite's `create` gives it: the
 * file is its url and `cleanup` removes the folder (the suite closes the store first).
 */
export async function openSuiteSqliteStore(
  prefix: string,
): Promise<{ store: SqliteMemoryStore; url: string; cleanup: () => Promise<void> }> {
  const directory = await mkdtemp(join(tmpdir(), prefix));
  const url = join(directory, 'memory.db');
  const store = new SqliteMemoryStore({ path: url });
  await store.open();
  return { store, url, cleanup: () => rm(directory, { recursive: true, force: true }) };
}

/** Opens the SQLite store at `path` (on the clock `now`, else the real one), runs `work` with it, and closes it. */
export async function withSqliteStore<T>(
  path: string,
  work: (store: SqliteMemoryStore) => Promise<T>,
  now?: () => Date,
): Promise<T> {
  const store = new SqliteMemoryStore({ path, ...(now !== undefined && { now }) });
  await store.open();
  try {
    return await work(store);
  } finally {
    await store.close();
  }
}
