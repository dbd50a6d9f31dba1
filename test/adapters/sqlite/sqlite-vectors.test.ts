import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SqliteMemoryStore, type SqliteMemoryStoreOptions } from '../../../src/adapters/sqlite/sqlite-memory-store.js';
import { createRandomSource } from '../../../src/testing/store-suite-support.js';
import { closeSqlite, openSqlite } from '../../../src/adapters/sqlite/sqlite-driver.js';
import { useTemporaryFolders } from '../../support/per-test.js';

const ACTOR = { actor: 'sqlite-vectors-test' };
const temporaryFolder = useTemporaryFolders('engram-vectors-');

async function temporaryPath(): Promise<string> {
  return join(await temporaryFolder(), 'memory.db');
}

async function opened(options: SqliteMemoryStoreOptions): Promise<SqliteMemoryStore> {
  const store = new SqliteMemoryStore(options);
  await store.open();
  return store;
}

describe('SQLite vectors', () => {
  it('migrates a version-2 store to version 3: memories kept, every one waiting for a vector', async () => {
    const path = await temporaryPath();
    const old = await opened({ path, targetVersion: 2 });
    await old.createMany(
      [
        { scope: 'global', content: 'Written before vectors existed.' },
        { scope: 'global', content: 'So was this.' },
      ],
      ACTOR,
    );
    expect(old.info().schemaVersion).toBe(2);
    await old.close();

    const store = await opened({ path, targetVersion: 3 });
    expect(store.info().schemaVersion).toBe(3);
    expect(await store.vectors.space()).toBeUndefined();
    expect(await store.vectors.counts()).toEqual({ stored: 0, missing: 2 });
    expect((await store.vectors.missing({ limit: 10 })).map((memory) => memory.content)).toEqual([
      'Written before vectors existed.',
      'So was this.',
    ]);
    await store.close();
  });

  it('keeps vectors as float32 blobs that survive closing and reopening the file', async () => {
    const path = await temporaryPath();
    const store = await opened({ path });
    const [memory] = await store.createMany([{ scope: 'global', content: 'A durable vector.' }], ACTOR);
    await store.vectors.setSpace({ model: 'durable', dimensions: 3 });
    await store.vectors.put([{ id: memory!.id, vector: Float32Array.from([0.25, -0.5, 1]) }]);
    await store.close();

    const raw = openSqlite(path, { readOnly: true });
    const row = raw.prepare('SELECT vector FROM memory_vectors').get() as { vector: Buffer };
    closeSqlite(raw);
    expect(Array.from(new Float32Array(new Uint8Array(row.vector).buffer))).toEqual([0.25, -0.5, 1]);

    const reopened = await opened({ path });
    expect(await reopened.vectors.space()).toEqual({ model: 'durable', dimensions: 3 });
    const [hit] = await reopened.vectors.search({
      scopes: ['global'],
      vector: Float32Array.from([0.25, -0.5, 1]),
      limit: 1,
    });
    expect(hit!.memory.id).toBe(memory!.id);
    expect(hit!.similarity).toBeCloseTo(1, 6);
    await reopened.close();
  });

  it('opens and searches with the same results when sqlite-vec cannot load, and warns once', async () => {
    const random = createRandomSource(99);
    const inputs = Array.from({ length: 40 }, (_value, index) => ({
      scope: index % 2 === 0 ? 'project:even' : 'project:odd',
      content: `Memory ${index}.`,
    }));
    const vectors = inputs.map(() => Float32Array.from({ length: 6 }, () => random.next() - 0.5));
    const queries = Array.from({ length: 10 }, () => Float32Array.from({ length: 6 }, () => random.next() - 0.5));

    const results: Array<Array<[string, number]>> = [];
    const warnings: string[] = [];
    for (const broken of [false, true]) {
      const store = await opened({
        path: await temporaryPath(),
        generateId: (() => {
          let next = 0;
          return () => `mem_${String((next += 1)).padStart(4, '0')}`;
        })(),
        onWarning: (message) => warnings.push(message),
        ...(broken && {
          loadVectorExtension: () => {
            throw new Error('no sqlite-vec build for this platform');
          },
        }),
      });
      const memories = await store.createMany(inputs, ACTOR);
      await store.vectors.setSpace({ model: 'fallback', dimensions: 6 });
      await store.vectors.put(memories.map((memory, index) => ({ id: memory.id, vector: vectors[index]! })));
      const found: Array<[string, number]> = [];
      for (const vector of queries) {
        for (const hit of await store.vectors.search({ scopes: ['project:even'], vector, limit: 5 }))
          found.push([hit.memory.id, Math.round(hit.similarity * 1e5) / 1e5]);
      }
      results.push(found);
      await store.close();
    }
    expect(results[0]).toHaveLength(50);
    expect(results[1]).toEqual(results[0]);
    expect(warnings).toEqual([
      expect.stringContaining('sqlite-vec could not be loaded (no sqlite-vec build for this platform)'),
    ]);
  });
});
