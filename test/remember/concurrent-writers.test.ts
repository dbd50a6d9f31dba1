import { hostname } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SqliteMemoryStore, type SqliteMemoryStoreOptions } from '../../src/adapters/sqlite/sqlite-memory-store.js';
import { EngramError } from '../../src/kernel/errors.js';
import { DEFAULT_SETTINGS } from '../../src/kernel/settings.js';
import { Engram } from '../../src/engram.js';
import type { StoreRole, StoreWith } from '../../src/contracts/memory-store.js';
import { expectConcurrentSavesDeduplicated } from '../../src/testing/concurrent-save-check.js';
import { collectStoreWriteWorker, spawnStoreWorker } from '../../src/testing/store-write-worker-process.js';
import { closeSqlite, openSqlite as openRawSqlite } from '../../src/adapters/sqlite/sqlite-driver.js';
import { useTemporaryFolders } from '../support/per-test.js';

// Dedupe on write across processes: several processes save the same statements at once through
// the library into one store. The check itself (src/testing/concurrent-save-check.ts) opens the
// store only by URL in its workers, so it runs on any backend listed here.

const temporaryFolder = useTemporaryFolders('engram-writers-');

async function temporaryPath(): Promise<string> {
  return join(await temporaryFolder(), 'memory.db');
}

interface Backend {
  name: string;
  /** An opened, empty store and the URL worker processes open it by. */
  open: () => Promise<{ store: StoreWith<StoreRole>; url: string }>;
}

const BACKENDS: Backend[] = [
  {
    name: 'sqlite',
    open: async () => {
      const path = await temporaryPath();
      const store = new SqliteMemoryStore({ path });
      await store.open();
      return { store, url: path };
    },
  },
];

for (const backend of BACKENDS) {
  describe(`concurrent writers on ${backend.name}`, () => {
    it(
      'four processes saving the same statements at once make one memory per statement, with complete history',
      { timeout: 120_000 },
      async () => {
        const { store, url } = await backend.open();
        try {
          await expectConcurrentSavesDeduplicated({ store, url, processes: 4 });
        } finally {
          await store.close();
        }
      },
    );
  });
}

/** Holds the lock `name` on `store` until `release` is called; resolves once inside, with the holder's promise (its result `result`). */
async function holdUntilReleased(
  store: SqliteMemoryStore,
  name: string,
  result: string,
): Promise<{ holder: Promise<string>; release: () => void }> {
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  let entered!: () => void;
  const inside = new Promise<void>((resolve) => (entered = resolve));
  const holder = store.locks.hold(name, async () => {
    entered();
    await held;
    return result;
  });
  await inside;
  return { holder, release };
}

async function openSqlite(path: string, options: Partial<SqliteMemoryStoreOptions> = {}): Promise<SqliteMemoryStore> {
  const store = new SqliteMemoryStore({ path, ...options });
  await store.open();
  return store;
}

describe('saving while another process holds the scope lock', () => {
  it(
    'Engram.save answers LOCK_TIMEOUT and writes nothing; other scopes are not held up',
    { timeout: 60_000 },
    async () => {
      const path = await temporaryPath();
      const store = await openSqlite(path, { locks: { ...DEFAULT_SETTINGS.locks, waitMs: 300 } });
      const child = spawnStoreWorker({ url: path, task: { mode: 'hold-lock', lock: 'memory-write:project:held' } });
      try {
        let locked!: () => void;
        const holding = new Promise<void>((resolve) => {
          locked = resolve;
        });
        const exited = collectStoreWriteWorker(child, (line) => {
          if (line === 'locked') locked();
        });
        await Promise.race([
          holding,
          exited.then((result) => expect.fail(`the holder exited early: ${result.stderr}`)),
        ]);

        const engram = new Engram({ store, defaultScope: 'project:held', onWarning: () => undefined });
        const error = await engram
          .save({ content: 'The release train leaves on Thursdays.' })
          .catch((caught: unknown) => caught);
        expect(error).toBeInstanceOf(EngramError);
        expect((error as EngramError).code).toBe('LOCK_TIMEOUT');
        expect((error as EngramError).message).toContain('memory-write:project:held');
        expect(await store.count({ scopes: ['project:held'], archived: 'include', invalid: 'include' })).toBe(0);

        const elsewhere = await engram.save({
          content: 'The release train leaves on Thursdays.',
          scope: 'project:free',
        });
        expect(elsewhere.action).toBe('created');
        // Saves that do not dedupe check nothing, so they take no lock.
        const direct = await engram.save({ content: 'The release train leaves on Thursdays.' }, { dedupe: false });
        expect(direct.action).toBe('created');
      } finally {
        child.kill('SIGKILL');
        await store.close();
      }
    },
  );
});

