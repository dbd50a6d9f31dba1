import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EngramError } from '../kernel/errors.js';
import type { Bm25Parameters } from '../recall/bm25-scoring.js';
import type { MemoryLimits } from '../memory/memory.js';
import type { Settings } from '../kernel/settings.js';
import type { StoreRole, StoreWith } from '../contracts/memory-store.js';
import { SqliteMemoryStore } from '../adapters/sqlite/sqlite-memory-store.js';

export interface OpenStoreOptions {
  busyTimeoutMs?: number;
  /** Postgres: connections kept at most (setting store.poolSize); the URL's ?pool= wins. */
  poolSize?: number;
  /** Postgres: longest one statement may run, 0 for no limit (setting store.statementTimeoutMs); the URL's ?statement_timeout= wins. */
  statementTimeoutMs?: number;
  /** Postgres: how long to wait for a connection (setting store.connectTimeoutMs); the URL's ?connect_timeout= wins. */
  connectTimeoutMs?: number;
  /** Receives the store's warnings; default process.emitWarning. */
  onWarning?: (message: string) => void;
  limits?: MemoryLimits;
  now?: () => Date;
  generateId?: () => string;
  /** BM25 parameters of full-text relevance (settings recall.fullTextK1, fullTextB and fullTextCoverage). */
  fullText?: Bm25Parameters;
  /** Waits, leases and polling of store locks (settings `locks`). */
  locks?: Settings['locks'];
  /** Default attempts and largest payload of jobs (settings `jobs`). */
  jobs?: Settings['jobs'];
}

/** The options every surface opens its store with, from effective settings: one place, so none drifts. */
export function storeOptionsFromSettings(settings: Settings): OpenStoreOptions {
  return {
    busyTimeoutMs: settings.store.busyTimeoutMs,
    poolSize: settings.store.poolSize,
    statementTimeoutMs: settings.store.statementTimeoutMs,
    connectTimeoutMs: settings.store.connectTimeoutMs,
    limits: settings.memory,
    fullText: {
      k1: settings.recall.fullTextK1,
      b: settings.recall.fullTextB,
      coverage: settings.recall.fullTextCoverage,
    },
    locks: settings.locks,
    jobs: settings.jobs,
  };
}

/** What a store URL names: the backend and its location. */
export type StoreLocation = { backend: 'sqlite'; path: string } | { backend: 'postgres'; url: string };

/** Parses a store URL: `sqlite://<path>`, `file:` URLs, a plain path (SQLite), or `postgres://…`. */
export function parseStoreUrl(url: string): StoreLocation {
  if (typeof url !== 'string' || url.trim() === '') {
    throw new EngramError('CONFIG_INVALID', 'The store URL is empty: use a file path, sqlite://<path> or postgres://…');
  }
  if (/^postgres(ql)?:\/\//i.test(url)) return { backend: 'postgres', url };
  try {
    if (/^sqlite:\/\//i.test(url))
      return { backend: 'sqlite', path: resolve(decodeURIComponent(url.slice('sqlite://'.length))) };
    if (/^file:/i.test(url)) return { backend: 'sqlite', path: fileURLToPath(url) };
  } catch (error) {
    throw new EngramError(
      'CONFIG_INVALID',
      `Invalid store URL ${JSON.stringify(url.slice(0, 80))}: ${(error as Error).message}`,
      { cause: error },
    );
  }
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(url)) {
    throw new EngramError(
      'CONFIG_INVALID',
      `Unsupported store URL ${JSON.stringify(url.slice(0, 80))}: use a file path, sqlite://<path> or postgres://…`,
    );
  }
  return { backend: 'sqlite', path: url === ':memory:' ? url : resolve(url) };
}

/** Opens the store a URL names, migrated and ready; both backends have every store role. */
export async function openStore(url: string, options: OpenStoreOptions = {}): Promise<StoreWith<StoreRole>> {
  const location = parseStoreUrl(url);
  if (location.backend === 'postgres') {
    // Loaded only when named, so SQLite users never load the Postgres driver.
    const { PostgresMemoryStore } = await import('../adapters/postgres/postgres-memory-store.js');
    const { busyTimeoutMs: _busyTimeoutMs, ...postgresOptions } = options;
    const store = new PostgresMemoryStore({ url: location.url, ...postgresOptions });
    await store.open();
    return store;
  }
  const {
    poolSize: _poolSize,
    statementTimeoutMs: _statementTimeoutMs,
    connectTimeoutMs: _connectTimeoutMs,
    ...sqliteOptions
  } = options;
  const store = new SqliteMemoryStore({ path: location.path, ...sqliteOptions });
  await store.open();
  return store;
}
