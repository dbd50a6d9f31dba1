import { expect } from 'vitest';
import { MEMORY_TYPES, type Memory, type MemoryType, type NewMemory } from '../../memory/memory.js';
import type { Scope } from '../../memory/scope.js';
import type { StoreWith } from '../../contracts/memory-store.js';
import type { VectorEntry, VectorSearch } from '../../contracts/memory-store-vectors.js';
import {
  createRandomSource,
  describeInput,
  expectEngramError,
  outcomeOf,
  SUITE_ACTOR,
  type RandomSource,
  storeCaseGroup,
} from '../store-suite-support.js';

const SPACE = { model: 'conformance-embedder', dimensions: 4 } as const;
const vector = (...values: number[]): Float32Array => Float32Array.from(values);

/** Scopes that trip naive filters: prefixes, case variants, LIKE wildcards, colons. */
const SCOPES: readonly Scope[] = [
  'global',
  'project:app',
  'project:app2',
  'project:App',
  'project:a_b',
  'project:axb',
  'project:100%',
  'session:s-1',
  'session:s-1:x',
  'user:alice',
];
const RANDOM_DIMENSIONS = 8;
const MEMORIES_PER_SCOPE = 25;
const RANDOM_QUERIES = 2_000;
const SEED = 20_240_917;

function randomVector(random: RandomSource, dimensions: number): Float32Array {
  const values = Float32Array.from({ length: dimensions }, () => random.next() * 2 - 1);
  if (values.every((value) => value === 0)) values[0] = 1;
  return values;
}

function cosine(a: Float32Array, b: Float32Array): number {
  let dot = 0;
  let normA = 0;
  let normB = 0;
  for (let index = 0; index < a.length; index += 1) {
    dot += a[index]! * b[index]!;
    normA += a[index]! * a[index]!;
    normB += b[index]! * b[index]!;
  }
  return dot / Math.sqrt(normA * normB);
}

async function seedWithVectors(
  store: StoreWith<'vectors'>,
  inputs: NewMemory[],
  vectors: Float32Array[],
): Promise<Memory[]> {
  const memories = await store.createMany(inputs, SUITE_ACTOR);
  await store.vectors.put(memories.map((memory, index) => ({ id: memory.id, vector: vectors[index]! })));
  return memories;
}

