import { describe, expect, inject, it } from 'vitest';
import { PostgresMemoryStore } from '../../../src/adapters/postgres/postgres-memory-store.js';
import { cosineSimilarity } from '../../../src/recall/vector-similarity.js';
import { createRandomSource } from '../../../src/testing/store-suite-support.js';
import { dropSchema, freshSchemaUrl, withServerClient } from '../../support/postgres-schemas.js';
import { useCleanups } from '../../support/per-test.js';

// Vectors on Postgres: with pgvector where the server has it (HNSW cosine index, search in the
// database), else engram computes cosine over the scope's vectors and says so once. The
// conformance suite's vector cases run on whichever the test server offers; these tests check
// the choice and, where pgvector is there, that it finds exactly what engram's cosine finds.

const serverUrl = inject('postgresUrl');
const skipReason = inject('postgresSkipReason');
const ACTOR = { actor: 'vector-test' };

const cleanup = useCleanups();

async function freshStore(): Promise<{ store: PostgresMemoryStore; warnings: string[]; url: string }> {
  const { url, schema } = freshSchemaUrl(serverUrl, 'vectors');
  const warnings: string[] = [];
  const store = new PostgresMemoryStore({ url, onWarning: (message) => warnings.push(message) });
  await store.open();
  cleanup(() => dropSchema(serverUrl, schema));
  cleanup(() => store.close());
  return { store, warnings, url };
}

async function serverHasPgvector(): Promise<boolean> {
  return withServerClient(
    serverUrl,
    async (client) =>
      ((await client.query("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")).rowCount ?? 0) > 0,
  );
}

describe.skipIf(!serverUrl)(`Postgres vectors${serverUrl ? '' : ` [skipped: ${skipReason}]`}`, () => {
  it('without pgvector, warns once (on first vector use, not on open) and still searches exactly', async (context) => {
    if (await serverHasPgvector()) context.skip('the test server has pgvector, so the fallback is not used there');
    const { store, warnings } = await freshStore();
    const [memory] = await store.createMany([{ scope: 'global', content: 'A memory with a vector.' }], ACTOR);
    expect(warnings).toEqual([]);
    await store.vectors.setSpace({ model: 'm', dimensions: 3 });
    await store.vectors.put([{ id: memory!.id, vector: Float32Array.from([1, 2, 3]) }]);
    expect(
      (await store.vectors.search({ scopes: ['global'], vector: Float32Array.from([1, 2, 3]), limit: 1 }))[0]
        ?.similarity,
    ).toBeCloseTo(1, 6);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/pgvector is not installed/);
    expect(warnings[0]).toMatch(/cosine similarity in engram/);
  });

  it('with pgvector, searches in the database and finds exactly what engram cosine finds, across changes', async (context) => {
    if (!(await serverHasPgvector()))
      context.skip(
        'pgvector is not installed on the test server (Debian bookworm does not package it for PostgreSQL 15)',
      );
    const { store, warnings, url } = await freshStore();
    const random = createRandomSource(5);
    await store.vectors.setSpace({ model: 'm', dimensions: 8 });
    const scopes = ['project:a', 'project:b', 'global'];
    const memories = await store.createMany(
      Array.from({ length: 300 }, (_, index) => ({
        scope: scopes[index % 3]!,
        content: `Memory ${index}.`,
        archived: index % 17 === 0,
      })),
      ACTOR,
    );
    const vectors = new Map(
      memories.map((memory) => [memory.id, Float32Array.from({ length: 8 }, () => random.next() - 0.5)]),
    );
    expect(
      await store.vectors.put(memories.map((memory) => ({ id: memory.id, vector: vectors.get(memory.id)! }))),
    ).toBe(300);
    await store.update(memories[1]!.id, { content: 'Changed text drops the vector.' }, ACTOR);
    await store.delete(memories[2]!.id, ACTOR);
    const live = memories.filter((memory, index) => index !== 1 && index !== 2 && !memory.archived);
    const problems: string[] = [];
    for (let query = 0; query < 100; query += 1) {
      const vector = Float32Array.from({ length: 8 }, () => random.next() - 0.5);
      const asked = [scopes[query % 3]!];
      const hits = await store.vectors.search({ scopes: asked, vector, limit: 7 });
      const expected = live
        .filter((memory) => asked.includes(memory.scope))
        .map((memory) => ({ id: memory.id, similarity: cosineSimilarity(vector, vectors.get(memory.id)!)! }))
        .sort((a, b) => b.similarity - a.similarity)
        .slice(0, 7);
      if (hits.map((hit) => hit.memory.id).join() !== expected.map((hit) => hit.id).join())
        problems.push(`query ${query}`);
      hits.forEach((hit, index) => expect(hit.similarity).toBeCloseTo(expected[index]!.similarity, 5));
    }
    expect(problems).toEqual([]);
    expect(warnings).toEqual([]);
    // A second store on the same schema (another process) mirrors nothing twice and sees the same.
    const other = new PostgresMemoryStore({ url, onWarning: () => undefined });
    await other.open();
    cleanup(() => other.close());
    expect(await other.vectors.counts()).toEqual(await store.vectors.counts());
    expect(await store.vectors.setSpace({ model: 'other', dimensions: 3 })).toEqual({ dropped: 298 });
    await store.vectors.put([{ id: live[0]!.id, vector: Float32Array.from([1, 0, 0]) }]);
    expect(
      (await other.vectors.search({ scopes: [live[0]!.scope], vector: Float32Array.from([1, 0, 0]), limit: 3 })).map(
        (hit) => hit.memory.id,
      ),
    ).toEqual([live[0]!.id]);
  });
});
