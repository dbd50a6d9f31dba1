import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SqliteMemoryStore } from '../../src/adapters/sqlite/sqlite-memory-store.js';
import { fullTextTokens, scoreBm25 } from '../../src/recall/bm25-scoring.js';
import { queryTerms } from '../../src/recall/query-terms.js';
import { rankByRelevance } from '../../src/recall/ranking.js';
import { DEFAULT_SETTINGS } from '../../src/kernel/settings.js';
import { withWordForms } from '../../src/recall/word-forms.js';
import type { Memory } from '../../src/memory/memory.js';
import { Engram } from '../../src/engram.js';
import { closeSqlite, openSqlite } from '../../src/adapters/sqlite/sqlite-driver.js';
import { memoryRecord } from '../support/memory-record.js';

const stats = (documentCount: number, frequencies: Record<string, number>) => ({
  documentCount,
  documentFrequencies: new Map(Object.entries(frequencies)),
});

describe('full-text tokens', () => {
  it('are the tokens SQLite FTS5 (porter unicode61 remove_diacritics 2) indexes', () => {
    const text =
      "Caroline's café reopened in 2023: naïve résumés, running 5K races and don't-stop dancing — ÉCOLE Zürich!";
    const db = openSqlite(':memory:');
    db.exec(
      "CREATE VIRTUAL TABLE f USING fts5(t, tokenize = 'porter unicode61 remove_diacritics 2'); CREATE VIRTUAL TABLE v USING fts5vocab(f, 'instance')",
    );
    db.prepare('INSERT INTO f (t) VALUES (?)').run(text);
    const indexed = (db.prepare('SELECT term FROM v ORDER BY offset').all() as Array<{ term: string }>).map(
      (row) => row.term,
    );
    closeSqlite(db);
    expect(fullTextTokens(text)).toEqual(indexed);
  });
});

describe('scoreBm25', () => {
  const parameters = { k1: 1.2, b: 0.3 };

  it('scores 0 without a query term, and a rare term above a common one', () => {
    const scores = scoreBm25(
      ['the deploy runs nightly', 'postgres is the database', 'nothing here'],
      ['postgres', 'deploy'],
      stats(100, { postgr: 2, deploi: 60 }),
      parameters,
    );
    expect(scores[2]).toBe(0);
    expect(scores[1]).toBeGreaterThan(scores[0]!);
  });

  it('with b = 0 length does not matter; with b = 1 the shorter of two equal matches wins', () => {
    const documents = ['postgres backups', `postgres backups ${'and more words '.repeat(10)}`];
    const flat = scoreBm25(documents, ['postgres'], stats(10, { postgr: 2 }), { k1: 1.2, b: 0 });
    expect(flat[0]).toBeCloseTo(flat[1]!, 12);
    const full = scoreBm25(documents, ['postgres'], stats(10, { postgr: 2 }), { k1: 1.2, b: 1 });
    expect(full[0]).toBeGreaterThan(full[1]!);
  });

  it('with coverage, a memory holding more of the query outranks one that repeats a single rare word', () => {
    const documents = ['kafka kafka', 'the consumer retries', 'the kafka consumer retries'];
    const statistics = stats(1_000, { kafka: 5, consum: 40, retri: 40 });
    const terms = ['kafka', 'consumer', 'retries'];
    const plain = scoreBm25(documents, terms, statistics, { ...parameters, coverage: 0 });
    const covered = scoreBm25(documents, terms, statistics, { ...parameters, coverage: 1 });
    expect(plain[0]).toBeGreaterThan(plain[1]!);
    expect(covered[1]).toBeGreaterThan(covered[0]!);
    // The factor is the IDF share of the query a document holds; all of it leaves BM25 as it was.
    const idf = (n: number) => Math.log(1 + (1_000 - n + 0.5) / (n + 0.5));
    expect(covered[0]).toBeCloseTo(plain[0]! * (idf(5) / (idf(5) + 2 * idf(40))), 12);
    expect(covered[2]).toBeCloseTo(plain[2]!, 12);
    const squared = scoreBm25(documents, terms, statistics, { ...parameters, coverage: 2 });
    expect(squared[0]).toBeCloseTo(plain[0]! * (idf(5) / (idf(5) + 2 * idf(40))) ** 2, 12);
  });

  it('takes coverage from the settings when the parameters leave it out', () => {
    const documents = ['postgres backups', 'postgres replication lag', 'nightly backups'];
    const statistics = stats(50, { postgr: 2, backup: 2, replic: 1, lag: 1 });
    const terms = ['postgres', 'replication', 'lag'];
    expect(scoreBm25(documents, terms, statistics, parameters)).toEqual(
      scoreBm25(documents, terms, statistics, { ...parameters, coverage: DEFAULT_SETTINGS.recall.fullTextCoverage }),
    );
    expect(DEFAULT_SETTINGS.recall.fullTextCoverage).toBeGreaterThan(0);
  });

  it('counts each query term once and never goes negative for a term in every document', () => {
    const once = scoreBm25(['tabs tabs'], ['tabs'], stats(1, { tab: 1 }), parameters);
    const twice = scoreBm25(['tabs tabs'], ['tabs', 'Tabs', 'tab'], stats(1, { tab: 1 }), parameters);
    expect(twice).toEqual(once);
    expect(once[0]).toBeGreaterThan(0);
  });
});

