import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SqliteMemoryStore } from '../../src/adapters/sqlite/sqlite-memory-store.js';
import { Engram } from '../../src/engram.js';
import { closeSqlite, openSqlite } from '../../src/adapters/sqlite/sqlite-driver.js';

describe('recall while another process holds the write lock', () => {
  let directory: string;
  let path: string;
  let store: SqliteMemoryStore;

  beforeEach(async () => {
    directory = await mkdtemp(join(tmpdir(), 'engram-hits-'));
    path = join(directory, 'memory.db');
    store = new SqliteMemoryStore({ path, busyTimeoutMs: 50 });
    await store.open();
  });

  afterEach(async () => {
    await store.close();
    await rm(directory, { recursive: true, force: true });
  });

  it('still answers, says the hits were not recorded, and records them once the lock is gone', async () => {
    const engram = new Engram({ store, defaultScope: 'project:locks' });
    const memory = await engram.remember({ content: 'Deploys go out on Tuesdays after the standup.' });
    const writer = openSqlite(path);
    writer.exec('BEGIN IMMEDIATE');
    try {
      const blocked = await engram.recall('when do deploys go out?');
      expect(blocked.memories.map((entry) => entry.memory.id)).toEqual([memory.id]);
      expect(blocked.warnings).toContain('hits-not-recorded');
      const context = await engram.buildMemoryContext('when do deploys go out?', { includeStaticPart: false });
      expect(context.block).toContain(memory.id);
      expect(context.warnings).toContain('hits-not-recorded');
    } finally {
      writer.exec('ROLLBACK');
      closeSqlite(writer);
    }
    expect((await engram.get(memory.id)).hitCount).toBe(0);
    const free = await engram.recall('when do deploys go out?');
    expect(free.warnings).not.toContain('hits-not-recorded');
    expect((await engram.get(memory.id)).hitCount).toBe(1);
  });
});
