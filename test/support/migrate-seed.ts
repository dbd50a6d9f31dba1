import { expect } from 'vitest';
import { MEMORY_TYPES, type Memory, type NewMemory } from '../../src/memory/memory.js';
import type { MemoryStore, StoreRole, StoreWith } from '../../src/contracts/memory-store.js';
import type { Job } from '../../src/contracts/memory-store-jobs.js';
import type { CheckpointRecord } from '../../src/contracts/memory-store-records.js';
import type { VectorEntry } from '../../src/contracts/memory-store-vectors.js';
import type { HistoryEntry } from '../../src/memory/memory-history.js';
import { createRandomSource } from '../../src/testing/store-suite-support.js';

// A store with every kind of record engram keeps, for the migrate tests: memories in every state,
// hit counts, sources, SQL and Unicode in the text, history with updates, deletes and undos, and
// vectors (some dropped again by a text change), jobs in every state and checkpoints (cursors).

/** A store with every role: the records of each are seeded, read and compared. */
type FullStore = StoreWith<StoreRole>;

export const SEED_SPACE = { model: 'migrate-test-embedder', dimensions: 8 } as const;
const ACTOR = { actor: 'migrate-seed' };
const SCOPES = ['global', 'project:alpha', 'project:beta', 'project:a_b%', 'user:alice', 'session:s-1'];
const SPICE = [
  "Robert'); DROP TABLE memories; --",
  'naïve café 東京 🚀 combining é',
  '$1 $$ :name ? %s \\x00 "quoted" \'single\'',
  '<script>alert(1)</script>',
  'plain words about deploys and tests',
];

function vectorOf(random: ReturnType<typeof createRandomSource>): Float32Array {
  const values = Float32Array.from({ length: SEED_SPACE.dimensions }, () => Math.fround(random.next() * 2 - 1));
  values[0] = values[0] === 0 ? 1 : values[0]!;
  return values;
}

/** Fills `store` with `count` memories and their history and vectors; deterministic for a seed. */
export async function seedRichStore(store: FullStore, count: number, seed = 1): Promise<void> {
  const random = createRandomSource(seed);
  await store.vectors.setSpace(SEED_SPACE);
  const inputs: NewMemory[] = Array.from({ length: count }, (_, index) => ({
    scope: random.pick(SCOPES),
    type: random.pick(MEMORY_TYPES),
    content: `Fact ${index} (seed ${seed}): ${random.pick(SPICE)} — word${random.integer(0, 500)} word${random.integer(0, 500)}.`,
    importance: Math.round(random.next() * 100) / 100,
    ...(index % 3 === 0 && { source: { sessionId: `session-${index % 17}`, turnId: `turn-${index}`, origin: 'seed' } }),
  }));
  const memories: Memory[] = [];
  for (let start = 0; start < inputs.length; start += 1_000)
    memories.push(...(await store.createMany(inputs.slice(start, start + 1_000), ACTOR)));
  const withVectors = memories.filter((_, index) => index % 10 < 7);
  for (let start = 0; start < withVectors.length; start += 1_000) {
    await store.vectors.put(
      withVectors.slice(start, start + 1_000).map((memory) => ({ id: memory.id, vector: vectorOf(random) })),
    );
  }
  const hits: string[] = [];
  for (const [index, memory] of memories.entries()) {
    if (index % 50 === 0) {
      // A text change drops the vector; some get a new one computed from the new text.
      const updated = await store.update(memory.id, { content: `${memory.content} Updated.`, importance: 0.9 }, ACTOR);
      if (index % 100 === 0)
        await store.vectors.put([{ id: memory.id, vector: vectorOf(random), updatedAt: updated.updatedAt }]);
    } else if (index % 53 === 1) {
      await store.archive(memory.id, ACTOR);
    } else if (index % 59 === 2 && index + 1 < memories.length) {
      await store.invalidate(memory.id, { supersededBy: memories[index + 1]!.id }, ACTOR);
    } else if (index % 61 === 3) {
      await store.delete(memory.id, { actor: 'migrate-deleter' });
    } else if (index % 67 === 4) {
      const renamed = await store.update(memory.id, { name: `renamed-${index}` }, ACTOR);
      const change = (await store.history(renamed.id)).at(-1)!;
      await store.undo(change.id, { actor: 'migrate-undoer' });
    }
    if (index % 7 === 0) hits.push(memory.id);
  }
  const live = new Set((await readAll(store)).memories.map((memory) => memory.id));
  await store.recordAccess(
    hits.filter((id) => live.has(id)),
    '2025-03-04T05:06:07.089Z',
  );
  await seedJobsAndCheckpoints(store, Math.max(5, Math.round(count / 50)), seed);
}

