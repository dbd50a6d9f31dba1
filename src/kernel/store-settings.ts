import { integer, text, type SettingGroups } from './setting-definition.js';

/**
 * Settings of where memories are kept: the store (SQLite or Postgres), the project whose memories it
 * holds, the store's locks and background jobs, and copying a store (`engram migrate`).
 */

/** Rows of the settings table (settings.ts lists the groups in `engram config` order). */
export const STORE_SETTING_ROWS = {
  store: {
    url: text(
      '',
      'Store location: a SQLite file path, sqlite://<path>, or postgres://user:password@host:port/database?schema=name; default <ENGRAM_HOME>/engram.db',
      { env: 'ENGRAM_STORE' },
    ),
    busyTimeoutMs: integer(5_000, 'How long a writer waits for a lock held by another process', {
      env: 'ENGRAM_BUSY_TIMEOUT_MS',
    }),
    poolSize: integer(10, "Postgres: connections one engram process keeps at most (the URL's ?pool= wins)", {
      minimum: 1,
      maximum: 1_000,
      env: 'ENGRAM_STORE_POOL_SIZE',
    }),
    statementTimeoutMs: integer(
      30_000,
      "Postgres: longest one statement may run, 0 for no limit (the URL's ?statement_timeout= wins)",
      { env: 'ENGRAM_STORE_STATEMENT_TIMEOUT_MS' },
    ),
    connectTimeoutMs: integer(
      10_000,
      "Postgres: how long to wait for a connection to the server (the URL's ?connect_timeout= in seconds wins)",
    ),
  },
  project: {
    id: text('', 'Explicit project id; default from .engram.json, the git remote or the path', {
      env: 'ENGRAM_PROJECT',
    }),
  },
  locks: {
    waitMs: integer(10_000, 'How long a store lock (e.g. dedupe on write) is waited for before LOCK_TIMEOUT'),
    leaseMs: integer(
      15_000,
      'Lease of a held store lock, renewed while held; a holder silent this long is taken over',
      { minimum: 100 },
    ),
    pollMaxMs: integer(100, 'Longest pause between tries while waiting for a store lock held by another process', {
      minimum: 1,
    }),
  },
  jobs: {
    maxAttempts: integer(5, 'Runs a background job gets before it is marked failed', { minimum: 1, maximum: 1_000 }),
    maxPayloadBytes: integer(1024 * 1024, 'Largest JSON payload one background job may carry', { minimum: 1 }),
  },
  migrate: {
    pageSize: integer(
      500,
      'Records engram migrate reads and writes per transaction (a resumed copy redoes at most one page)',
      { minimum: 1, maximum: 10_000 },
    ),
  },
} satisfies SettingGroups;
