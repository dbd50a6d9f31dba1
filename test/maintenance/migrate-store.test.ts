import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteMemoryStore } from '../../src/adapters/sqlite/sqlite-memory-store.js';
import { copyStore, type CopyProgress } from '../../src/maintenance/copy-store.js';
import { summarizeStore } from '../../src/maintenance/store-checksum.js';
import type { MemoryStore } from '../../src/contracts/memory-store.js';
import { countsOf, expectSameStores, NO_RECORDS, readAll, SEED_SPACE, seedRichStore } from '../support/migrate-seed.js';
import { expectEngramError } from '../support/expect-engram-error.js';
import { useTemporaryFolders } from '../support/per-test.js';

const ACTOR = { actor: 'migrate-test' };
const opened: MemoryStore[] = [];
const temporaryFolder = useTemporaryFolders('engram-migrate-');

async function sqliteStore(name = 'memory.db'): Promise<SqliteMemoryStore> {
  const store = new SqliteMemoryStore({ path: join(await temporaryFolder(), name) });
  await store.open();
  opened.push(store);
  return store;
}

afterEach(async () => {
  for (const store of opened.splice(0)) await store.close();
});

/** Everything a refused copy must leave unchanged in a store. */
async function snapshot(store: SqliteMemoryStore): Promise<unknown> {
  return {
    records: await readAll(store),
    space: await store.vectors.space(),
    stats: await store.stats(),
    jobs: await store.jobs.counts(),
  };
}

