import { copyFileSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SqliteMemoryStore } from '../../../src/adapters/sqlite/sqlite-memory-store.js';
import { hashedWordVector } from '../../../src/testing/openai-compatible-embeddings-server.js';
import { LATEST_SQLITE_VERSION } from '../../../src/adapters/sqlite/sqlite-migrations.js';
import { useTemporaryFolders } from '../../support/per-test.js';

// test/fixtures/store-v4-better-sqlite3.db was written by engram 9b58f6d (better-sqlite3) with
// test/fixtures/make-store-fixture.mjs; the .json beside it is every record as that version read it.
const FIXTURE = resolve(import.meta.dirname, '../../fixtures/store-v4-better-sqlite3.db');
const EXPECTED = JSON.parse(readFileSync(FIXTURE.replace(/\.db$/, '.json'), 'utf8')) as {
  schemaVersion: number;
  space: { model: string; dimensions: number };
  memories: Array<{ id: string; scope: string; archived: boolean; updatedAt?: string }>;
  history: Array<{ id: string; action: string }>;
  vectors: Array<{ id: string; vector: number[]; updatedAt?: string }>;
  jobs: unknown[];
  checkpoints: unknown[];
};
const temporaryFolder = useTemporaryFolders('engram-old-store-');

/** A copy of the fixture in a temp folder: opening a WAL store writes beside it, never into the repo. */
async function fixtureCopy(): Promise<string> {
  const path = join(await temporaryFolder(), 'memory.db');
  copyFileSync(FIXTURE, path);
  return path;
}

async function exported(store: SqliteMemoryStore): Promise<typeof EXPECTED> {
  const page = { limit: 1000 };
  return {
    schemaVersion: store.info().schemaVersion,
    space: (await store.vectors.space())!,
    memories: await store.records.exportMemories(page),
    history: await store.records.exportHistory(page),
    vectors: (await store.records.exportVectors(page)).map((entry) => ({ ...entry, vector: [...entry.vector] })),
    jobs: await store.records.exportJobs(page),
    checkpoints: await store.records.exportCheckpoints(page),
  };
}

describe('a store written by the better-sqlite3 engram', () => {
  it('fixture holds what the test claims: memories in three scopes, an update, a forget, vectors, a job, a checkpoint', () => {
    expect(new Set(EXPECTED.memories.map((memory) => memory.scope)).size).toBe(3);
    expect(EXPECTED.history.map((entry) => entry.action)).toEqual(expect.arrayContaining(['update', 'archive']));
    expect(EXPECTED.memories.some((memory) => memory.archived)).toBe(true);
    expect(EXPECTED.vectors).toHaveLength(EXPECTED.memories.length);
    expect(EXPECTED.jobs).toHaveLength(1);
    expect(EXPECTED.checkpoints).toHaveLength(1);
  });

  it('opens with every memory, history row, vector, job and checkpoint exactly as it was written', async () => {
    const path = await fixtureCopy();
    const store = new SqliteMemoryStore({ path, onWarning: (message) => expect.fail(message) });
    await store.open();
    // Migrated on open to this version's schema; every record as it was.
    expect(await exported(store)).toEqual({ ...EXPECTED, schemaVersion: LATEST_SQLITE_VERSION });
    await store.close();
    // Closed and reopened: reading changed nothing.
    const again = new SqliteMemoryStore({ path });
    await again.open();
    expect(await exported(again)).toEqual({ ...EXPECTED, schemaVersion: LATEST_SQLITE_VERSION });
    await again.close();
  });

  it('searches the old vectors and text, and takes new writes beside the old records', async () => {
    const path = await fixtureCopy();
    const store = new SqliteMemoryStore({ path, onWarning: (message) => expect.fail(message) });
    await store.open();
    const scopes = ['user:ada', 'project:engram'];
    const query = Float32Array.from(hashedWordVector('black coffee sugar', { dimensions: EXPECTED.space.dimensions }));
    const hits = await store.vectors.search({ vector: query, scopes, limit: 2 });
    expect(hits[0]!.memory.id).toBe('mem_fx_coffee');
    expect(hits[0]!.similarity).toBeGreaterThan(0.5);
    const text = await store.searchText({ terms: ['indentation'], scopes, limit: 5 });
    expect(text.map((hit) => hit.memory.id)).toEqual(['mem_fx_tabs']);

    const [added] = await store.createMany([{ scope: 'user:ada', content: 'Written by the new driver.' }], {
      actor: 'test',
    });
    await store.vectors.put([{ id: added!.id, vector: query, updatedAt: added!.updatedAt }]);
    await store.close();
    const again = new SqliteMemoryStore({ path });
    await again.open();
    const after = await exported(again);
    expect(after.memories).toHaveLength(EXPECTED.memories.length + 1);
    expect(after.memories).toEqual(expect.arrayContaining(EXPECTED.memories));
    expect(after.vectors).toEqual(expect.arrayContaining(EXPECTED.vectors));
    expect(after.history).toEqual(expect.arrayContaining(EXPECTED.history));
    await again.close();
  });
});
