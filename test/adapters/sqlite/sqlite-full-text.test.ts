import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTemporaryFolder } from '../../support/per-test.js';
import { withSqliteStore } from '../../support/temporary-store.js';
import { SqliteMemoryStore } from '../../../src/adapters/sqlite/sqlite-memory-store.js';
import { porterStem } from '../../../src/recall/porter-stemmer.js';
import { closeSqlite, openSqlite } from '../../../src/adapters/sqlite/sqlite-driver.js';

const ACTOR = { actor: 'full-text-test' };

describe('SQLite full-text search on a large store', () => {
  let directory: string;
  let store: SqliteMemoryStore;

  beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), 'engram-fts-'));
    store = new SqliteMemoryStore({ path: join(directory, 'memory.db') });
    await store.open();
    // 3,000 memories that all say "deploy"; a handful also name a rare service.
    const memories = Array.from({ length: 3_000 }, (_, index) => ({
      scope: index % 2 === 0 ? 'project:a' : 'project:b',
      content: `Note ${index}: we deploy the service on weekdays${index % 500 === 0 ? ' through the quokka gateway' : ''}.`,
    }));
    await store.createMany(memories, ACTOR);
    await store.create(
      { scope: 'project:a', content: 'Deploy deploy deploy: the deploy checklist lives in the wiki.' },
      ACTOR,
    );
  });

  afterAll(async () => {
    await store.close();
    await rm(directory, { recursive: true, force: true });
  });

  it('ranks memories holding the rare term first when a common term is in the query too', async () => {
    const hits = await store.searchText({ scopes: ['project:a'], terms: ['deploy', 'quokka'], limit: 5 });
    expect(hits.length).toBeGreaterThan(0);
    expect(hits.every((hit) => hit.memory.content.includes('quokka'))).toBe(true);
    expect(hits.every((hit) => hit.memory.scope === 'project:a')).toBe(true);
  });

  it('never lets another project decide what this one recalls: too few rare hits in scope means the full query', async () => {
    await store.createMany(
      [
        ...Array.from({ length: 20 }, (_, index) => ({
          scope: 'project:small',
          content: `Kubernetes note ${index}: we deploy with helm.`,
        })),
        { scope: 'project:small', content: 'The zebrafish lab deploys on Fridays.' },
      ],
      ACTOR,
    );
    const hits = await store.searchText({
      scopes: ['project:small'],
      terms: ['deploy', 'zebrafish'],
      limit: 50,
      sufficientHits: 6,
    });
    expect(hits).toHaveLength(21);
    expect(hits[0]!.memory.content).toContain('zebrafish');
  });

  it('with sufficientHits, answers from the rare terms once enough memories in scope hold them', async () => {
    const hits = await store.searchText({
      scopes: ['project:a'],
      terms: ['deploy', 'quokka'],
      limit: 50,
      sufficientHits: 3,
    });
    expect(hits.length).toBeGreaterThanOrEqual(3);
    expect(hits.every((hit) => hit.memory.content.includes('quokka'))).toBe(true);
    const exact = await store.searchText({ scopes: ['project:a'], terms: ['deploy', 'quokka'], limit: 50 });
    expect(exact).toHaveLength(50);
  });

  it('in a small scope of a word found everywhere, leaves out archived, invalid and other-type memories as in a large one', async () => {
    // "deploy" is in 3,000 memories and project:tiny holds 6: matches are checked against the
    // scope's rowid set, not row by row, and must come out the same.
    const [kept, archived, invalid, decision, , otherScope] = await store.createMany(
      [
        { scope: 'project:tiny', type: 'reference', content: 'We deploy the tiny service by hand.' },
        { scope: 'project:tiny', type: 'reference', content: 'We deploy the tiny service from a laptop.' },
        { scope: 'project:tiny', type: 'reference', content: 'We deploy the tiny service on Sundays.' },
        { scope: 'project:tiny', type: 'procedure', content: 'We deploy the tiny service with a script.' },
        { scope: 'project:tiny', type: 'reference', content: 'The tiny service has no owner.' },
        { scope: 'project:tinier', type: 'reference', content: 'We deploy the tinier service nightly.' },
      ],
      ACTOR,
    );
    await store.archive(archived!.id, ACTOR);
    await store.invalidate(invalid!.id, {}, ACTOR);
    const ids = async (types?: Array<'reference' | 'procedure'>) =>
      (await store.searchText({ scopes: ['project:tiny'], terms: ['deploy'], limit: 50, ...(types && { types }) }))
        .map((hit) => hit.memory.id)
        .sort();
    expect(await ids()).toEqual([kept!.id, decision!.id].sort());
    expect(await ids(['reference'])).toEqual([kept!.id]);
    const both = await store.searchText({ scopes: ['project:tiny', 'project:tinier'], terms: ['deploy'], limit: 50 });
    expect(both.map((hit) => hit.memory.id).sort()).toEqual([kept!.id, decision!.id, otherScope!.id].sort());
  });

  it('falls back to the common terms when the rare ones match nothing in the asked scopes', async () => {
    await store.create({ scope: 'project:c', content: 'The zebra service is deprecated.' }, ACTOR);
    const hits = await store.searchText({
      scopes: ['project:a'],
      terms: ['deploy', 'zebra'],
      limit: 3,
      sufficientHits: 3,
    });
    expect(hits).toHaveLength(3);
    expect(hits[0]!.memory.content).toContain('checklist');
  });
});