describe('copyStore between two SQLite stores', () => {
  it('copies memories, history, vectors, jobs and checkpoints exactly, there and back, and reports equal counts and checksums', async () => {
    const source = await sqliteStore();
    await seedRichStore(source, 1_500);
    const middle = await sqliteStore();
    const phases: CopyProgress[] = [];
    const report = await copyStore(source, middle, { pageSize: 200, onProgress: (progress) => phases.push(progress) });

    const records = await readAll(source);
    expect(records.memories.length).toBeGreaterThan(1_400);
    expect(records.history.length).toBeGreaterThan(records.memories.length);
    expect(records.vectors.length).toBeGreaterThan(900);
    expect(
      records.memories.some((memory) => memory.archived) &&
        records.memories.some((memory) => memory.invalidAt !== null),
    ).toBe(true);
    expect(
      records.history.some((entry) => entry.undoOf !== null) &&
        records.history.some((entry) => entry.action === 'delete'),
    ).toBe(true);
    expect(new Set(records.jobs.map((job) => job.state))).toEqual(new Set(['pending', 'running', 'done', 'failed']));
    expect(records.checkpoints.length).toBeGreaterThan(5);
    expect(report).toMatchObject({
      resumed: false,
      written: countsOf(records),
      skipped: NO_RECORDS,
      vectorSpace: SEED_SPACE,
    });
    expect(report.target).toEqual(report.source);
    expect(report.source.counts).toEqual(countsOf(records));
    expect(report.source.checksums.memories).toMatch(/^sha256:[0-9a-f]{64}$/);
    await expectSameStores(source, middle);

    // Progress: each phase in order, each ending at its total.
    expect([...new Set(phases.map((progress) => progress.phase))]).toEqual([
      'memories',
      'history',
      'vectors',
      'jobs',
      'checkpoints',
      'verifying',
    ]);
    const lastOf = (phase: string): CopyProgress => phases.filter((progress) => progress.phase === phase).at(-1)!;
    expect(lastOf('memories')).toEqual({
      phase: 'memories',
      done: records.memories.length,
      total: records.memories.length,
    });
    expect(lastOf('vectors').done).toBe(records.vectors.length);
    expect(lastOf('verifying').done).toBe(lastOf('verifying').total);

    const back = await sqliteStore();
    const again = await copyStore(middle, back, { pageSize: 10_000 });
    expect(again.source).toEqual(report.source);
    await expectSameStores(source, back);
    expect(again).toMatchObject({ resumed: false, alreadyComplete: false });

    // A finished copy run again writes nothing and says so: it did not resume anything.
    const repeated = await copyStore(middle, back, { pageSize: 7 });
    expect(repeated).toMatchObject({ resumed: false, alreadyComplete: true, written: NO_RECORDS });
    expect(repeated.skipped).toEqual(again.written);

    // The copies work as stores: search, vectors and undo behave as in the source.
    const hits = async (store: MemoryStore): Promise<string[]> =>
      (await store.searchText({ scopes: ['project:alpha', 'global'], terms: ['word42', 'updated'], limit: 50 }))
        .map((hit) => `${hit.memory.id} ${hit.relevance.toFixed(9)}`)
        .sort();
    expect(await hits(back)).toEqual(await hits(source));
    const probe = records.vectors[0]!;
    const nearest = await back.vectors.search({
      scopes: ['global', 'project:alpha', 'project:beta', 'project:a_b%', 'user:alice', 'session:s-1'],
      vector: probe.vector,
      limit: 1,
    });
    expect(nearest[0]!.similarity).toBeCloseTo(1, 5);
    const deleted = records.history.find((entry) => entry.action === 'delete')!;
    await back.undo(deleted.id, ACTOR);
    expect(await back.get(deleted.memoryId)).toEqual(deleted.before);
  });

  it('an empty source gives an empty copy with equal checksums', async () => {
    const report = await copyStore(await sqliteStore(), await sqliteStore());
    expect(report).toMatchObject({ resumed: false, written: NO_RECORDS, vectorSpace: null });
    expect(report.target).toEqual(report.source);
  });

  it('resumes a copy interrupted in any phase: what is there is skipped, the rest copied, the result exact', async () => {
    const source = await sqliteStore();
    await seedRichStore(source, 600, 2);
    const records = await readAll(source);
    for (const [phase, afterRecords] of [
      ['memories', 250],
      ['history', 300],
      ['vectors', 100],
      ['jobs', 12],
    ] as const) {
      const target = await sqliteStore();
      const controller = new AbortController();
      const stop = copyStore(source, target, {
        pageSize: 50,
        signal: controller.signal,
        onProgress: (progress) => {
          if (progress.phase === phase && progress.done >= afterRecords) controller.abort();
        },
      });
      await expect(stop).rejects.toThrow(/abort/i);
      const partial = await readAll(target);
      const copiedBefore = countsOf(partial)[phase];
      expect(copiedBefore, phase).toBe(afterRecords);

      const report = await copyStore(source, target, { pageSize: 70 });
      expect(report.resumed).toBe(true);
      expect(report.alreadyComplete).toBe(false);
      expect(report.skipped).toEqual(countsOf(partial));
      const all = countsOf(records);
      const skipped = countsOf(partial);
      expect(report.written).toEqual(
        Object.fromEntries(
          Object.entries(all).map(([kind, count]) => [kind, count - skipped[kind as keyof typeof all]]),
        ),
      );
      await expectSameStores(source, target);
      // A finished copy run again changes nothing.
      const rerun = await copyStore(source, target);
      expect(rerun.written).toEqual(NO_RECORDS);
      expect(rerun.target).toEqual(report.target);
    }
  });

  it('refuses a target that holds different data, before writing anything', async () => {
    const source = await sqliteStore();
    await seedRichStore(source, 120, 3);

    const unrelated = await sqliteStore();
    await unrelated.create({ scope: 'global', content: 'A memory of another store.' }, ACTOR);
    const before = await snapshot(unrelated);
    const error = await expectEngramError(() => copyStore(source, unrelated), 'CONFLICT');
    expect(error.message).toMatch(/holds different data.*which the source does not have.*Nothing was written/);
    expect(await snapshot(unrelated)).toEqual(before);

    // A finished copy whose target was then changed: the changed record is named.
    const edited = await sqliteStore();
    await copyStore(source, edited);
    const [memory] = await edited.list({ scopes: ['global', 'project:alpha', 'project:beta'], limit: 1 });
    await edited.update(memory!.id, { importance: 0.01 }, ACTOR);
    const editedBefore = await snapshot(edited);
    expect((await expectEngramError(() => copyStore(source, edited), 'CONFLICT')).message).toContain(memory!.id);
    expect(await snapshot(edited)).toEqual(editedBefore);

    // A source changed after an interrupted copy is not the source that copy came from.
    const interrupted = await sqliteStore();
    const controller = new AbortController();
    await expect(
      copyStore(source, interrupted, {
        pageSize: 10,
        signal: controller.signal,
        onProgress: (progress) => progress.done >= 30 && controller.abort(),
      }),
    ).rejects.toThrow();
    const first = (await readAll(interrupted)).memories[0]!;
    await source.update(first.id, { content: 'Changed after the interrupted copy.' }, ACTOR);
    const interruptedBefore = await snapshot(interrupted);
    expect((await expectEngramError(() => copyStore(source, interrupted), 'CONFLICT')).message).toMatch(
      /differs from the source's.*empty store/,
    );
    expect(await snapshot(interrupted)).toEqual(interruptedBefore);

    // Vectors of another model.
    const otherSpace = await sqliteStore();
    await otherSpace.vectors.setSpace({ model: 'another-model', dimensions: SEED_SPACE.dimensions });
    expect((await expectEngramError(() => copyStore(source, otherSpace), 'CONFLICT')).message).toContain(
      'another-model',
    );
    expect(await otherSpace.vectors.space()).toEqual({ model: 'another-model', dimensions: SEED_SPACE.dimensions });
    expect(await otherSpace.count({ scopes: ['global'], archived: 'include', invalid: 'include' })).toBe(0);

    // Jobs and checkpoints are records too: another store's cursor, or a job changed after the copy, is refused by name.
    const withCursor = await sqliteStore();
    await withCursor.checkpoints.set('extraction-cursor:elsewhere', 'msg-1');
    const cursorBefore = await snapshot(withCursor);
    expect((await expectEngramError(() => copyStore(source, withCursor), 'CONFLICT')).message).toContain(
      'checkpoint "extraction-cursor:elsewhere", which the source does not have',
    );
    expect(await snapshot(withCursor)).toEqual(cursorBefore);
    const jobEdited = await sqliteStore();
    await copyStore(source, jobEdited);
    const [failed] = await jobEdited.jobs.list({ states: ['failed'] });
    await jobEdited.jobs.retry(failed!.id);
    expect((await expectEngramError(() => copyStore(source, jobEdited), 'CONFLICT')).message).toContain(
      `job "${failed!.id}" differs`,
    );
  });

  it('refuses the same store on both sides and malformed page sizes, writing nothing', async () => {
    const source = await sqliteStore();
    await seedRichStore(source, 30, 4);
    const before = await snapshot(source);
    expect((await expectEngramError(() => copyStore(source, source), 'INVALID_INPUT')).message).toContain('same store');
    const sameFile = new SqliteMemoryStore({ path: source.info().location });
    await sameFile.open();
    opened.push(sameFile);
    await expectEngramError(() => copyStore(source, sameFile), 'INVALID_INPUT');
    const target = await sqliteStore();
    for (const pageSize of [0, -1, 1.5, Number.NaN, 10_001, '50' as unknown as number]) {
      await expectEngramError(() => copyStore(source, target, { pageSize }), 'INVALID_INPUT');
    }
    expect(await snapshot(source)).toEqual(before);
    expect(await readAll(target)).toEqual({ memories: [], history: [], vectors: [], jobs: [], checkpoints: [] });
    expect(await target.vectors.space()).toBeUndefined();
  });

  it('fails verification, with both summaries, when the source is written to during the copy', async () => {
    const source = await sqliteStore();
    await seedRichStore(source, 200, 5);
    const target = await sqliteStore();
    let written = false;
    const error = await expectEngramError(
      () =>
        copyStore(source, target, {
          pageSize: 40,
          onProgress: (progress) => {
            // After the memories were copied, a writer adds one: the copy can no longer match.
            if (progress.phase === 'history' && !written) {
              written = true;
              void source.create({ scope: 'global', content: 'Written during the copy.' }, ACTOR);
            }
          },
        }),
      'STORE_ERROR',
    );
    expect(error.message).toMatch(
      /does not match its source.*memories: \d+ in the source, \d+ in the target.*Stop every writer/,
    );
    const details = error.details as {
      source: { counts: { memories: number } };
      target: { counts: { memories: number } };
    };
    expect(details.source.counts.memories).toBe(details.target.counts.memories + 1);
  });

  it('checksums depend on every field and on nothing but the records', async () => {
    const left = await sqliteStore();
    await seedRichStore(left, 80, 6);
    const right = await sqliteStore();
    await copyStore(left, right);
    const summary = await summarizeStore(left, { pageSize: 7 });
    expect(await summarizeStore(right, { pageSize: 1_000 })).toEqual(summary);
    const [memory] = (await readAll(right)).memories.filter((candidate) => candidate.hitCount === 0);
    await right.recordAccess([memory!.id], '2025-01-01T00:00:00.000Z');
    const changed = await summarizeStore(right, { pageSize: 1_000 });
    expect(changed.checksums.memories).not.toBe(summary.checksums.memories);
    expect({ ...changed.checksums, memories: '' }).toEqual({ ...summary.checksums, memories: '' });
    expect(changed.counts).toEqual(summary.counts);
  });
});
