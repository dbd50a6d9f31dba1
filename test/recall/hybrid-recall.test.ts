import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { OpenAiCompatibleEmbedder } from '../../src/adapters/embedding/openai-compatible-embedder.js';
import { SqliteMemoryStore } from '../../src/adapters/sqlite/sqlite-memory-store.js';
import type { Scope } from '../../src/memory/scope.js';
import { DEFAULT_SETTINGS, type Settings } from '../../src/kernel/settings.js';
import { Engram } from '../../src/engram.js';
import {
  embeddingsResponseBody,
  startEmbeddingsServer,
  type EmbeddingsServer,
  type EmbeddingsServerOptions,
} from '../../src/testing/index.js';
import { createRandomSource } from '../../src/testing/store-suite-support.js';
import { fuseByWeight } from '../../src/recall/rank-fusion.js';
import { memoryRecord, recallHit } from '../support/memory-record.js';

const DIMENSIONS = 32;
const NOW = new Date('2024-06-01T12:00:00.000Z');
const cleanups: Array<() => Promise<void>> = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function openStore(): Promise<SqliteMemoryStore> {
  const directory = await mkdtemp(join(tmpdir(), 'engram-hybrid-'));
  const store = new SqliteMemoryStore({ path: join(directory, 'memory.db'), now: () => NOW });
  await store.open();
  cleanups.push(async () => {
    await store.close();
    await rm(directory, { recursive: true, force: true });
  });
  return store;
}

async function startServer(options: EmbeddingsServerOptions = {}): Promise<EmbeddingsServer> {
  const server = await startEmbeddingsServer({ dimensions: DIMENSIONS, ...options });
  cleanups.push(() => server.close());
  return server;
}

function embedderFor(server: EmbeddingsServer, model = 'hashed-words'): OpenAiCompatibleEmbedder {
  return new OpenAiCompatibleEmbedder({ baseUrl: server.baseUrl, model, maxRetries: 0 });
}

function engramFor(
  store: SqliteMemoryStore,
  embedder?: OpenAiCompatibleEmbedder,
  warnings: string[] = [],
  settings: Settings = DEFAULT_SETTINGS,
): Engram {
  return new Engram({
    store,
    settings,
    defaultScope: 'project:hybrid',
    now: () => NOW,
    onWarning: (warning) => warnings.push(warning),
    ...(embedder && { embedder }),
  });
}

const inputTexts = (server: EmbeddingsServer): string[] =>
  server.requests.flatMap((request) => (request.body as { input: string[] }).input);

describe('vectors on write', () => {
  it('remember stores a vector computed by the embedder; update recomputes it from the new text', async () => {
    const store = await openStore();
    const server = await startServer();
    const engram = engramFor(store, embedderFor(server));
    const memory = await engram.remember({ content: 'The user deploys with ArgoCD on Fridays.', name: 'deploys' });
    expect(await store.vectors.space()).toEqual({ model: 'hashed-words', dimensions: DIMENSIONS });
    expect(await store.vectors.counts()).toEqual({ stored: 1, missing: 0 });
    expect(inputTexts(server).some((text) => text.includes('ArgoCD on Fridays'))).toBe(true);

    await engram.update(memory.id, { content: 'The user deploys with Flux on Mondays.' });
    expect(await store.vectors.counts()).toEqual({ stored: 1, missing: 0 });
    expect(inputTexts(server).at(-1)).toContain('Flux on Mondays');
    const [hit] = await store.vectors.search({
      scopes: ['project:hybrid'],
      vector: (await embedderFor(server).embed([inputTexts(server).at(-1)!]))[0]!,
      limit: 1,
    });
    expect(hit!.similarity).toBeCloseTo(1, 5);
  });

  it('an embedder failure never loses the write: the memory is stored without a vector, and reindex fills it in', async () => {
    const store = await openStore();
    const server = await startServer({ respond: () => ({ status: 503, body: { error: 'loading model' } }) });
    const warnings: string[] = [];
    const engram = engramFor(store, embedderFor(server), warnings);
    const memory = await engram.remember({ content: 'Integration tests use the real database, no mocks.' });
    expect(await store.get(memory.id)).toEqual(memory);
    expect(await store.vectors.counts()).toEqual({ stored: 0, missing: 1 });
    await engram.update(memory.id, { content: 'Integration tests use the real Postgres database, no mocks.' });
    expect(
      warnings.some((warning) => warning.startsWith('embedding-failed') && warning.includes('engram reindex')),
    ).toBe(true);

    const healthy = await startServer();
    const report = await engramFor(store, embedderFor(healthy)).reindex();
    expect(report).toMatchObject({
      model: 'hashed-words',
      dimensions: DIMENSIONS,
      embedded: 1,
      skipped: 0,
      total: 1,
      spaceChanged: false,
    });
    expect(await store.vectors.counts()).toEqual({ stored: 1, missing: 0 });
  });

  it('undo of a delete brings the memory back and recomputes its vector', async () => {
    const store = await openStore();
    const server = await startServer();
    const engram = engramFor(store, embedderFor(server));
    const memory = await engram.remember({ content: 'Pipeline bugs are tracked in Linear project INGEST.' });
    await engram.forget(memory.id, { hard: true });
    expect(await store.vectors.counts()).toEqual({ stored: 0, missing: 0 });
    const deletion = (await engram.history(memory.id)).at(-1)!;
    await engram.undo(deletion.id);
    expect(await store.vectors.counts()).toEqual({ stored: 1, missing: 0 });
  });
});