describe('SQLite full-text search when the asked scopes hold most of the store', () => {
  let directory: string;
  let store: SqliteMemoryStore;

  beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), 'engram-fts-most-'));
    store = new SqliteMemoryStore({ path: join(directory, 'memory.db') });
    await store.open();
    // project:home holds 600 of 1,000 memories: the index ranks every match before rows are read.
    // project:away says "walk" four times a memory, so FTS5 ranks all of its memories first.
    await store.createMany(
      [
        ...Array.from({ length: 600 }, (_, index) => ({
          scope: 'project:home',
          type: index % 10 === 0 ? ('procedure' as const) : ('reference' as const),
          content: `Note ${index}: we walk the dog${index % 3 === 0 ? ' in the park' : ''} before breakfast.`,
        })),
        ...Array.from({ length: 400 }, (_, index) => ({
          scope: 'project:away',
          content: `Walk ${index}: walk, walk and walk again.`,
        })),
      ],
      ACTOR,
    );
  });

  afterAll(async () => {
    await store.close();
    await rm(directory, { recursive: true, force: true });
  });

  it('still fills the limit from the asked scopes when the best-ranked matches all lie outside them', async () => {
    const hits = await store.searchText({ scopes: ['project:home'], terms: ['walk'], limit: 60 });
    expect(hits).toHaveLength(60);
    expect(hits.every((hit) => hit.memory.scope === 'project:home')).toBe(true);
  });

  it('leaves out archived, invalid and other-type memories as the other plans do', async () => {
    const park = await store.searchText({ scopes: ['project:home'], terms: ['park'], limit: 1_000 });
    expect(park).toHaveLength(200);
    const [archived, invalid] = park.filter((hit) => hit.memory.type === 'reference');
    await store.archive(archived!.memory.id, ACTOR);
    await store.invalidate(invalid!.memory.id, {}, ACTOR);
    const search = async (types?: Array<'reference' | 'procedure'>) =>
      (
        await store.searchText({ scopes: ['project:home'], terms: ['park'], limit: 1_000, ...(types && { types }) })
      ).map((hit) => hit.memory);
    const all = await search();
    expect(all).toHaveLength(198);
    expect(all.map((memory) => memory.id)).not.toContain(archived!.memory.id);
    expect(all.map((memory) => memory.id)).not.toContain(invalid!.memory.id);
    const procedures = await search(['procedure']);
    expect(procedures).toHaveLength(20);
    expect(procedures.every((memory) => memory.type === 'procedure')).toBe(true);
    expect(await store.searchText({ scopes: ['project:away'], terms: ['park'], limit: 10 })).toEqual([]);
  });

  it('leaves out memories of other scopes that an earlier search in both read', async () => {
    const both = await store.searchText({ scopes: ['project:home', 'project:away'], terms: ['walk'], limit: 100 });
    expect(both.some((hit) => hit.memory.scope === 'project:away')).toBe(true);
    const home = await store.searchText({ scopes: ['project:home'], terms: ['walk'], limit: 100 });
    expect(home).toHaveLength(100);
    expect(home.every((hit) => hit.memory.scope === 'project:home')).toBe(true);
  });
});