export const vectorCases = storeCaseGroup({
  title: 'vectors',
  roles: ['vectors'],
  cases: [
    {
      name: 'vectors round-trip: a stored vector finds its memory with similarity 1, and the backfill queue lists the rest',
      async run({ store }) {
        expect(await store.vectors.space()).toBeUndefined();
        expect(await store.vectors.setSpace(SPACE)).toEqual({ dropped: 0 });
        expect(await store.vectors.space()).toEqual(SPACE);
        const [first, second, third] = await store.createMany(
          [1, 2, 3].map((index) => ({ scope: 'project:vectors', content: `Vector fact number ${index}.` })),
          SUITE_ACTOR,
        );
        expect(
          await store.vectors.put([
            { id: first!.id, vector: vector(1, 0, 0, 0) },
            { id: second!.id, vector: vector(0, 1, 0, 0) },
          ]),
        ).toBe(2);
        const hits = await store.vectors.search({ scopes: ['project:vectors'], vector: vector(1, 0, 0, 0), limit: 10 });
        expect(hits.map((hit) => hit.memory.id)).toEqual([first!.id, second!.id]);
        expect(hits[0]!.similarity).toBeCloseTo(1, 5);
        expect(hits[1]!.similarity).toBeCloseTo(0, 5);
        expect(hits[0]!.memory).toEqual(first);
        expect((await store.vectors.missing({ limit: 10 })).map((memory) => memory.id)).toEqual([third!.id]);
        expect(await store.vectors.counts()).toEqual({ stored: 2, missing: 1 });
        // Replacing a vector changes what it finds.
        await store.vectors.put([{ id: first!.id, vector: vector(0, 0, 1, 0) }]);
        const again = await store.vectors.search({ scopes: ['project:vectors'], vector: vector(0, 0, 1, 0), limit: 1 });
        expect(again.map((hit) => hit.memory.id)).toEqual([first!.id]);
        expect(await store.vectors.counts()).toEqual({ stored: 2, missing: 1 });
      },
    },
    {
      name: 'vectors.search ranks by cosine similarity, ignores vector length, and honours limit and types',
      async run({ store }) {
        await store.vectors.setSpace(SPACE);
        const angles = [0, 20, 45, 70, 100, 180];
        const memories = await seedWithVectors(
          store,
          angles.map((angle, index) => ({
            scope: 'project:angles',
            content: `At ${angle} degrees.`,
            type: index % 2 === 0 ? 'project' : 'user',
          })),
          // Lengths differ on purpose: cosine must not care.
          angles.map((angle, index) =>
            vector(
              Math.cos((angle * Math.PI) / 180) * (index + 1),
              Math.sin((angle * Math.PI) / 180) * (index + 1),
              0,
              0,
            ),
          ),
        );
        const hits = await store.vectors.search({ scopes: ['project:angles'], vector: vector(3, 0, 0, 0), limit: 10 });
        expect(hits.map((hit) => hit.memory.id)).toEqual(memories.map((memory) => memory.id));
        hits.forEach((hit, index) => expect(hit.similarity).toBeCloseTo(Math.cos((angles[index]! * Math.PI) / 180), 4));
        expect(
          (await store.vectors.search({ scopes: ['project:angles'], vector: vector(1, 0, 0, 0), limit: 2 })).map(
            (hit) => hit.memory.id,
          ),
        ).toEqual(memories.slice(0, 2).map((memory) => memory.id));
        const users = await store.vectors.search({
          scopes: ['project:angles'],
          vector: vector(1, 0, 0, 0),
          limit: 10,
          types: ['user'],
        });
        expect(users.map((hit) => hit.memory.id)).toEqual(
          memories.filter((memory) => memory.type === 'user').map((memory) => memory.id),
        );
        expect(
          await store.vectors.search({ scopes: ['project:angles'], vector: vector(1, 0, 0, 0), limit: 0 }),
        ).toEqual([]);
        expect(await store.vectors.search({ scopes: [], vector: vector(1, 0, 0, 0), limit: 5 })).toEqual([]);
        // A zero query has no direction: nothing is near it.
        expect(
          await store.vectors.search({ scopes: ['project:angles'], vector: vector(0, 0, 0, 0), limit: 5 }),
        ).toEqual([]);
      },
    },
    {
      name: `vectors.search never returns a memory outside the scopes it names (${RANDOM_QUERIES.toLocaleString('en')} random queries over ${SCOPES.length} scopes)`,
      timeoutMs: 120_000,
      async run({ store }) {
        const random = createRandomSource(SEED);
        await store.vectors.setSpace({ model: 'random', dimensions: RANDOM_DIMENSIONS });
        const inputs: NewMemory[] = [];
        const vectors: Float32Array[] = [];
        for (const scope of SCOPES) {
          for (let count = 0; count < MEMORIES_PER_SCOPE; count += 1) {
            inputs.push({
              scope,
              type: random.pick(MEMORY_TYPES),
              content: `Memory ${inputs.length} of ${scope}.`,
              archived: random.next() < 0.15,
              invalidAt: random.next() < 0.15 ? '2024-01-02T00:00:00.000Z' : null,
            });
            vectors.push(randomVector(random, RANDOM_DIMENSIONS));
          }
        }
        const memories = await seedWithVectors(store, inputs, vectors);
        const vectorOf = new Map(memories.map((memory, index) => [memory.id, vectors[index]!]));
        const problems: string[] = [];
        for (let query = 0; query < RANDOM_QUERIES && problems.length < 10; query += 1) {
          const scopes = random.sample([...SCOPES, 'project:nothing-here'], random.integer(1, 3));
          const search: VectorSearch = {
            scopes,
            vector: randomVector(random, RANDOM_DIMENSIONS),
            limit: random.pick([1, 5, 20, 500]),
          };
          if (random.next() < 0.25) search.types = random.sample<MemoryType>(MEMORY_TYPES, random.integer(1, 2));
          const hits = await store.vectors.search(search);
          const leak = hits.find((hit) => !scopes.includes(hit.memory.scope));
          if (leak)
            problems.push(
              `query ${query}: ${leak.memory.id} of ${leak.memory.scope} returned for ${JSON.stringify(scopes)}`,
            );
          const expected = memories
            .filter((memory) => scopes.includes(memory.scope) && !memory.archived && memory.invalidAt === null)
            .filter((memory) => !search.types || search.types.includes(memory.type))
            .map((memory) => cosine(search.vector, vectorOf.get(memory.id)!))
            .sort((a, b) => b - a);
          const want = Math.min(search.limit, expected.length);
          if (hits.length !== want) problems.push(`query ${query}: ${hits.length} hits, wanted ${want}`);
          const kth = expected[want - 1];
          const weak = hits.find((hit) => kth !== undefined && hit.similarity < kth - 1e-4);
          if (weak)
            problems.push(
              `query ${query}: ${weak.memory.id} (similarity ${weak.similarity}) is not among the ${want} nearest`,
            );
          if (hits.some((hit, index) => index > 0 && hit.similarity > hits[index - 1]!.similarity + 1e-6))
            problems.push(`query ${query}: hits not best first`);
        }
        expect(problems).toEqual([]);
      },
    },
    {
      name: 'a new vector space drops every stored vector; the same space drops none',
      async run({ store }) {
        await store.vectors.setSpace(SPACE);
        const memories = await seedWithVectors(
          store,
          [1, 2, 3].map((index) => ({ scope: 'project:space', content: `Space fact ${index}.` })),
          [vector(1, 0, 0, 0), vector(0, 1, 0, 0), vector(0, 0, 1, 0)],
        );
        expect(await store.vectors.setSpace({ ...SPACE })).toEqual({ dropped: 0 });
        expect(await store.vectors.counts()).toEqual({ stored: 3, missing: 0 });
        expect(await store.vectors.setSpace({ model: 'another-model', dimensions: 4 })).toEqual({ dropped: 3 });
        expect(await store.vectors.space()).toEqual({ model: 'another-model', dimensions: 4 });
        expect(await store.vectors.counts()).toEqual({ stored: 0, missing: 3 });
        expect(await store.vectors.search({ scopes: ['project:space'], vector: vector(1, 0, 0, 0), limit: 5 })).toEqual(
          [],
        );
        await store.vectors.put([{ id: memories[0]!.id, vector: vector(1, 1, 0, 0) }]);
        expect(await store.vectors.setSpace({ model: 'another-model', dimensions: 8 })).toEqual({ dropped: 1 });
        await expectEngramError(
          () => store.vectors.search({ scopes: ['project:space'], vector: vector(1, 0, 0, 0), limit: 5 }),
          'INVALID_INPUT',
        );
        await expectEngramError(
          () => store.vectors.put([{ id: memories[0]!.id, vector: vector(1, 0, 0, 0) }]),
          'INVALID_INPUT',
        );
        expect(await store.vectors.counts()).toEqual({ stored: 0, missing: 3 });
      },
    },
    {
      name: 'vectors.search leaves out archived and invalidated memories; archive and restore keep the vector',
      async run({ store }) {
        await store.vectors.setSpace(SPACE);
        const [kept, archived, invalid] = await seedWithVectors(
          store,
          ['kept', 'archived', 'invalid'].map((name) => ({
            scope: 'project:states',
            name,
            content: `The ${name} memory.`,
          })),
          [vector(1, 0, 0, 0), vector(1, 0.1, 0, 0), vector(1, 0.2, 0, 0)],
        );
        await store.archive(archived!.id, SUITE_ACTOR);
        await store.invalidate(invalid!.id, {}, SUITE_ACTOR);
        const ids = async (): Promise<string[]> =>
          (await store.vectors.search({ scopes: ['project:states'], vector: vector(1, 0, 0, 0), limit: 10 })).map(
            (hit) => hit.memory.id,
          );
        expect(await ids()).toEqual([kept!.id]);
        await store.restore(archived!.id, SUITE_ACTOR);
        expect(await ids()).toEqual([kept!.id, archived!.id]);
        expect(await store.vectors.counts()).toEqual({ stored: 3, missing: 0 });
      },
    },
    {
      name: 'vectors follow their memory: deleting it or changing its text drops the vector; other updates keep it',
      async run({ store }) {
        await store.vectors.setSpace(SPACE);
        const [edited, tagged, deleted] = await seedWithVectors(
          store,
          ['edited', 'tagged', 'deleted'].map((name) => ({
            scope: 'project:follow',
            name,
            content: `The ${name} memory.`,
          })),
          [vector(1, 0, 0, 0), vector(0, 1, 0, 0), vector(0, 0, 1, 0)],
        );
        await store.update(tagged!.id, { importance: 0.9, type: 'user' }, SUITE_ACTOR);
        await store.recordAccess([tagged!.id], new Date().toISOString());
        await store.update(edited!.id, { content: 'The edited memory, rewritten.' }, SUITE_ACTOR);
        await store.delete(deleted!.id, SUITE_ACTOR);
        expect(await store.vectors.counts()).toEqual({ stored: 1, missing: 1 });
        expect((await store.vectors.missing({ limit: 10 })).map((memory) => memory.id)).toEqual([edited!.id]);
        // An undone delete brings the memory back without a vector: vectors are recomputed, never resurrected.
        const deletion = (await store.history(deleted!.id)).at(-1)!;
        await store.undo(deletion.id, SUITE_ACTOR);
        expect((await store.vectors.missing({ limit: 10 })).map((memory) => memory.id).sort()).toEqual(
          [edited!.id, deleted!.id].sort(),
        );
        const hits = await store.vectors.search({ scopes: ['project:follow'], vector: vector(0, 1, 0, 0), limit: 10 });
        expect(hits.map((hit) => hit.memory.id)).toEqual([tagged!.id]);
      },
    },
    {
      name: 'vectors.put skips memories that are gone or changed since the vector was computed',
      async run({ store }) {
        await store.vectors.setSpace(SPACE);
        const [current, changed] = await store.createMany(
          ['current', 'changed'].map((name) => ({ scope: 'project:stale', name, content: `The ${name} memory.` })),
          SUITE_ACTOR,
        );
        const later = await store.update(changed!.id, { importance: 0.8 }, SUITE_ACTOR);
        const stored = await store.vectors.put([
          { id: current!.id, vector: vector(1, 0, 0, 0), updatedAt: current!.updatedAt },
          { id: changed!.id, vector: vector(0, 1, 0, 0), updatedAt: '2000-01-01T00:00:00.000Z' },
          { id: 'mem_does_not_exist', vector: vector(0, 0, 1, 0) },
        ]);
        expect(stored).toBe(1);
        expect(later.updatedAt).not.toBe('2000-01-01T00:00:00.000Z');
        expect(await store.vectors.counts()).toEqual({ stored: 1, missing: 1 });
      },
    },
    {
      name: 'hostile vector input is refused with INVALID_INPUT and changes nothing',
      async run({ store }) {
        const [memory] = await store.createMany(
          [{ scope: 'project:hostile', content: 'A memory for hostile vectors.' }],
          SUITE_ACTOR,
        );
        const id = memory!.id;
        await expectEngramError(() => store.vectors.put([{ id, vector: vector(1, 0, 0, 0) }]), 'INVALID_INPUT');
        const badSpaces: unknown[] = [
          null,
          {},
          { model: '', dimensions: 4 },
          { model: 'm', dimensions: 0 },
          { model: 'm', dimensions: 2.5 },
          { model: 'm', dimensions: -1 },
          { model: 'm', dimensions: 10_000_000 },
          { model: 'm', dimensions: Number.NaN },
          { model: 'x'.repeat(10_000), dimensions: 4 },
          { model: 42, dimensions: 4 },
        ];
        const problems: string[] = [];
        for (const space of badSpaces) {
          const outcome = await outcomeOf(() => store.vectors.setSpace(space as never));
          if (outcome !== 'INVALID_INPUT') problems.push(`vectors.setSpace ${describeInput({ space })}: ${outcome}`);
        }
        expect(await store.vectors.space()).toBeUndefined();
        await store.vectors.setSpace(SPACE);
        await store.vectors.put([{ id, vector: vector(0, 0, 0, 1) }]);
        const badEntries: unknown[] = [
          null,
          'vectors',
          [{ id, vector: [1, 0, 0, 0] }],
          [{ id, vector: vector(1, 0, 0) }],
          [{ id, vector: vector(1, 0, 0, 0, 0) }],
          [{ id, vector: vector(Number.NaN, 0, 0, 0) }],
          [{ id, vector: vector(Number.POSITIVE_INFINITY, 0, 0, 0) }],
          [{ id, vector: vector(0, 0, 0, 0) }],
          [
            { id, vector: vector(1, 0, 0, 0) },
            { id, vector: vector(0, 1, 0, 0) },
          ],
          [{ id: '', vector: vector(1, 0, 0, 0) }],
          [{ id, vector: vector(1, 0, 0, 0), updatedAt: 'yesterday' }],
          [{ vector: vector(1, 0, 0, 0) }],
        ];
        for (const entries of badEntries) {
          const outcome = await outcomeOf(() => store.vectors.put(entries as VectorEntry[]));
          if (outcome !== 'INVALID_INPUT')
            problems.push(`vectors.put ${describeInput({ entries: String(entries) })}: ${outcome}`);
        }
        const badSearches: unknown[] = [
          null,
          { scopes: ['project:hostile'], vector: vector(1, 0), limit: 5 },
          { scopes: ['project:hostile'], vector: [1, 0, 0, 0], limit: 5 },
          { scopes: ['project:hostile'], vector: vector(Number.NaN, 0, 0, 0), limit: 5 },
          { scopes: ['project:hostile'], vector: vector(1, 0, 0, 0), limit: -1 },
          { scopes: ['project:hostile'], vector: vector(1, 0, 0, 0), limit: 1.5 },
          { scopes: ['project:hostile'], vector: vector(1, 0, 0, 0), limit: 10_000_000 },
          { scopes: 'project:hostile', vector: vector(1, 0, 0, 0), limit: 5 },
          { scopes: ['project:'], vector: vector(1, 0, 0, 0), limit: 5 },
          { scopes: ['project:hostile'], vector: vector(1, 0, 0, 0), limit: 5, types: ['nonsense'] },
        ];
        for (const search of badSearches) {
          const outcome = await outcomeOf(() => store.vectors.search(search as VectorSearch));
          if (outcome !== 'INVALID_INPUT' && outcome !== 'INVALID_SCOPE')
            problems.push(`vectors.search ${describeInput({ search: String(search) })}: ${outcome}`);
        }
        for (const limit of [-1, 1.5, Number.NaN, '5']) {
          const outcome = await outcomeOf(() => store.vectors.missing({ limit } as never));
          if (outcome !== 'INVALID_INPUT') problems.push(`vectors.missing ${describeInput({ limit })}: ${outcome}`);
        }
        expect(problems).toEqual([]);
        const hits = await store.vectors.search({ scopes: ['project:hostile'], vector: vector(0, 0, 0, 1), limit: 5 });
        expect(hits.map((hit) => [hit.memory.id, Math.round(hit.similarity * 1000) / 1000])).toEqual([[id, 1]]);
        expect(await store.vectors.counts()).toEqual({ stored: 1, missing: 0 });
      },
    },
  ],
});