describe('irregular word forms', () => {
  it('adds the other forms of irregular words after each query word, and nothing for regular or ambiguous ones', () => {
    expect(withWordForms(['bought', 'tank'])).toEqual(['bought', 'buy', 'tank']);
    expect(withWordForms(['Buying', 'children', 'buy'])).toEqual(['Buying', 'buy', 'bought', 'children', 'child']);
    expect(withWordForms(['write', 'written'])).toEqual(['write', 'wrote', 'written']);
    // Forms that are words of their own, stop-word verbs and "ate" (which stems to "at") stay alone.
    expect(withWordForms(['saw', 'left', 'found', 'rose', 'went', 'ate', 'postgres'])).toEqual([
      'saw',
      'left',
      'found',
      'rose',
      'went',
      'ate',
      'postgres',
    ]);
    expect(withWordForms([])).toEqual([]);
    // Ordinals also search their number: questions say "May 6th", memories "6 May 2023".
    expect(withWordForms(['may', '6th', '1st', '22nd', '03rd', 'fifth'])).toEqual([
      'may',
      '6th',
      '6',
      '1st',
      '1',
      '22nd',
      '22',
      '03rd',
      '3',
      'fifth',
    ]);
  });

  it('are one term to BM25: a memory that says "bought" matches "buy", with the forms’ document counts summed', () => {
    const documents = ['Nate bought a bigger tank', 'Nate will buy a tank', 'Nate feeds the turtles'];
    const statistics = stats(100, { bui: 3, bought: 2, tank: 10 });
    const scores = scoreBm25(documents, ['buy', 'bought', 'tank'], statistics, { k1: 1.2, b: 0.3, coverage: 0 });
    expect(scores[0]).toBeGreaterThan(0);
    expect(scores[0]).toBeCloseTo(scores[1]!, 12);
    expect(scores[2]).toBe(0);
    // One term of document frequency 3 + 2, not two terms.
    const idf = (n: number) => Math.log(1 + (100 - n + 0.5) / (n + 0.5));
    const alone = scoreBm25(['bought'], ['buy', 'bought'], statistics, { k1: 1.2, b: 0, coverage: 0 });
    expect(alone[0]).toBeCloseTo(idf(5), 12);
  });

  it('let recall find a memory that uses another form of the question’s verb', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'engram-forms-'));
    const store = new SqliteMemoryStore({ path: join(directory, 'memory.db') });
    try {
      await store.open();
      await store.createMany(
        [
          { scope: 'project:a', content: 'Nate bought a second turtle tank last spring.' },
          { scope: 'project:a', content: 'Joanna wrote a screenplay about sisters.' },
          { scope: 'project:a', content: 'The team writes release notes on Fridays.' },
        ],
        { actor: 'test' },
      );
      const engram = new Engram({ store, defaultScope: 'project:a', now: () => new Date('2026-01-01T00:00:00.000Z') });
      const bought = await engram.recall('What did Nate buy?', { recordAccess: false, minScore: 0 });
      expect(bought.terms).toEqual(['nate', 'buy', 'bought']);
      expect(bought.memories[0]!.memory.content).toMatch(/bought a second turtle tank/);
      const written = await engram.recall('Who has written a screenplay?', { recordAccess: false, minScore: 0 });
      expect(written.memories.map((entry) => entry.memory.content)).toContain(
        'Joanna wrote a screenplay about sisters.',
      );
    } finally {
      await store.close();
      await rm(directory, { recursive: true, force: true });
    }
  });
});

describe('query terms', () => {
  it('drops question words, possessives and contraction endings, keeps numbers', () => {
    expect(queryTerms("What's Nate's favorite dish from 2022?")).toEqual(['nate', 'favorite', 'dish', '2022']);
    expect(queryTerms("Why didn't the build run? I can't see it and won't guess")).toEqual([
      'build',
      'run',
      'see',
      'guess',
    ]);
    expect(queryTerms('who am I')).toEqual(['who', 'am', 'i']);
  });

  it('keeps "may" when it is a month beside a number, and drops it as a verb', () => {
    expect(queryTerms('On May 6th, which movie did I watch?')).toEqual(['may', '6th', 'movie', 'watch']);
    expect(queryTerms('What happened on 8 May 2023?')).toEqual(['happened', '8', 'may', '2023']);
    expect(queryTerms('May I ask what movie you may like?')).toEqual(['ask', 'movie']);
  });
});

