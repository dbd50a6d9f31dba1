import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EngramError } from '../core/errors.js';
import type { MemoryLimits } from '../core/memory.js';
import type { MemoryStore } from '../store/memory-store.js';
import { SqliteMemoryStore } from './sqlite/sqlite-memory-store.js';

export interface OpenStoreOptions {
  busyTimeoutMs?: number;
  limits?: MemoryLimits;
  now?: () => Date;
  generateId?: () => string;
  /** BM25 parameters of full-text relevance (settings recall.fullTextK1 and recall.fullTextB). */
  fullText?: { k1: number; b: number };
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
    if (/^sqlite:\/\//i.test(url)) return { backend: 'sqlite', path: resolve(decodeURIComponent(url.slice('sqlite://'.length))) };
    if (/^file:/i.test(url)) return { backend: 'sqlite', path: fileURLToPath(url) };
  } catch (error) {
    throw new EngramError('CONFIG_INVALID', `Invalid store URL ${JSON.stringify(url.slice(0, 80))}: ${(error as Error).message}`, { cause: error });
  }
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(url)) {
    throw new EngramError('CONFIG_INVALID', `Unsupported store URL ${JSON.stringify(url.slice(0, 80))}: use a file path, sqlite://<path> or postgres://…`);
  }
  return { backend: 'sqlite', path: url === ':memory:' ? url : resolve(url) };
}

/** Opens the store a URL names, migrated and ready. */
export async function openStore(url: string, options: OpenStoreOptions = {}): Promise<MemoryStore> {
  const location = parseStoreUrl(url);
  if (location.backend === 'postgres') {
    throw new EngramError('STORE_UNSUPPORTED', 'The Postgres store is not available in this version of engram; use a SQLite path.');
  }
  const store = new SqliteMemoryStore({ path: location.path, ...options });
  await store.open();
  return store;
}