describe('engram reindex (library)', () => {
  it('backfills memories written before an embedder existed, in batches, and a rerun has nothing to do', async () => {
    const store = await openStore();
    const plain = engramFor(store);
    for (let index = 0; index < 7; index += 1)
      await plain.remember({
        content: `Fact ${index}: the service listens on port 80${index}.`,
        name: `fact-${index}`,
      });
    expect(await store.vectors.counts()).toEqual({ stored: 0, missing: 7 });
    const server = await startServer();
    const progress: Array<[number, number]> = [];
    const report = await engramFor(store, embedderFor(server)).reindex({
      batchSize: 3,
      onProgress: ({ done, total }) => progress.push([done, total]),
    });
    expect(report).toMatchObject({
      embedded: 7,
      total: 7,
      skipped: 0,
      dropped: 0,
      spaceChanged: false,
      previousSpace: undefined,
    });
    expect(progress).toEqual([
      [0, 7],
      [3, 7],
      [6, 7],
      [7, 7],
    ]);
    // One probe for the vector length, then batches of 3, 3 and 1.
    expect(server.requests.map((request) => (request.body as { input: string[] }).input.length)).toEqual([1, 3, 3, 1]);
    // The text embedded is name, description and content.
    expect(inputTexts(server)[1]).toContain('fact 0');
    expect(inputTexts(server)[1]).toContain('port 800');
    expect(await store.vectors.counts()).toEqual({ stored: 7, missing: 0 });
    expect(await engramFor(store, embedderFor(server)).reindex()).toMatchObject({ embedded: 0, total: 0 });
  });

  it('a different model or vector length re-embeds everything instead of mixing vector spaces', async () => {
    const store = await openStore();
    const first = await startServer();
    const engram = engramFor(store, embedderFor(first, 'model-a'));
    for (let index = 0; index < 4; index += 1)
      await engram.remember({ content: `Unrelated fact ${index} about topic${index}.` });
    expect(await store.vectors.space()).toEqual({ model: 'model-a', dimensions: DIMENSIONS });

    // A new model: recall ignores the old vectors (and says so) until reindex.
    const second = await startServer({ dimensions: 16 });
    const switched = engramFor(store, embedderFor(second, 'model-b'));
    const before = await switched.recall('topic1', { recordAccess: false });
    expect(before.warnings).toEqual(['vector-space-differs']);
    expect(before.memories.map((entry) => entry.memory.content)).toEqual(['Unrelated fact 1 about topic1.']);
    const report = await switched.reindex();
    expect(report).toMatchObject({
      model: 'model-b',
      dimensions: 16,
      spaceChanged: true,
      dropped: 4,
      embedded: 4,
      previousSpace: { model: 'model-a', dimensions: DIMENSIONS },
    });
    expect(await store.vectors.space()).toEqual({ model: 'model-b', dimensions: 16 });
    expect((await switched.recall('topic1', { recordAccess: false })).warnings).toEqual([]);
  });

  it('refuses to reindex without an embedder', async () => {
    const store = await openStore();
    await expect(engramFor(store).reindex()).rejects.toMatchObject({ code: 'CONFIG_INVALID' });
  });
});

