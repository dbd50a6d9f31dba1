import { expect } from 'vitest';
import { MEMORY_TYPES, type Memory } from '../../memory/memory.js';
import type { StoreWith } from '../../contracts/memory-store.js';
import type { ExportPage, StoreRecords } from '../../contracts/memory-store-records.js';
import type { VectorEntry } from '../../contracts/memory-store-vectors.js';
import type { HistoryEntry } from '../../memory/memory-history.js';
import {
  describeInput,
  everything,
  expectEngramError,
  fingerprint,
  outcomeOf,
  SUITE_ACTOR,
  storeCaseGroup,
} from '../store-suite-support.js';

// Copying a store whole (`engram migrate`) reads it with the export pages and writes it into
// another store with records.restore. A case gets one store, so the round trip here restores a
// store's own export under new ids (the copies must come out field for field the same) and
// restores it again unchanged (everything identical, so everything skipped). Copies between two
// stores, and between backends, are tested by `engram migrate`'s own tests.

const SPACE = { model: 'record-copy-embedder', dimensions: 4 } as const;
const EDITOR = { actor: 'suite-editor' };
const SCOPES = ['project:copy', 'project:copy-2', 'global', 'user:alice'];
/** Ids whose byte order differs from a locale's order: case, and punctuation that collations ignore. */
const IDS = ['mem_B', 'mem_a', 'mem-1', 'mem.2', 'MEM:3', 'mem_a0', 'zeta', 'Mem_b'];
const WORDS = ['aardvark', 'bison', 'cheetah', 'dingo', 'emu', 'ferret', 'gazelle', 'heron'];
const byteOrder = (left: string, right: string): number => (left < right ? -1 : left > right ? 1 : 0);
const vectorFor = (index: number): Float32Array => Float32Array.from([index + 1, 0.5, -0.25 * index, 1]);

interface SeededStore {
  /** Ids of memories that exist at the end (not deleted). */
  live: string[];
  /** Ids that kept the vector put at creation: their text never changed and they were not deleted. */
  withVectors: string[];
}

/** A store with every kind of record: all memory states, hit counts, sources, a delete, an undo, vectors. */
async function seedStore(store: StoreWith<'vectors'>): Promise<SeededStore> {
  await store.vectors.setSpace(SPACE);
  const created = await store.createMany(
    IDS.map((id, index) => ({
      id,
      scope: SCOPES[index % SCOPES.length]!,
      type: MEMORY_TYPES[index % MEMORY_TYPES.length]!,
      content: `Record copy fact ${index}: the ${WORDS[index]} lives in enclosure ${index}.`,
      importance: (index % 5) / 4,
      ...(index % 2 === 1 && { source: { sessionId: `session-${index}`, turnId: `turn-${index}`, origin: 'suite' } }),
    })),
    SUITE_ACTOR,
  );
  await store.vectors.put(created.map((memory, index) => ({ id: memory.id, vector: vectorFor(index) })));
  await store.update(
    'mem_a',
    { content: 'Record copy fact 1: the bison moved to the north meadow.', importance: 0.9 },
    EDITOR,
  );
  await store.archive('mem-1', EDITOR);
  await store.invalidate('mem.2', { supersededBy: 'zeta' }, EDITOR);
  await store.recordAccess(['MEM:3', 'zeta'], '2025-06-01T00:00:00.000Z');
  await store.recordAccess(['MEM:3'], '2025-06-02T12:30:00.000Z');
  await store.delete('Mem_b', EDITOR);
  const renamed = await store.update('mem_a0', { name: 'renamed-fact' }, EDITOR);
  expect(renamed.name).toBe('renamed-fact');
  const rename = (await store.history('mem_a0')).at(-1)!;
  await store.undo(rename.id, EDITOR);
  return {
    live: IDS.filter((id) => id !== 'Mem_b'),
    withVectors: ['mem_B', 'mem-1', 'mem.2', 'MEM:3', 'zeta'].sort(byteOrder),
  };
}

/** Reads every record of one kind page by page, checking each page is in byte order and continues where the last stopped. */
async function readAll<T extends { id: string }>(
  read: (page: ExportPage) => Promise<T[]>,
  limit: number,
): Promise<T[]> {
  const all: T[] = [];
  let after: string | undefined;
  for (;;) {
    const page = await read({ limit, ...(after !== undefined && { after }) });
    expect(page.length).toBeLessThanOrEqual(limit);
    for (const record of page) {
      if (after !== undefined) expect(byteOrder(after, record.id), `${record.id} comes after ${after}`).toBe(-1);
      after = record.id;
      all.push(record);
    }
    if (page.length < limit) break;
  }
  expect(await read({ limit, ...(after !== undefined && { after }) })).toEqual([]);
  return all;
}