describe('recency floor', () => {
  const base: Memory = memoryRecord({
    id: 'x',
    name: 'n',
    description: 'd',
    content: 'c',
    createdAt: '2025-01-01T00:00:00.000Z',
  });
  const now = '2026-01-01T00:00:00.000Z';
  const candidates = [
    { memory: { ...base, id: 'old-exact' }, relevance: 10 },
    { memory: { ...base, id: 'fresh-partial', createdAt: now }, relevance: 4 },
  ];

  it('without a floor, a year of age buries the best match; with one, relevance decides', () => {
    expect(rankByRelevance(candidates, { now, recencyBase: 0.98 }).map((entry) => entry.memory.id)).toEqual([
      'fresh-partial',
      'old-exact',
    ]);
    const floored = rankByRelevance(candidates, { now, recencyBase: 0.98, recencyFloor: 0.5 });
    expect(floored.map((entry) => entry.memory.id)).toEqual(['old-exact', 'fresh-partial']);
    // The recency factor itself is still 0.98^days; only its weight in the score has a floor.
    expect(floored[0]!.parts.recency).toBeCloseTo(0.98 ** 365, 12);
    expect(floored[0]!.parts.score).toBeCloseTo((1 * (0.5 + 0.5 * 0.98 ** 365) * 1) / 1.5, 12);
  });

  it('keeps a half-year-old memory of default importance recallable at default settings', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'engram-floor-'));
    const store = new SqliteMemoryStore({ path: join(directory, 'memory.db') });
    try {
      await store.open();
      await store.create(
        {
          scope: 'project:a',
          content: 'The production database is PostgreSQL 15.',
          createdAt: '2025-07-01T00:00:00.000Z',
        },
        { actor: 'test' },
      );
      const engram = new Engram({ store, defaultScope: 'project:a', now: () => new Date(now) });
      const result = await engram.recall('which database is in production?', { recordAccess: false });
      expect(result.memories).toHaveLength(1);
      expect(result.memories[0]!.parts.score).toBeGreaterThanOrEqual(0.25);
    } finally {
      await store.close();
      await rm(directory, { recursive: true, force: true });
    }
  });
});

describe('SqliteMemoryStore full-text options', () => {
  it('refuses BM25 parameters out of range before any I/O', () => {
    expect(() => new SqliteMemoryStore({ path: '/nonexistent/x.db', fullText: { k1: 1.2, b: 2 } })).toThrow(
      /b from 0 to 1/,
    );
    expect(() => new SqliteMemoryStore({ path: '/nonexistent/x.db', fullText: { k1: -1, b: 0.3 } })).toThrow(
      /k1 from 0 to 100/,
    );
    expect(() => new SqliteMemoryStore({ path: '/nonexistent/x.db', fullText: { k1: Number.NaN, b: 0.3 } })).toThrow(
      /Invalid full-text/,
    );
    for (const coverage of [-1, 4.5, Number.NaN, Number.POSITIVE_INFINITY, '1' as unknown as number]) {
      expect(
        () => new SqliteMemoryStore({ path: '/nonexistent/x.db', fullText: { k1: 1.2, b: 0.3, coverage } }),
        String(coverage),
      ).toThrow(/recall\.fullTextCoverage/);
    }
  });

  it('ranks a detailed memory that holds the rare query words above a short one that repeats a common word', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'engram-bm25-'));
    const store = new SqliteMemoryStore({ path: join(directory, 'memory.db') });
    try {
      await store.open();
      const filler = Array.from({ length: 30 }, (_, index) => ({
        scope: 'project:a',
        content: `Team note ${index}: the team meets on Mondays.`,
      }));
      await store.createMany(filler, { actor: 'test' });
      const [detailed] = await store.createMany(
        [
          {
            scope: 'project:a',
            content:
              'The team moved the nightly Kafka consumer to the ingest cluster after the outage, and the consumer now retries with backoff before paging anyone on call.',
          },
        ],
        { actor: 'test' },
      );
      const hits = await store.searchText({ scopes: ['project:a'], terms: ['team', 'kafka', 'consumer'], limit: 5 });
      expect(hits[0]!.memory.id).toBe(detailed!.id);
      expect(hits).toHaveLength(5);
    } finally {
      await store.close();
      await rm(directory, { recursive: true, force: true });
    }
  });
});