describe('SQLite full-text search: memories it read before are read again once they change', () => {
  const directory = useTemporaryFolder('engram-fts-kept-');

  it('after recorded hits, an update on its own connection and one by another connection', async () => {
    const path = join(directory(), 'memory.db');
    const reader = new SqliteMemoryStore({ path });
    const writer = new SqliteMemoryStore({ path });
    await reader.open();
    await writer.open();
    try {
      const [recorded, other] = await reader.createMany(
        [
          { scope: 'project:a', content: 'The quokka gateway routes traffic.' },
          { scope: 'project:a', content: 'A quokka lives on the island.' },
        ],
        ACTOR,
      );
      const found = async () =>
        new Map(
          (await reader.searchText({ scopes: ['project:a'], terms: ['quokka'], limit: 5 })).map((hit) => [
            hit.memory.id,
            hit.memory,
          ]),
        );
      const first = await found();
      expect(first.get(recorded!.id)!.hitCount).toBe(0);
      // What a search hands out is shared by later searches: nobody can change it.
      expect(Object.isFrozen(first.get(recorded!.id))).toBe(true);

      const at = '2026-01-02T03:04:05.000Z';
      await reader.recordAccess([recorded!.id], at);
      const afterHits = await found();
      expect(afterHits.get(recorded!.id)).toMatchObject({ hitCount: 1, lastAccessedAt: at });
      expect(afterHits.get(other!.id)).toEqual(first.get(other!.id));
      expect(afterHits.get(recorded!.id)).toEqual(await reader.get(recorded!.id));

      await reader.update(recorded!.id, { content: 'The quokka gateway routes all traffic now.' }, ACTOR);
      expect((await found()).get(recorded!.id)!.content).toBe('The quokka gateway routes all traffic now.');

      await writer.update(other!.id, { content: 'Two quokkas live on the island.' }, ACTOR);
      expect((await found()).get(other!.id)!.content).toBe('Two quokkas live on the island.');
    } finally {
      await reader.close();
      await writer.close();
    }
  });
});

describe('porterStem', () => {
  it('gives the same token as SQLite FTS5 porter tokenizer, word by word', () => {
    const words =
      'caresses ponies ties caress cats feed agreed plastered bled motoring sing conflated troubled sized hopping tanned falling hissing fizzed failing filing happy sky relational conditional rational valenci hesitanci digitizer conformabli radicalli differentli vileli analogousli vietnamization predication operator feudalism decisiveness hopefulness callousness formaliti sensitiviti sensibiliti triplicate formative formalize electriciti electrical hopeful goodness revival allowance inference airliner gyroscopic adjustable defensible irritant replacement adjustment dependent adoption homologou communism activate angulariti homologous effective bowdlerize probate rate cease controll roll running runs generalizations oscillators abilities meetings yesterday skiing dying lying agreement university postgres databases preferences deployed'.split(
        ' ',
      );
    const db = openSqlite(':memory:');
    db.exec("CREATE VIRTUAL TABLE f USING fts5(a, tokenize = 'porter unicode61 remove_diacritics 2')");
    db.exec("CREATE VIRTUAL TABLE v USING fts5vocab(f, 'instance')");
    const insert = db.prepare('INSERT INTO f (rowid, a) VALUES (?, ?)');
    words.forEach((word, index) => insert.run(index + 1, word));
    const tokens = new Map(
      (db.prepare('SELECT doc, term FROM v').all() as Array<{ doc: number; term: string }>).map((row) => [
        row.doc,
        row.term,
      ]),
    );
    const mismatches = words.filter((word, index) => tokens.get(index + 1) !== porterStem(word));
    expect(mismatches).toEqual([]);
    closeSqlite(db);
  });
});