interface Exported {
  memories: Memory[];
  history: HistoryEntry[];
  vectors: VectorEntry[];
}

async function exportAll(store: StoreWith<'records'>, limit: number): Promise<Exported> {
  return {
    memories: await readAll((page) => store.records.exportMemories(page), limit),
    history: await readAll((page) => store.records.exportHistory(page), limit),
    vectors: await readAll((page) => store.records.exportVectors(page), limit),
  };
}

const ids = (records: ReadonlyArray<{ id: string }>): string[] => records.map((record) => record.id);

/** The same records under new ids (`copy.` + id), every reference between them moved along. */
function renamed(records: Exported): Exported {
  const memoryIds = new Set(ids(records.memories).concat(records.history.map((entry) => entry.memoryId)));
  const mapId = (id: string): string => `copy.${id}`;
  const mapMemory = (memory: Memory): Memory => ({
    ...memory,
    id: mapId(memory.id),
    supersededBy:
      memory.supersededBy !== null && memoryIds.has(memory.supersededBy)
        ? mapId(memory.supersededBy)
        : memory.supersededBy,
  });
  return {
    memories: records.memories.map(mapMemory),
    history: records.history.map((entry) => ({
      ...entry,
      id: mapId(entry.id),
      memoryId: mapId(entry.memoryId),
      before: entry.before && mapMemory(entry.before),
      after: entry.after && mapMemory(entry.after),
      undoOf: entry.undoOf === null ? null : mapId(entry.undoOf),
    })),
    vectors: records.vectors.map((entry) => ({ ...entry, id: mapId(entry.id) })),
  };
}

