import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SqliteMemoryStore } from '../../src/adapters/sqlite/sqlite-memory-store.js';
import { rankByRelevance } from '../../src/recall/ranking.js';
import type { Memory, NewMemory } from '../../src/memory/memory.js';
import { Engram } from '../../src/engram.js';
import { DEFAULT_SETTINGS, type Settings } from '../../src/kernel/settings.js';
import { memoryRecord } from '../support/memory-record.js';

const ACTOR = { actor: 'ranking-test' };
const DAY = 86_400_000;
const T0 = Date.parse('2026-03-01T12:00:00.000Z');
const at = (days: number): string => new Date(T0 + days * DAY).toISOString();

let directory: string;
let store: SqliteMemoryStore;
let clock: number;

function engramAt(days: number, settings: Settings = DEFAULT_SETTINGS): Engram {
  clock = T0 + days * DAY;
  return new Engram({
    store,
    settings,
    defaultScope: 'project:rank',
    readScopes: ['project:rank'],
    now: () => new Date(clock),
  });
}

/** Diversity off: identical memories are what it demotes, and some cases isolate another factor with them. */
const WITHOUT_DIVERSITY: Settings = {
  ...DEFAULT_SETTINGS,
  recall: { ...DEFAULT_SETTINGS.recall, duplicateSimilarity: 1 },
};

function memory(overrides: Partial<NewMemory> & { content: string }): NewMemory {
  return { scope: 'project:rank', createdAt: at(0), name: 'note', description: 'a note', ...overrides };
}

beforeEach(async () => {
  clock = T0;
  directory = await mkdtemp(join(tmpdir(), 'engram-ranking-'));
  store = new SqliteMemoryStore({ path: join(directory, 'memory.db'), now: () => new Date(clock) });
  await store.open();
});

afterEach(async () => {
  await store.close();
  await rm(directory, { recursive: true, force: true });
});

describe('ranking under an injected clock', () => {
  it('gives the same memories, order and scores for the same store, query and clock', async () => {
    await store.createMany(
      Array.from({ length: 40 }, (_, index) =>
        memory({
          content: `Deploy note ${index}: the ${index % 3 === 0 ? 'staging' : 'production'} deploy runs ${index % 2 === 0 ? 'nightly' : 'weekly'}.`,
          importance: (index % 5) / 5,
          createdAt: at(-index),
          lastAccessedAt: index % 4 === 0 ? at(-index / 2) : null,
        }),
      ),
      ACTOR,
    );
    const first = await engramAt(10).recall('when does the production deploy run?', {
      recordAccess: false,
      topK: 20,
      minScore: 0,
    });
    const second = await engramAt(10).recall('when does the production deploy run?', {
      recordAccess: false,
      topK: 20,
      minScore: 0,
    });
    expect(first.memories.length).toBeGreaterThan(5);
    expect(second.memories).toEqual(first.memories);

    // A later clock changes recency, so the scores move: the clock really is the one injected.
    const later = await engramAt(200).recall('when does the production deploy run?', {
      recordAccess: false,
      topK: 20,
      minScore: 0,
    });
    expect(later.memories.map((entry) => entry.parts.recency)).not.toEqual(
      first.memories.map((entry) => entry.parts.recency),
    );
  });

  it('ranks the same memories in the same order whatever order they were written in', async () => {
    const inputs = Array.from({ length: 12 }, (_, index) =>
      memory({
        id: `mem-${String(index).padStart(2, '0')}`,
        content: `Shared cache fact ${index % 4}.`,
        importance: 0.5,
      }),
    );
    await store.createMany(inputs, ACTOR);
    const forward = await engramAt(1).recall('shared cache', { recordAccess: false, topK: 12, minScore: 0 });

    const otherDirectory = await mkdtemp(join(tmpdir(), 'engram-ranking-'));
    const other = new SqliteMemoryStore({ path: join(otherDirectory, 'memory.db') });
    await other.open();
    try {
      await other.createMany([...inputs].reverse(), ACTOR);
      const reversed = await new Engram({
        store: other,
        readScopes: ['project:rank'],
        now: () => new Date(T0 + DAY),
      }).recall('shared cache', {
        recordAccess: false,
        topK: 12,
        minScore: 0,
      });
      expect(reversed.memories.map((entry) => entry.memory.id)).toEqual(
        forward.memories.map((entry) => entry.memory.id),
      );
      // Ties are broken by id, so equal scores still come out in one order.
      const tied = forward.memories
        .filter((entry) => entry.parts.score === forward.memories[0]!.parts.score)
        .map((entry) => entry.memory.id);
      expect(tied).toEqual([...tied].sort());
    } finally {
      await other.close();
      await rm(otherDirectory, { recursive: true, force: true });
    }
  });
});