describe('hybrid recall', () => {
  const SYNONYMS = { automobile: 'car', vehicle: 'car', sedan: 'car' };
  const FACTS = [
    'The user drives an automobile to the office every day.',
    'Integration tests use the real database, no mocks.',
    'Deploys go through ArgoCD with a manual approval step.',
    'The user prefers tabs over spaces in every language.',
    'Pipeline bugs are tracked in Linear project INGEST.',
    'The staging cluster runs kubernetes 1.29 on bare metal.',
  ];

  it('finds a memory by meaning that full-text misses, and shows both components of the fused relevance', async () => {
    const store = await openStore();
    const server = await startServer({ synonyms: SYNONYMS });
    const engram = engramFor(store, embedderFor(server));
    for (const content of FACTS) await engram.remember({ content });

    const textOnly = await engramFor(store).recall('which car do I have?', { recordAccess: false });
    expect(textOnly.memories).toEqual([]);
    expect(textOnly.warnings).toEqual(['vector-search-unavailable']);

    const hybrid = await engram.recall('which car do I have?', { recordAccess: false });
    expect(hybrid.warnings).toEqual([]);
    expect(hybrid.memories[0]!.memory.content).toBe(FACTS[0]);
    expect(hybrid.memories[0]!.parts.vector).toMatchObject({ rank: 1 });
    expect(hybrid.memories[0]!.parts.vector!.similarity).toBeGreaterThan(0.3);
    expect(hybrid.memories[0]!.parts.text).toBeUndefined();

    const both = await engram.recall('kubernetes cluster', { recordAccess: false });
    const top = both.memories[0]!;
    expect(top.memory.content).toBe(FACTS[5]);
    expect(top.parts.text).toEqual({ rank: 1, relevance: 1 });
    expect(top.parts.vector?.rank).toBe(1);
    expect(top.parts.relevance).toBe(1);
    for (const entry of both.memories) {
      expect(entry.parts.relevance).toBeGreaterThan(0);
      expect(entry.parts.relevance).toBeLessThanOrEqual(1);
    }
  });

  it('still finds what full-text finds when the embedder answers junk, fails or is slow', async () => {
    const store = await openStore();
    const honest = await startServer();
    const writer = engramFor(store, embedderFor(honest));
    for (const content of FACTS) await writer.remember({ content });
    for (let index = 0; index < 40; index += 1)
      await writer.remember({ content: `Filler memory ${index} about subject${index}.` });

    const random = createRandomSource(7);
    const junk = await startServer({
      respond: (request) => {
        const input = (request.body as { input: string[] }).input;
        return {
          body: embeddingsResponseBody(
            input.map(() => Array.from({ length: DIMENSIONS }, () => random.next() - 0.5)),
            'hashed-words',
          ),
        };
      },
    });
    for (const query of ['kubernetes cluster', 'where are pipeline bugs tracked?', 'tabs or spaces']) {
      const result = await engramFor(store, embedderFor(junk)).recall(query, { recordAccess: false });
      const expected = (await engramFor(store).recall(query, { recordAccess: false })).memories[0]!.memory.id;
      expect(
        result.memories.map((entry) => entry.memory.id),
        query,
      ).toContain(expected);
    }

    const failing = await startServer({ respond: () => ({ status: 500, body: { error: 'boom' } }) });
    const failed = await engramFor(store, embedderFor(failing)).recall('kubernetes cluster', { recordAccess: false });
    expect(failed.warnings).toEqual(['embedding-failed']);
    expect(failed.memories[0]!.memory.content).toBe(FACTS[5]);

    const slow = await startServer({ respond: () => ({ delayMs: 2_000 }) });
    const settings = { ...DEFAULT_SETTINGS, embedding: { ...DEFAULT_SETTINGS.embedding, queryTimeoutMs: 100 } };
    const timedOut = await engramFor(store, embedderFor(slow), [], settings).recall('kubernetes cluster', {
      recordAccess: false,
    });
    expect(timedOut.warnings).toEqual(['embedding-failed']);
    expect(timedOut.memories[0]!.memory.content).toBe(FACTS[5]);
  });

  it('an embedder that disagrees cannot push full text’s clear best match down; embedding.fusion reciprocal-rank can', async () => {
    const store = await openStore();
    const writer = engramFor(store);
    const answer = await writer.remember({ content: 'The staging cluster runs kubernetes 1.29 on bare metal.' });
    for (let index = 0; index < 12; index += 1)
      await writer.remember({ content: `Note ${index}: a cluster of ideas for the offsite, topic ${index}.` });
    const question = 'which kubernetes version does the staging cluster run?';
    // The embedder puts every note next to the question and the answer at right angles to it.
    const axis = (index: number, noise = 0): number[] =>
      Array.from({ length: DIMENSIONS }, (_, at) => (at === index ? 1 : 0) + (at === 2 ? noise : 0));
    const server = await startServer({
      respond: (request) => ({
        body: embeddingsResponseBody(
          (request.body as { input: string[] }).input.map((input, at) =>
            input === question ? axis(0) : input.includes('kubernetes') ? axis(1) : axis(0, 0.05 * (at + 1)),
          ),
          'hashed-words',
        ),
      }),
    });
    const embedder = embedderFor(server);
    await engramFor(store, embedder).reindex();

    const textOnly = await engramFor(store).recall(question, { recordAccess: false });
    expect(textOnly.memories[0]!.memory.id).toBe(answer.id);
    const fused = await engramFor(store, embedder).recall(question, { recordAccess: false });
    expect(fused.warnings).toEqual([]);
    expect(fused.memories[0]!.memory.id).toBe(answer.id);
    expect(fused.memories[0]!.parts.vector!.rank).toBe(13);
    expect(fused.memories.slice(1).every((entry) => entry.parts.vector!.rank < 13)).toBe(true);

    const settings = {
      ...DEFAULT_SETTINGS,
      embedding: { ...DEFAULT_SETTINGS.embedding, fusion: 'reciprocal-rank' as const },
    };
    const reciprocal = await engramFor(store, embedder, [], settings).recall(question, { recordAccess: false });
    expect(reciprocal.memories[0]!.memory.id).not.toBe(answer.id);
  });

  it('a memory found by meaning alone is not cut by min_score when it is among the vectors’ first three; what they rank below is', async () => {
    const store = await openStore();
    const old = '2024-05-01T12:00:00.000Z';
    await store.createMany(
      [
        { scope: 'project:hybrid', content: 'An automobile, a blue Volvo.', createdAt: old },
        { scope: 'project:hybrid', content: 'The car park at the office closes at 8pm.' },
        { scope: 'project:hybrid', content: 'Car sharing is cheaper than a second car for the team.' },
        ...Array.from({ length: 15 }, (_, index) => ({
          scope: 'project:hybrid' as const,
          content: `Filler memory ${index} about subject${index} and topic${index}.`,
          createdAt: old,
        })),
      ],
      { actor: 'test' },
    );
    const server = await startServer({ synonyms: SYNONYMS });
    const embedder = embedderFor(server);
    await engramFor(store, embedder).reindex();
    const contents = async (settings: Settings = DEFAULT_SETTINGS): Promise<string[]> =>
      (
        await engramFor(store, embedder, [], settings).recall('which car do I have?', { recordAccess: false })
      ).memories.map((entry) => entry.memory.content);
    // The two full-text matches first, then the answer found by meaning; the fillers the vectors rank
    // below their first three are cut by min_score as before.
    expect(await contents()).toEqual([
      'Car sharing is cheaper than a second car for the team.',
      'The car park at the office closes at 8pm.',
      'An automobile, a blue Volvo.',
    ]);

    // Weight 0 is full text alone: the question is not sent to the embedder.
    const sent = server.requests.length;
    const zero = { ...DEFAULT_SETTINGS, embedding: { ...DEFAULT_SETTINGS.embedding, fusionWeight: 0 } };
    const alone = await contents(zero);
    expect(alone).toEqual(
      (await engramFor(store).recall('which car do I have?', { recordAccess: false })).memories.map(
        (entry) => entry.memory.content,
      ),
    );
    expect(server.requests).toHaveLength(sent);
  });

  it('weighted fusion: a memory further ahead in full text than weight ÷ (1 − weight) stays ahead, whatever the vectors say (random rankings)', () => {
    const random = createRandomSource(11);
    const problems: string[] = [];
    for (let round = 0; round < 300; round += 1) {
      const weight = random.sample([0, 0.05, 0.15, 0.3, 0.45, 0.5], 1)[0]!;
      const ids = Array.from({ length: random.integer(2, 30) }, (_, index) => `m${index}`);
      const text = ids
        .filter(() => random.next() < 0.7)
        .map((id) => recallHit(random.next() * 10, { id }))
        .sort((a, b) => b.relevance - a.relevance);
      const vector = ids
        .filter(() => random.next() < 0.7)
        .map((id) => ({ memory: memoryRecord({ id }), similarity: random.next() * 2 - 1 }))
        .sort((a, b) => b.similarity - a.similarity);
      const fused = fuseByWeight(text, vector, weight);
      const best = Math.max(0, ...text.map((hit) => hit.relevance));
      const textOf = (id: string): number => (text.find((hit) => hit.memory.id === id)?.relevance ?? 0) / best;
      for (const a of fused)
        for (const b of fused) {
          const ahead = textOf(a.memory.id) - textOf(b.memory.id);
          if (weight < 1 && ahead > weight / (1 - weight) + 1e-9 && !(a.relevance > b.relevance))
            problems.push(
              `round ${round}, weight ${weight}: ${a.memory.id} is ${ahead.toFixed(3)} ahead in full text but fused ${a.relevance} ≤ ${b.relevance}`,
            );
        }
      if (fused.length !== new Set([...text, ...vector].map((hit) => hit.memory.id)).size)
        problems.push(`round ${round}: the union was not kept`);
    }
    expect(problems).toEqual([]);
  });

  it('never returns a memory outside the read scopes, on vector search or hybrid recall (random queries)', async () => {
    const store = await openStore();
    const server = await startServer();
    const embedder = embedderFor(server);
    const scopes: Scope[] = [
      'global',
      'project:app',
      'project:app2',
      'project:App',
      'project:a_b',
      'project:axb',
      'session:1',
      'user:alice',
    ];
    const words = [
      'kestrel',
      'basalt',
      'quinoa',
      'marimba',
      'tundra',
      'zephyr',
      'obsidian',
      'lantern',
      'walrus',
      'saffron',
    ];
    const random = createRandomSource(42);
    const engram = engramFor(store, embedder);
    for (const scope of scopes) {
      for (let index = 0; index < 8; index += 1) {
        await engram.remember(
          { scope, content: `${random.sample(words, 3).join(' ')} note ${index} in ${scope}.` },
          { actor: 'test' },
        );
      }
    }
    expect((await store.vectors.counts()).missing).toBe(0);
    const problems: string[] = [];
    for (let query = 0; query < 150; query += 1) {
      const readScopes = random.sample([...scopes, 'project:empty'], random.integer(1, 3));
      const text = random.sample(words, random.integer(1, 3)).join(' ');
      const result = await engram.recall(text, { scopes: readScopes, topK: 50, minScore: 0, recordAccess: false });
      const leak = result.memories.find((entry) => !readScopes.includes(entry.memory.scope));
      if (leak)
        problems.push(`recall ${JSON.stringify(text)} in ${JSON.stringify(readScopes)} returned ${leak.memory.scope}`);
      const [vector] = await embedder.embed([text]);
      const hits = await store.vectors.search({ scopes: readScopes, vector: vector!, limit: 100 });
      const vectorLeak = hits.find((hit) => !readScopes.includes(hit.memory.scope));
      if (vectorLeak)
        problems.push(`vectors.search in ${JSON.stringify(readScopes)} returned ${vectorLeak.memory.scope}`);
      const inScope = (await store.stats(readScopes)).active;
      if (hits.length !== inScope)
        problems.push(`vectors.search in ${JSON.stringify(readScopes)} found ${hits.length} of ${inScope}`);
    }
    expect(problems).toEqual([]);
  });
});