async function exportsAndFingerprint(store: StoreWith<'records'>): Promise<unknown> {
  return { exported: await exportAll(store, 1_000), fingerprint: await fingerprint(store, SCOPES) };
}

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
    {
      name: 'records.restore refuses malformed and oversized records and changes nothing; hostile text is stored verbatim, never run',
      async run({ store }) {
        await store.create({ scope: 'project:copy', content: 'Already here.' }, SUITE_ACTOR);
        const memory: Memory = {
          id: 'restored-1',
          scope: 'project:copy',
          type: 'reference',
          name: 'restored-fact',
          description: 'A restored fact',
          content: 'A restored fact with every field.',
          importance: 0.75,
          source: { sessionId: 's-1' },
          createdAt: '2024-01-02T03:04:05.006Z',
          updatedAt: '2024-02-02T03:04:05.006Z',
          lastAccessedAt: null,
          hitCount: 0,
          validFrom: '2024-01-02T03:04:05.006Z',
          invalidAt: null,
          supersededBy: null,
          archived: false,
        };
        const entry: HistoryEntry = {
          id: 'chg-restored-1',
          memoryId: 'restored-1',
          action: 'create',
          actor: 'importer',
          at: memory.createdAt,
          before: null,
          after: memory,
          undoOf: null,
        };
        const vector: VectorEntry = { id: 'restored-1', vector: vectorFor(0), updatedAt: memory.updatedAt };
        const { id: _id, ...withoutId } = memory;
        const before = await exportsAndFingerprint(store);

        // Vectors need a space; until one is set they are refused.
        expect(await outcomeOf(() => store.records.restore({ memories: [memory], vectors: [vector] }))).toBe(
          'INVALID_INPUT',
        );
        await store.vectors.setSpace(SPACE);

        const cases: Array<[string, unknown, string]> = [
          ['null', null, 'INVALID_INPUT'],
          ['an array', [memory], 'INVALID_INPUT'],
          ['memories not an array', { memories: memory }, 'INVALID_INPUT'],
          ['an unknown kind', { memories: [memory], locks: [] }, 'INVALID_INPUT'],
          ['a memory that is null', { memories: [null] }, 'INVALID_INPUT'],
          ['a memory without id', { memories: [withoutId] }, 'INVALID_INPUT'],
          ['a memory without hitCount', { memories: [{ ...memory, hitCount: undefined }] }, 'INVALID_INPUT'],
          ['a memory with an unknown field', { memories: [{ ...memory, rowid: 1 }] }, 'INVALID_INPUT'],
          ['a bad id', { memories: [{ ...memory, id: 'has space' }] }, 'INVALID_INPUT'],
          ['a bad scope', { memories: [{ ...memory, scope: 'project:' }] }, 'INVALID_SCOPE'],
          ['a bad type', { memories: [{ ...memory, type: 'secret' }] }, 'INVALID_INPUT'],
          ['a name that is not a slug', { memories: [{ ...memory, name: 'Not A Slug' }] }, 'INVALID_INPUT'],
          ['a date that is not one', { memories: [{ ...memory, updatedAt: 'yesterday' }] }, 'INVALID_INPUT'],
          ['a negative hit count', { memories: [{ ...memory, hitCount: -1 }] }, 'INVALID_INPUT'],
          ['importance above 1', { memories: [{ ...memory, importance: 2 }] }, 'INVALID_INPUT'],
          ['archived as a string', { memories: [{ ...memory, archived: 'yes' }] }, 'INVALID_INPUT'],
          ['a control character in content', { memories: [{ ...memory, content: 'bell \u0007' }] }, 'INVALID_INPUT'],
          [
            'content over the size limit',
            { memories: [{ ...memory, content: 'x'.repeat(1024 * 1024) }] },
            'PAYLOAD_TOO_LARGE',
          ],
          [
            'more memories than one call takes',
            { memories: Array.from({ length: 10_001 }, (_, index) => ({ ...memory, id: `bulk-${index}` })) },
            'PAYLOAD_TOO_LARGE',
          ],
          [
            'history with an unknown action',
            { memories: [memory], history: [{ ...entry, action: 'drop' }] },
            'INVALID_INPUT',
          ],
          ['history without actor', { memories: [memory], history: [{ ...entry, actor: '' }] }, 'INVALID_INPUT'],
          ['history with a bad time', { memories: [memory], history: [{ ...entry, at: 'soon' }] }, 'INVALID_INPUT'],
          ['history with a bad id', { memories: [memory], history: [{ ...entry, id: '../../etc' }] }, 'INVALID_INPUT'],
          [
            'history without undoOf',
            { memories: [memory], history: [{ ...entry, undoOf: undefined }] },
            'INVALID_INPUT',
          ],
          [
            'history whose snapshot is not an object',
            { memories: [memory], history: [{ ...entry, after: 'a memory' }] },
            'INVALID_INPUT',
          ],
          [
            'history whose snapshot is another memory',
            { memories: [memory], history: [{ ...entry, after: { ...memory, id: 'other' } }] },
            'INVALID_INPUT',
          ],
          [
            'history whose snapshot lacks fields',
            { memories: [memory], history: [{ ...entry, after: { id: 'restored-1', content: 'x' } }] },
            'INVALID_INPUT',
          ],
          [
            'a vector of the wrong length',
            { memories: [memory], vectors: [{ ...vector, vector: Float32Array.from([1, 2]) }] },
            'INVALID_INPUT',
          ],
          [
            'a vector holding NaN',
            { memories: [memory], vectors: [{ ...vector, vector: Float32Array.from([1, Number.NaN, 0, 0]) }] },
            'INVALID_INPUT',
          ],
          [
            'a vector of zeros',
            { memories: [memory], vectors: [{ ...vector, vector: new Float32Array(4) }] },
            'INVALID_INPUT',
          ],
          [
            'a vector as a plain array',
            { memories: [memory], vectors: [{ ...vector, vector: [1, 2, 3, 4] }] },
            'INVALID_INPUT',
          ],
          [
            'a vector without updatedAt',
            { memories: [memory], vectors: [{ id: vector.id, vector: vector.vector }] },
            'INVALID_INPUT',
          ],
        ];
        const unexpected: string[] = [];
        for (const [label, records, code] of cases) {
          const outcome = await outcomeOf(() => store.records.restore(records as StoreRecords));
          if (outcome !== code) unexpected.push(`${label}: ${outcome}, expected ${code}`);
        }
        expect(unexpected).toEqual([]);
        expect(await exportsAndFingerprint(store)).toEqual(before);

        // SQL and markup in every text field are data.
        const hostileMemory: Memory = {
          ...memory,
          id: 'hostile-1',
          name: 'drop-table',
          description: "x'); DROP TABLE memories; -- 100% _ * \\",
          content: "Robert'); DROP TABLE memories; --\n$1 $$ :name ? %s \\x00 <script>alert(1)</script>",
          source: { sessionId: "'; DELETE FROM memory_history; --", origin: '" OR ""="' },
        };
        const hostileEntry: HistoryEntry = {
          ...entry,
          id: 'chg-hostile-1',
          memoryId: 'hostile-1',
          actor: "x'); DROP TABLE memory_history; --",
          after: hostileMemory,
        };
        const report = await store.records.restore({
          memories: [hostileMemory],
          history: [hostileEntry],
          vectors: [{ ...vector, id: 'hostile-1' }],
        });
        expect(report.written).toEqual({ memories: 1, history: 1, vectors: 1, jobs: 0, checkpoints: 0 });
        expect(await store.get('hostile-1')).toEqual(hostileMemory);
        expect(await store.history('hostile-1')).toEqual([hostileEntry]);
        expect(await store.count(everything(['project:copy']))).toBe(2);
        expect(
          (await store.searchText({ scopes: ['project:copy'], terms: ['robert'], limit: 5 })).map(
            (hit) => hit.memory.id,
          ),
        ).toEqual(['hostile-1']);
      },
    },
  ],
});
