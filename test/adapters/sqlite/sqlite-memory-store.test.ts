import { createHash, randomBytes } from 'node:crypto';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SqliteMemoryStore } from '../../../src/adapters/sqlite/sqlite-memory-store.js';
import { SQLITE_MIGRATIONS } from '../../../src/adapters/sqlite/sqlite-migrations.js';
import { EngramError } from '../../../src/kernel/errors.js';
import { runMemoryStoreSuite } from '../../../src/testing/suites.js';
import {
  collectStoreWriteWorker,
  spawnStoreWriteWorker,
  unexpectedStderr,
} from '../../../src/testing/store-write-worker-process.js';
import { closeSqlite, openSqlite } from '../../../src/adapters/sqlite/sqlite-driver.js';
import { expectEngramError } from '../../support/expect-engram-error.js';
import { writeOnOldSchema } from '../../support/migrate-seed.js';
import { openSuiteSqliteStore, withSqliteStore } from '../../support/temporary-store.js';
import { useTemporaryFolders } from '../../support/per-test.js';

const ACTOR = { actor: 'sqlite-test' };
const LATEST_VERSION = SQLITE_MIGRATIONS.at(-1)!.version;

runMemoryStoreSuite({
  name: 'sqlite',
  create: () => openSuiteSqliteStore('engram-suite-'),
});

const temporaryFolder = useTemporaryFolders('engram-sqlite-');

async function temporaryPath(name = 'memory.db'): Promise<string> {
  return join(await temporaryFolder(), name);
}

async function fileDigest(path: string): Promise<string> {
  return createHash('sha256')
    .update(await readFile(path))
    .digest('hex');
}

/** Fills a buffer with bytes from a fixed seed, so a corruption is the same on every run. */
function seededGarbage(length: number, seed: number): Buffer {
  const bytes = Buffer.alloc(length);
  let state = seed >>> 0;
  for (let index = 0; index < length; index += 1) {
    state = (Math.imul(state, 1_664_525) + 1_013_904_223) >>> 0;
    bytes[index] = state >>> 24;
  }
  return bytes;
}

