// The store the record-copy cases copy: every kind of record (all memory states, hit counts,
// sources, a delete, an undo, vectors) under ids whose byte order differs from a locale's, and
// reading its export back page by page, or under new ids.
import { expect } from 'vitest';
import { MEMORY_TYPES, type Memory } from '../../memory/memory.js';
import type { StoreWith } from '../../contracts/memory-store.js';
import type { ExportPage } from '../../contracts/memory-store-records.js';
import type { VectorEntry } from '../../contracts/memory-store-vectors.js';
import type { HistoryEntry } from '../../memory/memory-history.js';
import { fingerprint, SUITE_ACTOR } from '../store-suite-support.js';

export const SPACE = { model: 'record-copy-embedder', dimensions: 4 } as const;
export const EDITOR = { actor: 'suite-editor' };
export const SCOPES = ['project:copy', 'project:copy-2', 'global', 'user:alice'];
/** Ids whose byte order differs from a locale's order: case, and punctuation that collations ignore. */
export const IDS = ['mem_B', 'mem_a', 'mem-1', 'mem.2', 'MEM:3', 'mem_a0', 'zeta', 'Mem_b'];
export const WORDS = ['aardvark', 'bison', 'cheetah', 'dingo', 'emu', 'ferret', 'gazelle', 'heron'];
export const byteOrder = (left: string, right: string): number => (left < right ? -1 : left > right ? 1 : 0);
export const vectorFor = (index: number): Float32Array => Float32Array.from([index + 1, 0.5, -0.25 * index, 1]);

interface SeededStore {
  /** Ids of memories that exist at the end (not deleted). */
  live: string[];
  /** Ids that kept the vector put at creation: their text never changed and they were not deleted. */
  withVectors: string[];
}

/** A store with every kind of record: all memory states, hit counts, sources, a delete, an undo, vectors. */
export async function seedStore(store: StoreWith<'vectors'>): Promise<SeededStore> {
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

export async function exportAll(store: StoreWith<'records'>, limit: number): Promise<Exported> {
  return {
    memories: await readAll((page) => store.records.exportMemories(page), limit),
    history: await readAll((page) => store.records.exportHistory(page), limit),
    vectors: await readAll((page) => store.records.exportVectors(page), limit),
  };
}

export const ids = (records: ReadonlyArray<{ id: string }>): string[] => records.map((record) => record.id);

/** The same records under new ids (`copy.` + id), every reference between them moved along. */
export function renamed(records: Exported): Exported {
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

export async function exportsAndFingerprint(store: StoreWith<'records'>): Promise<unknown> {
  return { exported: await exportAll(store, 1_000), fingerprint: await fingerprint(store, SCOPES) };
}