describe('SQLite full-text search: the memory count BM25 uses follows every write', () => {
  const directory = useTemporaryFolder('engram-fts-count-');

  const relevance = async (store: SqliteMemoryStore): Promise<number[]> =>
    (await store.searchText({ scopes: ['project:a'], terms: ['quokka'], limit: 5 })).map((hit) => hit.relevance);

  /** What a store opened afresh on the file scores: its count cannot be a stale one. */
  const fresh = (path: string): Promise<number[]> => withSqliteStore(path, relevance);

  it('counts again after a write by another connection, by its own connection, a delete, hits recorded after another write and a reopen', async () => {
    const path = join(directory(), 'memory.db');
    const reader = new SqliteMemoryStore({ path });
    const writer = new SqliteMemoryStore({ path });
    await reader.open();
    await writer.open();
    const filler = (count: number) =>
      Array.from({ length: count }, (_, index) => ({ scope: 'project:a', content: `Filler note ${index}.` }));
    await reader.createMany(
      [{ scope: 'project:a', content: 'The quokka gateway routes traffic.' }, ...filler(3)],
      ACTOR,
    );
    const before = await relevance(reader);
    expect(before).toEqual(await fresh(path));

    await writer.createMany(filler(40), ACTOR);
    const afterOther = await relevance(reader);
    expect(afterOther).toEqual(await fresh(path));
    expect(afterOther[0]).toBeGreaterThan(before[0]!);

    // Closing the fresh store checkpoints its WAL, which other connections see as a change:
    // searching once more counts after that, so only the reader's own writes follow.
    expect(await relevance(reader)).toEqual(afterOther);

    const own = await reader.createMany(filler(40), ACTOR);
    const afterOwn = await relevance(reader);
    expect(afterOwn).toEqual(await fresh(path));
    expect(afterOwn[0]).toBeGreaterThan(afterOther[0]!);
    expect(await relevance(reader)).toEqual(afterOwn);

    for (const memory of own) await reader.delete(memory.id, ACTOR);
    expect(await relevance(reader)).toEqual(afterOther);

    // More memories holding the searched word: its document count moves, not only the total.
    await writer.createMany([{ scope: 'project:b', content: 'A second quokka gateway.' }], ACTOR);
    const afterWord = await relevance(reader);
    expect(afterWord).toEqual(await fresh(path));
    expect(afterWord[0]).toBeLessThan(afterOther[0]!);
    expect(await relevance(reader)).toEqual(afterWord);
    await reader.createMany([{ scope: 'project:b', content: 'A third quokka gateway.' }], ACTOR);
    const afterOwnWord = await relevance(reader);
    expect(afterOwnWord).toEqual(await fresh(path));
    expect(afterOwnWord[0]).toBeLessThan(afterWord[0]!);

    // Recording hits keeps the counts only when nothing else wrote since they were made.
    const hitIds = (await reader.searchText({ scopes: ['project:a'], terms: ['quokka'], limit: 5 })).map(
      (hit) => hit.memory.id,
    );
    await reader.recordAccess(hitIds, new Date().toISOString());
    expect(await relevance(reader)).toEqual(afterOwnWord);
    await writer.createMany([{ scope: 'project:b', content: 'A fourth quokka gateway.' }], ACTOR);
    await reader.recordAccess(hitIds, new Date().toISOString());
    const afterHits = await relevance(reader);
    expect(afterHits).toEqual(await fresh(path));
    expect(afterHits[0]).toBeLessThan(afterOwnWord[0]!);

    await reader.close();
    await writer.createMany(filler(40), ACTOR);
    await reader.open();
    expect(await relevance(reader)).toEqual(await fresh(path));
    expect((await relevance(reader))[0]).toBeGreaterThan(afterHits[0]!);
    await reader.close();
    await writer.close();
  });
});