/** Extraction-like jobs in every state (done, failed, retrying, running, pending) and a cursor checkpoint per session. */
async function seedJobsAndCheckpoints(store: FullStore, count: number, seed: number): Promise<void> {
  for (let index = 0; index < count; index += 1) {
    await store.jobs.enqueue({
      queue: 'extraction',
      key: `session-${index % 7}:turn-${index}`,
      payload: { seed, turn: index, text: SPICE[index % SPICE.length] },
      maxAttempts: 2,
    });
  }
  for (let index = 0; index < count - 1; index += 1) {
    const job = await store.jobs.claim({ queue: 'extraction', worker: `worker-${index % 3}`, leaseMs: 600_000 });
    if (!job) break;
    if (index % 4 === 0) await store.jobs.complete(job.id, job.lockedBy!);
    else if (index % 4 === 1)
      await store.jobs.fail(job.id, job.lockedBy!, { error: `failed: ${SPICE[index % SPICE.length]}` });
    else if (index % 4 === 2)
      await store.jobs.fail(job.id, job.lockedBy!, { error: 'retry later', retryAt: '2099-01-01T00:00:00.000Z' });
    // index % 4 === 3: left running, its lease held.
  }
  for (let session = 0; session < 7; session += 1)
    await store.checkpoints.set(`extraction-cursor:session-${session}`, `msg-${seed}-${session}`);
  await store.checkpoints.set('aging:last-run', "2025-03-04T05:06:07.089Z'); DROP TABLE checkpoints; --");
}

export interface AllRecords {
  memories: Memory[];
  history: HistoryEntry[];
  vectors: VectorEntry[];
  jobs: Job[];
  checkpoints: CheckpointRecord[];
}

/** How many records of each kind, as copy reports count them. */
export function countsOf(records: AllRecords): Record<keyof AllRecords, number> {
  return {
    memories: records.memories.length,
    history: records.history.length,
    vectors: records.vectors.length,
    jobs: records.jobs.length,
    checkpoints: records.checkpoints.length,
  };
}

/** No records of any kind. */
export const NO_RECORDS = { memories: 0, history: 0, vectors: 0, jobs: 0, checkpoints: 0 } as const;

/** Every record of a store, read page by page. */
export async function readAll(store: FullStore, limit = 2_000): Promise<AllRecords> {
  const read = async <T extends { id: string } | { name: string }>(
    page: (input: { after?: string; limit: number }) => Promise<T[]>,
  ): Promise<T[]> => {
    const all: T[] = [];
    const key = (record: T): string => ('id' in record ? record.id : record.name);
    for (;;) {
      const next = await page({ limit, ...(all.length > 0 && { after: key(all.at(-1)!) }) });
      all.push(...next);
      if (next.length < limit) return all;
    }
  };
  return {
    memories: await read((page) => store.records.exportMemories(page)),
    history: await read((page) => store.records.exportHistory(page)),
    vectors: await read((page) => store.records.exportVectors(page)),
    jobs: await read((page) => store.records.exportJobs(page)),
    checkpoints: await read((page) => store.records.exportCheckpoints(page)),
  };
}

/** Asserts two stores hold exactly the same records, vector space and statistics. */
export async function expectSameStores(left: FullStore, right: FullStore): Promise<void> {
  const [a, b] = [await readAll(left), await readAll(right)];
  expect(b.memories.length).toBe(a.memories.length);
  expect(b.memories).toEqual(a.memories);
  expect(b.history.length).toBe(a.history.length);
  expect(b.history).toEqual(a.history);
  expect(b.vectors.length).toBe(a.vectors.length);
  expect(b.vectors).toEqual(a.vectors);
  expect(b.jobs).toEqual(a.jobs);
  expect(b.checkpoints).toEqual(a.checkpoints);
  expect(await right.jobs.counts()).toEqual(await left.jobs.counts());
  for (const checkpoint of a.checkpoints) expect(await right.checkpoints.get(checkpoint.name)).toBe(checkpoint.value);
  expect(await right.vectors.space()).toEqual(await left.vectors.space());
  expect(await right.stats()).toEqual(await left.stats());
  expect(await right.vectors.counts()).toEqual(await left.vectors.counts());
  // History as a reader sees it, memory by memory, in order (a sample: every 97th memory that ever existed).
  const memoryIds = [...new Set(a.history.map((entry) => entry.memoryId))]
    .sort()
    .filter((_, index) => index % 97 === 0);
  for (const id of memoryIds) expect(await right.history(id)).toEqual(await left.history(id));
}

/** On a store opened at schema version 1: writes one memory and edits it (two history entries), then closes the store. */
export async function writeOnOldSchema(
  old: MemoryStore,
  actor: { actor: string },
): Promise<{ written: Memory; edited: Memory }> {
  expect(old.info().schemaVersion).toBe(1);
  const written = await old.create(
    { scope: 'project:legacy', content: 'The legacy billing service runs on Fridays.' },
    actor,
  );
  const edited = await old.update(written.id, { importance: 0.9 }, actor);
  await old.close();
  return { written, edited };
}
