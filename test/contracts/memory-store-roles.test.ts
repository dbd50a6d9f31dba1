import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { OpenAiCompatibleEmbedder } from '../../src/adapters/embedding/openai-compatible-embedder.js';
import { SqliteMemoryStore } from '../../src/adapters/sqlite/sqlite-memory-store.js';
import {
  missingRoles,
  STORE_ROLES,
  type MemoryLedger,
  type MemoryStore,
  type StoreRole,
  type StoreRoles,
} from '../../src/contracts/memory-store.js';
import { Engram } from '../../src/engram.js';
import { Extractor } from '../../src/extraction/extractor.js';
import { EngramError } from '../../src/kernel/errors.js';
import { copyStore } from '../../src/maintenance/copy-store.js';
import { holdsNoRecords } from '../../src/maintenance/store-checksum.js';
import { startEmbeddingsServer } from '../../src/testing/index.js';
import { runMemoryStoreSuite } from '../../src/testing/suites.js';
import { openSuiteSqliteStore } from '../support/temporary-store.js';

// A backend needs only the ledger. Here one is built for the test: a real SQLite store behind it,
// with only the roles named passed through. It passes the ledger's conformance cases and has the
// others skipped; what engram does on it degrades, with a warning, instead of failing.

const NOW = new Date('2024-06-01T12:00:00.000Z');
const SCOPE = 'project:roles';
const cleanups: Array<() => Promise<void>> = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** The SQLite store's ledger and the roles named, and nothing else: a backend that implements only those. */
function withRoles(inner: SqliteMemoryStore, roles: readonly StoreRole[]): MemoryStore {
  const ledger: MemoryLedger = {
    open: () => inner.open(),
    close: () => inner.close(),
    info: () => inner.info(),
    create: (input, change) => inner.create(input, change),
    createMany: (inputs, change) => inner.createMany(inputs, change),
    importMany: (inputs, options, change) => inner.importMany(inputs, options, change),
    get: (id, scopes) => inner.get(id, scopes),
    update: (id, patch, change) => inner.update(id, patch, change),
    invalidate: (id, options, change) => inner.invalidate(id, options, change),
    archive: (id, change) => inner.archive(id, change),
    restore: (id, change) => inner.restore(id, change),
    delete: (id, change) => inner.delete(id, change),
    purge: (id, change) => inner.purge(id, change),
    list: (filter) => inner.list(filter),
    count: (filter) => inner.count(filter),
    searchText: (query) => inner.searchText(query),
    recordAccess: (ids, at) => inner.recordAccess(ids, at),
    history: (memoryId) => inner.history(memoryId),
    getChange: (changeId) => inner.getChange(changeId),
    undo: (changeId, change) => inner.undo(changeId, change),
    stats: (scopes) => inner.stats(scopes),
  };
  const kept: StoreRoles = Object.fromEntries(roles.map((role) => [role, inner[role]]));
  return { ...ledger, ...kept };
}

async function sqliteStore(): Promise<{ store: SqliteMemoryStore; path: string }> {
  const directory = await mkdtemp(join(tmpdir(), 'engram-roles-'));
  const path = join(directory, 'memory.db');
  const store = new SqliteMemoryStore({ path, now: () => NOW });
  await store.open();
  cleanups.push(async () => {
    await store.close();
    await rm(directory, { recursive: true, force: true });
  });
  return { store, path };
}

async function ledgerOnly(): Promise<MemoryStore> {
  return withRoles((await sqliteStore()).store, []);
}

async function embedder(): Promise<OpenAiCompatibleEmbedder> {
  const server = await startEmbeddingsServer({ dimensions: 16 });
  cleanups.push(() => server.close());
  return new OpenAiCompatibleEmbedder({ baseUrl: server.baseUrl, model: 'hashed-words', maxRetries: 0 });
}

function engramOver(
  store: MemoryStore,
  options: { embedder?: OpenAiCompatibleEmbedder; warnings?: string[] } = {},
): Engram {
  return new Engram({
    store,
    defaultScope: SCOPE,
    readScopes: [SCOPE],
    now: () => NOW,
    onWarning: (warning) => options.warnings?.push(warning),
    ...(options.embedder && { embedder: options.embedder }),
  });
}