describe('SqliteMemoryStore migrations', () => {
  it('upgrades a version 1 database to the latest schema, keeping its data and indexing it for search', async () => {
    const path = await temporaryPath();
    const old = new SqliteMemoryStore({ path, targetVersion: 1 });
    await old.open();
    const { written, edited } = await writeOnOldSchema(old, ACTOR);

    const raw = openSqlite(path);
    expect(raw.prepare("SELECT name FROM sqlite_master WHERE name = 'memories_fts'").get()).toBeUndefined();
    // A row written by an old engram that had no full-text triggers.
    raw
      .prepare(
        `INSERT INTO memories (id, scope, type, name, description, content, importance, source, created_at, updated_at,
           last_accessed_at, hit_count, valid_from, invalid_at, superseded_by, archived)
         VALUES ('legacy-row', 'project:legacy', 'reference', 'runbook', 'Where the runbook lives.',
           'The billing runbook lives in the ops wiki.', 0.6, NULL, 1704067200000, 1704067200000, NULL, 0, 1704067200000, NULL, NULL, 0)`,
      )
      .run();
    closeSqlite(raw);

    await withSqliteStore(path, async (store) => {
      expect(store.info().schemaVersion).toBe(LATEST_VERSION);
      expect(await store.get(written.id)).toEqual(edited);
      expect((await store.history(written.id)).map((entry) => entry.action)).toEqual(['create', 'update']);
      expect(await store.get('legacy-row')).toMatchObject({
        scope: 'project:legacy',
        type: 'reference',
        createdAt: '2024-01-01T00:00:00.000Z',
      });
      const hits = await store.searchText({ scopes: ['project:legacy'], terms: ['billing'], limit: 10 });
      expect(hits.map((hit) => hit.memory.id).sort()).toEqual([written.id, 'legacy-row'].sort());
      const fresh = await store.create({ scope: 'project:legacy', content: 'Billing moved to Mondays.' }, ACTOR);
      const after = await store.searchText({ scopes: ['project:legacy'], terms: ['mondays'], limit: 10 });
      expect(after.map((hit) => hit.memory.id)).toEqual([fresh.id]);
    });

    const check = openSqlite(path, { readOnly: true });
    const versions = check.prepare('SELECT version FROM schema_migrations ORDER BY version').all() as Array<{
      version: number;
    }>;
    closeSqlite(check);
    expect(versions.map((row) => row.version)).toEqual(SQLITE_MIGRATIONS.map((migration) => migration.version));
  });

  it('opening an up-to-date database again changes no schema version', async () => {
    const path = await temporaryPath();
    await withSqliteStore(path, async (store) => {
      await store.create({ scope: 'global', content: 'Opened twice.' }, ACTOR);
    });
    await withSqliteStore(path, async (store) => {
      expect(store.info().schemaVersion).toBe(LATEST_VERSION);
      expect(await store.count({ scopes: ['global'] })).toBe(1);
    });
    const check = openSqlite(path, { readOnly: true });
    const rows = check.prepare('SELECT version FROM schema_migrations').all();
    closeSqlite(check);
    expect(rows).toHaveLength(SQLITE_MIGRATIONS.length);
  });

  for (const journalMode of ['wal', 'delete'] as const) {
    it(`refuses a database from a newer engram (journal mode ${journalMode}) with STORE_SCHEMA_NEWER and leaves the file untouched`, async () => {
      const path = await temporaryPath();
      // Written in another process: on Node 20, @photostructure/sqlite 1.x keeps a closed
      // connection (and its lock) until garbage collection, and leaving WAL needs the file alone.
      const writer = await collectStoreWriteWorker(
        spawnStoreWriteWorker({ url: path, scope: 'global', count: 1, tag: 'future' }),
      );
      expect({ code: writer.exitCode, ids: writer.ids.length }).toEqual({ code: 0, ids: 1 });
      const raw = openSqlite(path);
      raw.exec(`PRAGMA journal_mode = ${journalMode}`);
      raw
        .prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)')
        .run(LATEST_VERSION + 1, 'from the future', 0);
      closeSqlite(raw);
      const before = await fileDigest(path);

      const store = new SqliteMemoryStore({ path });
      const error = await expectEngramError(() => store.open(), 'STORE_SCHEMA_NEWER');
      expect(error.message).toContain(String(LATEST_VERSION + 1));
      await store.close();
      expect(await fileDigest(path)).toBe(before);
    });
  }
});

describe('SqliteMemoryStore crash safety', () => {
  it('keeps every id a writer printed before it was killed with SIGKILL', async () => {
    const path = await temporaryPath();
    const child = spawnStoreWriteWorker({ url: path, scope: 'project:crash', count: 'unbounded', tag: 'doomed' });
    let killed = false;
    const result = await collectStoreWriteWorker(child, (_id, printed) => {
      if (printed >= 300 && !killed) {
        killed = true;
        child.kill('SIGKILL');
      }
    });
    expect({ signal: result.signal, stderr: unexpectedStderr(result.stderr) }).toEqual({
      signal: 'SIGKILL',
      stderr: '',
    });
    expect(result.ids.length).toBeGreaterThanOrEqual(300);

    await withSqliteStore(path, async (store) => {
      const missing: string[] = [];
      for (const id of result.ids) if ((await store.get(id, ['project:crash'])) === undefined) missing.push(id);
      expect(missing).toEqual([]);
      expect(await store.count({ scopes: ['project:crash'] })).toBeGreaterThanOrEqual(result.ids.length);
      const hits = await store.searchText({ scopes: ['project:crash'], terms: ['writer'], limit: 10_000 });
      expect(hits.length).toBe(await store.count({ scopes: ['project:crash'] }));
    });
    const check = openSqlite(path);
    expect((check.prepare('PRAGMA integrity_check').get() as { integrity_check: string }).integrity_check).toBe('ok');
    expect(() =>
      check.prepare("INSERT INTO memories_fts (memories_fts) VALUES ('integrity-check')").run(),
    ).not.toThrow();
    closeSqlite(check);
  });
});

