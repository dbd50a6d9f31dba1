import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SqliteMemoryStore } from '../../../src/adapters/sqlite/sqlite-memory-store.js';
import { isEngramError } from '../../../src/kernel/errors.js';
import { holdWriteLock, type WriteLockHolder } from '../../support/write-lock-holder.js';

// Every write of the SQLite store, while another process holds the file's write lock: it waits for
// the lock without holding up the event loop (timers and I/O of the process go on meanwhile), lands
// once the lock is free, and past busyTimeoutMs fails with STORE_ERROR having written nothing.
const ACTOR = { actor: 'write-lock-test' };

let directory: string;
let store: SqliteMemoryStore;
let holder: WriteLockHolder | undefined;

async function open(busyTimeoutMs: number): Promise<SqliteMemoryStore> {
  const opened = new SqliteMemoryStore({ path: join(directory, 'engram.db'), busyTimeoutMs });
  await opened.open();
  return opened;
}

beforeEach(async () => {
  directory = await mkdtemp(join(tmpdir(), 'engram-write-lock-'));
  store = await open(60_000);
});

afterEach(async () => {
  await holder?.stop();
  holder = undefined;
  await store.close();
  await rm(directory, { recursive: true, force: true });
});

/** How many turns of the event loop pass while `work` is pending (up to `limit`), and its outcome. */
async function turnsWhilePending<T>(work: Promise<T>, limit = 40): Promise<number> {
  let settled = false;
  work.then(
    () => (settled = true),
    () => (settled = true),
  );
  let turns = 0;
  while (!settled && turns < limit) {
    await new Promise((resolve) => setImmediate(resolve));
    turns += 1;
  }
  return turns;
}

type Write = { name: string; run: (store: SqliteMemoryStore) => Promise<unknown> };

/** One write of each role, on what `prepare` left in the store. */
async function writes(prepared: SqliteMemoryStore): Promise<Write[]> {
  const memory = await prepared.create({ scope: 'project:locks', content: 'Deploys go out on Tuesdays.' }, ACTOR);
  const { job } = await prepared.jobs.enqueue({ queue: 'extraction', key: 'held', payload: { n: 1 } });
  await prepared.checkpoints.set('cursor', 'a');
  await prepared.vectors.setSpace({ model: 'test-embedder', dimensions: 2 });
  return [
    { name: 'create', run: (s) => s.create({ scope: 'project:locks', content: 'Staging is in Dublin.' }, ACTOR) },
    { name: 'update', run: (s) => s.update(memory.id, { content: 'Deploys go out on Wednesdays.' }, ACTOR) },
    { name: 'archive', run: (s) => s.archive(memory.id, ACTOR) },
    { name: 'recordAccess', run: (s) => s.recordAccess([memory.id], new Date().toISOString()) },
    { name: 'jobs.enqueue', run: (s) => s.jobs.enqueue({ queue: 'extraction', key: 'other', payload: { n: 2 } }) },
    { name: 'jobs.claim', run: (s) => s.jobs.claim({ queue: 'extraction', worker: 'w', leaseMs: 60_000 }) },
    { name: 'jobs.hasten', run: (s) => s.jobs.hasten('extraction') },
    {
      name: 'jobs.delete',
      run: (s) => s.jobs.delete({ queue: 'extraction', states: ['done'], updatedBefore: new Date().toISOString() }),
    },
    { name: 'checkpoints.set', run: (s) => s.checkpoints.set('cursor', 'b', { expected: 'a' }) },
    {
      name: 'checkpoints.delete',
      run: (s) => s.checkpoints.delete({ prefix: 'none-', updatedBefore: new Date().toISOString() }),
    },
    { name: 'vectors.put', run: (s) => s.vectors.put([{ id: memory.id, vector: new Float32Array([1, 0]) }]) },
    { name: 'locks.hold', run: (s) => s.locks.hold('dream', async () => job.id) },
  ];
}

describe('SQLite writes while another process holds the write lock', () => {
  it('each write waits off the event loop and lands once the lock is free', async () => {
    const cases = await writes(store);
    const path = join(directory, 'engram.db');
    for (const { name, run } of cases) {
      holder = await holdWriteLock(path);
      const pending = run(store);
      // The event loop goes on while the write waits: under SQLite's busy handler not one turn would.
      expect(await turnsWhilePending(pending), name).toBe(40);
      await holder.release();
      await expect(pending, name).resolves.not.toThrow();
      await holder.stop();
      holder = undefined;
    }
    const stored = (await store.list({ scopes: ['project:locks'], archived: 'include' })).find((memory) =>
      memory.content.startsWith('Deploys'),
    );
    expect(stored).toMatchObject({ content: 'Deploys go out on Wednesdays.', archived: true, hitCount: 1 });
    expect(await store.checkpoints.get('cursor')).toBe('b');
  });

  it('past busyTimeoutMs a write fails with STORE_ERROR that names the held lock, and nothing of it is written', async () => {
    await store.close();
    store = await open(200);
    const cases = await writes(store);
    const before = await store.list({ scopes: ['project:locks'], archived: 'include' });
    holder = await holdWriteLock(join(directory, 'engram.db'));
    for (const { name, run } of cases) {
      const error = await run(store).then(
        () => undefined,
        (rejection: unknown) => rejection,
      );
      expect(isEngramError(error) && error.code, name).toBe('STORE_ERROR');
      expect((error as Error).message, name).toMatch(/held the store's write lock for 200 ms/);
      expect((error as { details?: unknown }).details, name).toEqual({ sqlite: 'SQLITE_BUSY' });
    }
    expect(await store.list({ scopes: ['project:locks'], archived: 'include' })).toEqual(before);
    expect(await store.checkpoints.get('cursor')).toBe('a');
    expect(await store.jobs.list({ queue: 'extraction' })).toHaveLength(1);
  });
});