async function codeOf(action: () => Promise<unknown>): Promise<{ code: string; message: string }> {
  const error = await action().then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error, 'expected an EngramError').toBeInstanceOf(EngramError);
  return { code: (error as EngramError).code, message: (error as EngramError).message };
}

// The ledger's cases pass on the wrapper; every role case is skipped (it names no role), saying which. Two heavy
// cases are left to the SQLite suite: workers in other processes open the SQLite file itself, and
// 10,000 random reads through a wrapper that passes them on unchanged test SQLite's filters again.
runMemoryStoreSuite({
  name: 'a ledger-only backend (SQLite underneath)',
  create: async () => {
    const { store, url, cleanup } = await openSuiteSqliteStore('engram-ledger-suite-');
    return { store: withRoles(store, []), url, cleanup };
  },
  roles: [],
  skip: {
    'two processes writing 1,000 memories each at once lose nothing':
      'workers open the SQLite file itself; the SQLite suite runs it',
    'no read returns a memory outside the scopes it names (10,000 random queries over 20 scopes)':
      'the wrapper passes reads on unchanged; the SQLite suite runs it',
  },
});

describe('store roles', () => {
  it('SQLite has every optional role; the wrapper only those it passes through', async () => {
    const { store } = await sqliteStore();
    expect(missingRoles(store)).toEqual([]);
    expect(missingRoles(withRoles(store, []))).toEqual([...STORE_ROLES]);
    expect(missingRoles(withRoles(store, ['jobs', 'records']))).toEqual(['vectors', 'locks', 'checkpoints', 'changes']);
  });
});

describe('a store without the vectors role', () => {
  it('recalls by full text with the warning vector-search-unavailable, as without an embedder', async () => {
    const store = await ledgerOnly();
    const engram = engramOver(store, { embedder: await embedder() });
    await engram.remember({ content: 'Deploys go out with ArgoCD every Friday.' });
    const recalled = await engram.recall('ArgoCD deploys');
    expect(recalled.memories.map((entry) => entry.memory.content)).toEqual([
      'Deploys go out with ArgoCD every Friday.',
    ]);
    expect(recalled.warnings).toContain('vector-search-unavailable');

    // The same embedder over a store with vectors searches them: the warning is the missing role's.
    const full = engramOver((await sqliteStore()).store, { embedder: await embedder() });
    await full.remember({ content: 'Deploys go out with ArgoCD every Friday.' });
    expect((await full.recall('ArgoCD deploys')).warnings).not.toContain('vector-search-unavailable');
  });

  it('dedupes on write by words and says so; reindex is refused with STORE_UNSUPPORTED', async () => {
    const engram = engramOver(await ledgerOnly(), { embedder: await embedder() });
    const first = await engram.save({ content: 'The staging database is refreshed every Sunday night.' });
    const again = await engram.save({ content: 'The staging database is refreshed every Sunday night.' });
    expect({ first: first.action, again: again.action, same: again.memory.id === first.memory.id }).toEqual({
      first: 'created',
      again: 'merged',
      same: true,
    });
    expect(again.warnings).toContain('vector-search-unavailable');
    const refused = await codeOf(() => engram.reindex());
    expect(refused.code).toBe('STORE_UNSUPPORTED');
    expect(refused.message).toMatch(/no vectors \(store\.vectors\)/);
  });
});

describe('a store without the locks role', () => {
  it('dedupes on write without the cross-process lock, with the warning write-lock-unavailable', async () => {
    const { store } = await sqliteStore();
    const engram = engramOver(withRoles(store, ['vectors', 'jobs', 'checkpoints', 'records']));
    const first = await engram.save({ content: 'Always run the linter before committing.' });
    const again = await engram.save({ content: 'Always run the linter before committing.' });
    expect(again).toMatchObject({ action: 'merged', mergedInto: first.memory.id });
    expect(first.warnings).toContain('write-lock-unavailable');
    expect(again.warnings).toContain('write-lock-unavailable');
    expect(await engram.count()).toBe(1);

    // With locks there is no such warning.
    expect(
      (await engramOver(store).save({ content: 'Always run the linter before committing.' })).warnings,
    ).not.toContain('write-lock-unavailable');
  });
});