describe('SQLite store locks held by a process that stopped', () => {
  /** Writes a lock row as another process would have left it. */
  function leaveLockRow(path: string, row: { name: string; host: string; pid: number; lockedUntil: number }): void {
    const db = openRawSqlite(path);
    try {
      db.prepare(
        'INSERT INTO store_locks (name, holder, host, pid, locked_until, acquired_at) VALUES (?, ?, ?, ?, ?, ?)',
      ).run(row.name, 'lock_left_behind', row.host, row.pid, row.lockedUntil, Date.now());
    } finally {
      closeSqlite(db);
    }
  }

  it('waits out the lease of a holder on another machine, then takes the lock over', { timeout: 30_000 }, async () => {
    const path = await temporaryPath();
    const store = await openSqlite(path);
    try {
      leaveLockRow(path, {
        name: 'memory-write:global',
        host: `not-${hostname()}`,
        pid: process.pid,
        lockedUntil: Date.now() + 400,
      });
      await expect(
        store.locks.hold('memory-write:global', async () => 'too soon', { waitMs: 50 }),
      ).rejects.toMatchObject({ code: 'LOCK_TIMEOUT' });
      expect(await store.locks.hold('memory-write:global', async () => 'after the lease', { waitMs: 10_000 })).toBe(
        'after the lease',
      );
      const db = openRawSqlite(path, { readOnly: true });
      // Released: the row is gone, not left for the next caller to wait out.
      expect(db.prepare('SELECT COUNT(*) AS n FROM store_locks').get()).toEqual({ n: 0 });
      closeSqlite(db);
    } finally {
      await store.close();
    }
  });

  it(
    'never takes over a live holder on this machine before its lease runs out, even one of this process',
    { timeout: 30_000 },
    async () => {
      const path = await temporaryPath();
      const store = await openSqlite(path);
      try {
        leaveLockRow(path, { name: 'busy', host: hostname(), pid: process.pid, lockedUntil: Date.now() + 60_000 });
        await expect(store.locks.hold('busy', async () => 'stolen', { waitMs: 200 })).rejects.toMatchObject({
          code: 'LOCK_TIMEOUT',
        });
        const db = openRawSqlite(path, { readOnly: true });
        expect(db.prepare('SELECT holder FROM store_locks WHERE name = ?').get('busy')).toEqual({
          holder: 'lock_left_behind',
        });
        closeSqlite(db);
      } finally {
        await store.close();
      }
    },
  );

  it(
    'a second store on the same file waits for the first store in this process, and a holder whose lease ran out is taken over and told',
    { timeout: 30_000 },
    async () => {
      const path = await temporaryPath();
      const warnings: string[] = [];
      const first = await openSqlite(path, {
        locks: { ...DEFAULT_SETTINGS.locks, leaseMs: 150 },
        onWarning: (message) => warnings.push(message),
      });
      const second = await openSqlite(path);
      try {
        const { holder, release } = await holdUntilReleased(first, 'shared', 'first done');
        await expect(second.locks.hold('shared', async () => 'stolen', { waitMs: 400 })).rejects.toMatchObject({
          code: 'LOCK_TIMEOUT',
        });
        release();
        expect(await holder).toBe('first done');
        expect(await second.locks.hold('shared', async () => 'second turn', { waitMs: 2_000 })).toBe('second turn');
        expect(warnings).toEqual([]);

        // A holder whose lease ran out while it still worked (its process stalled, or here: its
        // clock runs 10 s behind, so every lease it writes is already over for the others) loses
        // the lock to a waiter, and hears about it at its next renewal.
        const lagging = await openSqlite(path, {
          locks: { ...DEFAULT_SETTINGS.locks, leaseMs: 150 },
          now: () => new Date(Date.now() - 10_000),
          onWarning: (message) => warnings.push(message),
        });
        const { holder: stalled, release: finishStall } = await holdUntilReleased(lagging, 'stall', 'stalled done');
        expect(await second.locks.hold('stall', async () => 'taken over', { waitMs: 5_000 })).toBe('taken over');
        await new Promise((resolve) => setTimeout(resolve, 200));
        finishStall();
        expect(await stalled).toBe('stalled done');
        await lagging.close();
        expect(warnings.join('\n')).toContain('"stall" was taken over');
      } finally {
        await first.close();
        await second.close();
      }
    },
  );
});