describe('SqliteMemoryStore on a corrupt file', () => {
  const notDatabases: Array<[string, () => Buffer]> = [
    ['random bytes', () => randomBytes(64 * 1024)],
    ['a text file', () => Buffer.from('name,value\nport,8080\nhost,localhost\n'.repeat(200))],
    [
      'the SQLite header followed by random bytes',
      () => Buffer.concat([Buffer.from('SQLite format 3\u0000', 'latin1'), seededGarbage(64 * 1024, 7)]),
    ],
  ];
  for (const [label, contents] of notDatabases) {
    it(`refuses ${label} with STORE_CORRUPT and leaves the bytes unchanged`, async () => {
      const path = await temporaryPath();
      await writeFile(path, contents());
      const before = await fileDigest(path);
      const store = new SqliteMemoryStore({ path });
      const error = await expectEngramError(() => store.open(), 'STORE_CORRUPT');
      expect(error.message).toMatch(/corrupt|not .*(database|SQLite)/i);
      await store.close();
      expect(await fileDigest(path)).toBe(before);
    });
  }

  it('says which file it refused', async () => {
    const path = await temporaryPath('notes.txt');
    await writeFile(path, 'just some notes\n');
    const error = await expectEngramError(() => new SqliteMemoryStore({ path }).open(), 'STORE_CORRUPT');
    expect(error.message).toContain(path);
    expect(await readdir(join(path, '..'))).toEqual(['notes.txt']);
  });

  /** A real store of 400 memories, closed, then damaged in place by `damage`. */
  async function damagedDatabase(
    damage: (bytes: Buffer, pageSize: number) => void,
  ): Promise<{ path: string; digest: string }> {
    const path = await temporaryPath();
    await withSqliteStore(path, async (store) => {
      await store.createMany(
        Array.from({ length: 400 }, (_, index) => ({
          scope: 'project:damaged',
          content: `Fact number ${index}: ${'the quick brown fox jumps over the lazy dog '.repeat(3)}`,
        })),
        ACTOR,
      );
    });
    const bytes = await readFile(path);
    const pageSize = bytes.readUInt16BE(16) === 1 ? 65_536 : bytes.readUInt16BE(16);
    expect(bytes.length / pageSize).toBeGreaterThan(10);
    damage(bytes, pageSize);
    await writeFile(path, bytes);
    return { path, digest: await fileDigest(path) };
  }

  /** Opening, or else the first read, must fail with STORE_CORRUPT; the file must not be rewritten. */
  async function expectCorruptionReported(path: string, digest: string): Promise<void> {
    const store = new SqliteMemoryStore({ path });
    const opened = await store.open().then(
      () => undefined,
      (error: unknown) => error,
    );
    if (opened === undefined) {
      await expectEngramError(
        () => store.list({ scopes: ['project:damaged'], archived: 'include', invalid: 'include' }),
        'STORE_CORRUPT',
      );
    } else {
      expect(opened).toBeInstanceOf(EngramError);
      expect((opened as EngramError).code).toBe('STORE_CORRUPT');
    }
    await store.close();
    expect(await fileDigest(path)).toBe(digest);
  }

  it('reports a database whose first page is garbage after the header as STORE_CORRUPT, without rewriting it', async () => {
    const { path, digest } = await damagedDatabase((bytes, pageSize) => {
      seededGarbage(pageSize * 4 - 100, 11).copy(bytes, 100);
    });
    await expectCorruptionReported(path, digest);
  });

  it('reports a database whose data pages are half overwritten as STORE_CORRUPT, without rewriting it', async () => {
    const { path, digest } = await damagedDatabase((bytes, pageSize) => {
      for (let offset = pageSize; offset < bytes.length; offset += pageSize) {
        seededGarbage(pageSize / 2, offset).copy(bytes, offset);
      }
    });
    await expectCorruptionReported(path, digest);
  });
});