describe('a store without jobs (or checkpoints, or locks)', () => {
  const conversation = {
    sessionId: 'session-1',
    messages: [
      { id: 'u1', role: 'user' as const, text: 'Remember that the API listens on port 9090.' },
      { id: 'a1', role: 'assistant' as const, text: 'Noted.' },
    ],
  };

  it('extraction says it cannot queue: afterTurn answers unavailable, warns once, and writes nothing', async () => {
    const { store } = await sqliteStore();
    for (const roles of [[], ['checkpoints', 'locks'], ['jobs', 'locks'], ['jobs', 'checkpoints']] as const) {
      const warnings: string[] = [];
      const engram = engramOver(withRoles(store, roles));
      const extractor = new Extractor({ engram, autoStart: false, onWarning: (warning) => warnings.push(warning) });
      const result = await extractor.afterTurn(conversation);
      expect(result, `roles ${roles.join(', ')}`).toEqual({
        status: 'unavailable',
        jobs: [],
        messages: 0,
        cursorFallback: false,
        warnings: ['extraction-queue-unavailable'],
      });
      expect(await extractor.afterTurn(conversation)).toMatchObject({ status: 'unavailable' });
      expect(warnings).toHaveLength(1);
      const missing = ['jobs', 'checkpoints', 'locks'].filter((role) => !(roles as readonly string[]).includes(role));
      for (const role of missing) expect(warnings[0]).toContain(`store.${role}`);
      expect(await extractor.applyExplicitOnly(conversation)).toMatchObject({
        written: [],
        warnings: ['extraction-queue-unavailable'],
      });
      expect(await extractor.drain()).toEqual([]);
      extractor.start();
      expect(extractor.worker.running).toBe(false);
      await extractor.stop();
    }
    expect(await store.count({ scopes: [SCOPE, 'global'] })).toBe(0);
    expect(await store.jobs.counts()).toEqual({ pending: 0, running: 0, done: 0, failed: 0 });

    // The full store queues the same turn.
    const extractor = new Extractor({ engram: engramOver(store), autoStart: false });
    expect(await extractor.afterTurn(conversation)).toMatchObject({ status: 'queued', messages: 2 });
  });
});

describe('a store without the records role', () => {
  it('engram migrate (copyStore) refuses it with STORE_UNSUPPORTED, as source or target, before writing anything', async () => {
    const source = await sqliteStore();
    await source.store.create({ scope: SCOPE, content: 'A memory to copy.' }, { actor: 'test' });
    const target = await sqliteStore();
    for (const [from, to] of [
      [withRoles(source.store, ['vectors', 'jobs', 'locks', 'checkpoints']), target.store],
      [source.store, withRoles(target.store, ['vectors', 'jobs', 'locks', 'checkpoints'])],
    ] as const) {
      const refused = await codeOf(() => copyStore(from, to));
      expect(refused.code).toBe('STORE_UNSUPPORTED');
      expect(refused.message).toMatch(
        /no record copy \(store\.records\), which copying a store \(engram migrate\) needs/,
      );
    }
    expect(await holdsNoRecords(target.store)).toBe(true);
  });

  it('a target without vectors is refused when the source holds vectors, before anything is written', async () => {
    const source = await sqliteStore();
    const memory = await source.store.create({ scope: SCOPE, content: 'A memory with a vector.' }, { actor: 'test' });
    await source.store.vectors.setSpace({ model: 'm', dimensions: 2 });
    await source.store.vectors.put([{ id: memory.id, vector: Float32Array.from([1, 0]) }]);
    const target = await sqliteStore();
    const refused = await codeOf(() =>
      copyStore(source.store, withRoles(target.store, ['jobs', 'locks', 'checkpoints', 'records'])),
    );
    expect(refused.code).toBe('STORE_UNSUPPORTED');
    expect(refused.message).toMatch(/no vectors/);
    expect(await holdsNoRecords(target.store)).toBe(true);
    expect(await target.store.vectors.space()).toBeUndefined();
  });
});
