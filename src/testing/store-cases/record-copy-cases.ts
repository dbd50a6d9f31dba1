import { expect } from 'vitest';
import type { HistoryEntry } from '../../memory/memory-history.js';
import type { ExportPage, StoreRecords } from '../../contracts/memory-store-records.js';
import {
  describeInput,
  everything,
  expectEngramError,
  outcomeOf,
  SUITE_ACTOR,
  storeCaseGroup,
} from '../store-suite-support.js';
import {
  byteOrder,
  EDITOR,
  exportAll,
  exportsAndFingerprint,
  ids,
  IDS,
  renamed,
  SCOPES,
  seedStore,
  SPACE,
  vectorFor,
  WORDS,
} from './record-copy-fixture.js';
import { recordRestoreInputCases } from './record-restore-input-cases.js';

// Copying a store whole (`engram migrate`) reads it with the export pages and writes it into
// another store with records.restore. A case gets one store, so the round trip here restores a
// store's own export under new ids (the copies must come out field for field the same) and
// restores it again unchanged (everything identical, so everything skipped). Copies between two
// stores, and between backends, are tested by `engram migrate`'s own tests.

export const recordCopyCases = storeCaseGroup({
  title: 'copying a store whole',
  roles: ['records', 'vectors'],
  cases: [
    {
      name: 'export pages list every memory, history entry and vector once, by id in byte order, in any page size',
      async run({ store }) {
        const seeded = await seedStore(store);
        const small = await exportAll(store, 2);
        expect(await exportAll(store, 3)).toEqual(small);
        expect(await exportAll(store, 10_000)).toEqual(small);

        expect(ids(small.memories)).toEqual([...seeded.live].sort(byteOrder));
        for (const memory of small.memories) expect(memory).toEqual(await store.get(memory.id));
        expect(small.memories.find((memory) => memory.id === 'MEM:3')).toMatchObject({
          hitCount: 2,
          lastAccessedAt: '2025-06-02T12:30:00.000Z',
        });
        expect(small.memories.filter((memory) => memory.archived).map((memory) => memory.id)).toEqual(['mem-1']);
        expect(small.memories.find((memory) => memory.id === 'mem.2')).toMatchObject({
          supersededBy: 'zeta',
          invalidAt: expect.any(String),
        });

        // History of every memory, the deleted one's included, and the undo with its link.
        const history: HistoryEntry[] = [];
        for (const id of IDS) history.push(...(await store.history(id)));
        expect(history.map((entry) => entry.action)).toContain('delete');
        expect(history.filter((entry) => entry.undoOf !== null)).toHaveLength(1);
        expect(small.history).toEqual([...history].sort((left, right) => byteOrder(left.id, right.id)));

        // Only vectors still valid: a changed text or a delete dropped theirs.
        expect(ids(small.vectors)).toEqual(seeded.withVectors);
        for (const entry of small.vectors) {
          expect(entry.vector).toEqual(vectorFor(IDS.indexOf(entry.id)));
          expect(entry.updatedAt).toBe((await store.get(entry.id))!.updatedAt);
        }
        expect(small.vectors.reduce((total, entry) => total + entry.vector.length, 0)).toBe(
          seeded.withVectors.length * SPACE.dimensions,
        );

        // "after" is a plain value, never query text; any string starts after itself.
        const hostile = "'); DROP TABLE memories; --";
        expect(ids(await store.records.exportMemories({ limit: 100, after: hostile }))).toEqual(
          ids(small.memories).filter((id) => id > hostile),
        );
        expect(ids(await store.records.exportMemories({ limit: 100, after: 'mem_' }))).toEqual(
          ids(small.memories).filter((id) => id > 'mem_'),
        );
        expect(await store.records.exportHistory({ limit: 5, after: '\u{10FFFF}' })).toEqual([]);
        expect(await store.count(everything(SCOPES))).toBe(seeded.live.length);
      },
    },
    {
      name: 'an empty store exports nothing, and malformed pages are refused with INVALID_INPUT',
      async run({ store }) {
        expect(await store.records.exportMemories({ limit: 10 })).toEqual([]);
        expect(await store.records.exportHistory({ limit: 10 })).toEqual([]);
        expect(await store.records.exportVectors({ limit: 10 })).toEqual([]);
        await store.create({ scope: 'global', content: 'One memory.' }, SUITE_ACTOR);
        const pages: unknown[] = [
          null,
          [],
          'limit=10',
          {},
          { limit: 0 },
          { limit: -1 },
          { limit: 1.5 },
          { limit: Number.NaN },
          { limit: Number.POSITIVE_INFINITY },
          { limit: '10' },
          { limit: 10_001 },
          { limit: 10, after: 5 },
          { limit: 10, after: {} },
          { limit: 10, after: 'x'.repeat(201) },
          { limit: 10, after: 'a\u0000b' },
        ];
        const unexpected: string[] = [];
        for (const page of pages) {
          for (const [method, read] of [
            ['exportMemories', store.records.exportMemories.bind(store.records)],
            ['exportHistory', store.records.exportHistory.bind(store.records)],
            ['exportVectors', store.records.exportVectors.bind(store.records)],
          ] as const) {
            const outcome = await outcomeOf(() => read(page as ExportPage));
            if (outcome !== 'INVALID_INPUT') unexpected.push(`${method}(${describeInput({ page })}) → ${outcome}`);
          }
        }
        expect(unexpected).toEqual([]);
      },
    },
    {
      name: 'records.restore writes exported records verbatim (ids, times, hit counts, states, history, undo links, vectors) and adds no history',
      async run({ store }) {
        const seeded = await seedStore(store);
        const original = await exportAll(store, 1_000);
        const copy = renamed(original);
        const statsBefore = await store.stats();

        // In pieces, as a copy goes: memories first, then history, then vectors with the rest of the history.
        const half = Math.ceil(copy.memories.length / 2);
        expect(await store.records.restore({ memories: copy.memories.slice(0, half) })).toEqual({
          written: { memories: half, history: 0, vectors: 0, jobs: 0, checkpoints: 0 },
          skipped: { memories: 0, history: 0, vectors: 0, jobs: 0, checkpoints: 0 },
        });
        expect(
          await store.records.restore({ memories: copy.memories.slice(half), history: copy.history.slice(0, 3) }),
        ).toEqual({
          written: { memories: copy.memories.length - half, history: 3, vectors: 0, jobs: 0, checkpoints: 0 },
          skipped: { memories: 0, history: 0, vectors: 0, jobs: 0, checkpoints: 0 },
        });
        expect(await store.records.restore({ history: copy.history.slice(3), vectors: copy.vectors })).toEqual({
          written: {
            memories: 0,
            history: copy.history.length - 3,
            vectors: copy.vectors.length,
            jobs: 0,
            checkpoints: 0,
          },
          skipped: { memories: 0, history: 0, vectors: 0, jobs: 0, checkpoints: 0 },
        });

        for (const memory of copy.memories) expect(await store.get(memory.id)).toEqual(memory);
        for (const id of IDS) {
          const expected = (await store.history(id)).map((entry) =>
            copy.history.find((mapped) => mapped.id === `copy.${entry.id}`),
          );
          expect(await store.history(`copy.${id}`)).toEqual(expected);
        }
        for (const entry of copy.history) expect(await store.getChange(entry.id)).toEqual(entry);
        const after = await exportAll(store, 1_000);
        expect(after.vectors.filter((entry) => entry.id.startsWith('copy.'))).toEqual(copy.vectors);
        expect(after.history).toHaveLength(original.history.length * 2);

        const statsAfter = await store.stats();
        expect(statsAfter.total).toBe(statsBefore.total * 2);
        expect(statsAfter.historyEntries).toBe(statsBefore.historyEntries + copy.history.length);
        expect(await store.vectors.counts()).toEqual({
          stored: seeded.withVectors.length * 2,
          missing: (seeded.live.length - seeded.withVectors.length) * 2,
        });

        // Restored memories are found like created ones, by full text and by vector.
        const hits = await store.searchText({ scopes: SCOPES, terms: [WORDS[IDS.indexOf('zeta')]!], limit: 10 });
        expect(ids(hits.map((hit) => hit.memory)).sort()).toEqual(['copy.zeta', 'zeta']);
        const nearest = await store.vectors.search({
          scopes: SCOPES,
          vector: vectorFor(IDS.indexOf('MEM:3')),
          limit: 2,
        });
        expect(ids(nearest.map((hit) => hit.memory)).sort()).toEqual(['MEM:3', 'copy.MEM:3']);
        expect(nearest[0]!.similarity).toBeCloseTo(1, 5);

        // History came across with its links: the deleted memory can be brought back, and the undone rename undone again.
        const deleted = copy.history.filter((entry) => entry.memoryId === 'copy.Mem_b').at(-1)!;
        expect(deleted.action).toBe('delete');
        await store.undo(deleted.id, EDITOR);
        expect(await store.get('copy.Mem_b')).toEqual(deleted.before);
        const undoEntry = copy.history.find((entry) => entry.memoryId === 'copy.mem_a0' && entry.undoOf !== null)!;
        expect(undoEntry.undoOf).toBe(
          copy.history.find((entry) => entry.memoryId === 'copy.mem_a0' && entry.action === 'update')!.id,
        );
        await store.undo(undoEntry.id, EDITOR);
        expect((await store.get('copy.mem_a0'))!.name).toBe('renamed-fact');
        expect((await store.get('mem_a0'))!.name).not.toBe('renamed-fact');
      },
    },
    {
      name: 'records.restore skips records already there unchanged, so a resumed copy is idempotent',
      async run({ store }) {
        await seedStore(store);
        const exported = await exportAll(store, 1_000);
        const before = await exportsAndFingerprint(store);
        expect(await store.records.restore(exported)).toEqual({
          written: { memories: 0, history: 0, vectors: 0, jobs: 0, checkpoints: 0 },
          skipped: {
            memories: exported.memories.length,
            history: exported.history.length,
            vectors: exported.vectors.length,
            jobs: 0,
            checkpoints: 0,
          },
        });
        expect(await exportsAndFingerprint(store)).toEqual(before);

        // A page that was half copied before an interruption: the copied part is skipped, the rest written.
        const copy = renamed(exported);
        await store.records.restore({ memories: copy.memories.slice(0, 3) });
        expect(
          await store.records.restore({
            memories: copy.memories,
            history: [...exported.history.slice(0, 2), ...copy.history],
          }),
        ).toEqual({
          written: {
            memories: copy.memories.length - 3,
            history: copy.history.length,
            vectors: 0,
            jobs: 0,
            checkpoints: 0,
          },
          skipped: { memories: 3, history: 2, vectors: 0, jobs: 0, checkpoints: 0 },
        });
        expect(await store.records.restore({ memories: [], history: [], vectors: [] })).toEqual({
          written: { memories: 0, history: 0, vectors: 0, jobs: 0, checkpoints: 0 },
          skipped: { memories: 0, history: 0, vectors: 0, jobs: 0, checkpoints: 0 },
        });
        expect(await store.records.restore({})).toEqual({
          written: { memories: 0, history: 0, vectors: 0, jobs: 0, checkpoints: 0 },
          skipped: { memories: 0, history: 0, vectors: 0, jobs: 0, checkpoints: 0 },
        });
      },
    },
    {
      name: 'records.restore refuses a record that differs from the one stored under its id with CONFLICT, and writes nothing',
      async run({ store }) {
        await seedStore(store);
        const exported = await exportAll(store, 1_000);
        const before = await exportsAndFingerprint(store);
        const fresh = renamed(exported).memories[0]!;
        const memory = exported.memories.find((record) => record.id === 'MEM:3')!;
        const entry = exported.history[0]!;
        const vector = exported.vectors[0]!;
        const attempts: Array<[string, StoreRecords]> = [
          ['changed content', { memories: [fresh, { ...memory, content: 'Someone else wrote this.' }] }],
          ['changed hit count', { memories: [fresh, { ...memory, hitCount: memory.hitCount + 1 }] }],
          ['changed scope', { memories: [fresh, { ...memory, scope: 'project:elsewhere' }] }],
          ['changed archived flag', { memories: [fresh, { ...memory, archived: !memory.archived }] }],
          ['history entry with another actor', { memories: [fresh], history: [{ ...entry, actor: 'someone-else' }] }],
          [
            'history entry with another snapshot',
            { memories: [fresh], history: [{ ...entry, after: entry.after && { ...entry.after, importance: 0.01 } }] },
          ],
          [
            'vector with other values',
            { memories: [fresh], vectors: [{ ...vector, vector: Float32Array.from([9, 9, 9, 9]) }] },
          ],
          [
            'vector of another version of the memory',
            { memories: [fresh], vectors: [{ ...vector, updatedAt: '2001-01-01T00:00:00.000Z' }] },
          ],
          [
            'vector of a memory that is not there',
            {
              memories: [fresh],
              vectors: [{ id: 'no-such-memory', vector: vectorFor(1), updatedAt: fresh.updatedAt }],
            },
          ],
          ['the same memory twice in one call', { memories: [fresh, { ...fresh }] }],
          ['the same history entry twice in one call', { history: [entry, { ...entry }] }],
        ];
        for (const [label, records] of attempts) {
          const error = await expectEngramError(() => store.records.restore(records), 'CONFLICT');
          expect(error.message, label).toMatch(/\S/);
          expect(await exportsAndFingerprint(store), label).toEqual(before);
        }
      },
    },
    ...recordRestoreInputCases,
  ],
});