describe('each ranking factor on its own', () => {
  it('recency halves in about 34 days since last access (0.98^34 ≈ 0.50)', async () => {
    const [created] = await store.createMany(
      [memory({ content: 'The billing service owns the invoices table.', lastAccessedAt: at(0) })],
      ACTOR,
    );
    const today = await engramAt(0).recall('billing invoices', { recordAccess: false, minScore: 0 });
    const month = await engramAt(34).recall('billing invoices', { recordAccess: false, minScore: 0 });
    expect(today.memories[0]!.memory.id).toBe(created!.id);
    expect(today.memories[0]!.parts.recency).toBe(1);
    expect(month.memories[0]!.parts.recency).toBeCloseTo(0.98 ** 34, 10);
    // The score weighs recency above a floor (recall.recencyFloor): floor + (1 − floor) × 0.98^34.
    const floor = DEFAULT_SETTINGS.recall.recencyFloor;
    const ratio = month.memories[0]!.parts.score / today.memories[0]!.parts.score;
    expect(ratio).toBeCloseTo(floor + (1 - floor) * 0.98 ** 34, 10);
    expect(ratio).toBeLessThan(1);
    // Relevance and importance did not move; only recency did.
    expect(month.memories[0]!.parts.relevance).toBe(today.memories[0]!.parts.relevance);
    expect(month.memories[0]!.parts.importanceWeight).toBe(today.memories[0]!.parts.importanceWeight);
  });

  it('counts recency from creation when a memory was never accessed, and a hit makes it recent again', async () => {
    await store.createMany([memory({ content: 'Logs ship to the central collector.', createdAt: at(-34) })], ACTOR);
    const engram = engramAt(0);
    const before = await engram.recall('logs collector', { minScore: 0 });
    expect(before.memories[0]!.parts.recency).toBeCloseTo(0.98 ** 34, 10);
    const after = await engram.recall('logs collector', { minScore: 0, recordAccess: false });
    expect(after.memories[0]!.parts.recency).toBe(1);
  });

  it('orders memories equal in relevance and recency by importance (weight 0.5 + importance)', async () => {
    const importances = [0.2, 0.9, 0, 0.5, 1];
    await store.createMany(
      importances.map((importance, index) =>
        memory({ id: `imp-${index}`, content: 'The staging database is refreshed every Sunday.', importance }),
      ),
      ACTOR,
    );
    const result = await engramAt(0, WITHOUT_DIVERSITY).recall('staging database refresh', {
      recordAccess: false,
      minScore: 0,
    });
    expect(result.memories.map((entry) => entry.memory.importance)).toEqual([1, 0.9, 0.5, 0.2, 0]);
    for (const entry of result.memories) {
      expect(entry.parts.relevance).toBe(1);
      expect(entry.parts.importanceWeight).toBeCloseTo(0.5 + entry.memory.importance, 12);
      expect(entry.parts.score).toBeCloseTo(entry.parts.importanceWeight / 1.5, 12);
    }
  });

  it('cuts at min_score (default 0.1) on the normalized score, inclusive', async () => {
    // The faint memory holds one of the two words, once in a long text, has importance 0 and is 300
    // days untouched: its score is its relative relevance × (floor + (1 − floor) × 0.98^300) × 0.5 ÷ 1.5.
    const [strong, faint] = await store.createMany(
      [
        memory({ content: 'The old VPN endpoint is vpn1.example.org.', importance: 1 }),
        memory({
          content: 'Someone once asked about a VPN in a long meeting about budgets, hiring, offices, travel and plans.',
          importance: 0,
          lastAccessedAt: at(-300),
        }),
      ],
      ACTOR,
    );
    const floor = DEFAULT_SETTINGS.recall.recencyFloor;
    const engram = engramAt(0);
    const all = await engram.recall('vpn endpoint', { recordAccess: false, minScore: 0 });
    expect(all.memories.map((entry) => entry.memory.id)).toEqual([strong!.id, faint!.id]);
    const faintParts = all.memories[1]!.parts;
    expect(faintParts.score).toBeCloseTo((faintParts.relevance * (floor + (1 - floor) * 0.98 ** 300) * 0.5) / 1.5, 12);
    expect(faintParts.score).toBeLessThan(DEFAULT_SETTINGS.recall.minScore);
    expect(
      (await engram.recall('vpn endpoint', { recordAccess: false })).memories.map((entry) => entry.memory.id),
    ).toEqual([strong!.id]);
    const score = faintParts.score;
    expect((await engram.recall('vpn endpoint', { recordAccess: false, minScore: score })).memories).toHaveLength(2);
    expect(
      (await engram.recall('vpn endpoint', { recordAccess: false, minScore: score + 1e-9 })).memories,
    ).toHaveLength(1);
  });
});

describe('rankByRelevance (pure)', () => {
  const base: Memory = memoryRecord({ id: 'a', scope: 'global', createdAt: at(0) });

  it('normalizes relevance to the best candidate and multiplies the three factors', () => {
    const ranked = rankByRelevance(
      [
        { memory: { ...base, id: 'half' }, relevance: 2 },
        { memory: { ...base, id: 'best', importance: 1 }, relevance: 4 },
      ],
      { now: at(0), recencyBase: 0.98 },
    );
    expect(ranked.map((entry) => entry.memory.id)).toEqual(['best', 'half']);
    expect(ranked[0]!.parts).toEqual({ relevance: 1, recency: 1, importanceWeight: 1.5, score: 1 });
    expect(ranked[1]!.parts.score).toBeCloseTo((0.5 * 1 * 1) / 1.5, 12);
  });

  it('is deterministic: the same input in any order gives the same output', () => {
    const candidates = Array.from({ length: 30 }, (_, index) => ({
      memory: {
        ...base,
        id: `m${String(index).padStart(2, '0')}`,
        importance: (index % 3) / 2,
        lastAccessedAt: at(-(index % 7)),
      },
      relevance: index % 4,
    }));
    const forward = rankByRelevance(candidates, { now: at(0), recencyBase: 0.98 });
    const backward = rankByRelevance([...candidates].reverse(), { now: at(0), recencyBase: 0.98 });
    expect(backward).toEqual(forward);
  });
});
