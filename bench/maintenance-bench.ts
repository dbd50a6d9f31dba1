import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteMemoryStore } from '../src/adapters/sqlite/sqlite-memory-store.js';
import { Engram } from '../src/engram.js';
import { median, quantile, round, timeMs } from './statistics.js';
import { makeMemories, makeVocabulary, seededRandom } from './synthetic-memories.js';

/** Cost of dedupe on write, of `engram dedupe` and of `engram age` over a store of `size` memories. */
export interface MaintenanceBenchRow {
  size: number;
  /** One write through Engram.save with dedupe (the default) and without, median and p95 ms. */
  saveDedupeP50Ms: number;
  saveDedupeP95Ms: number;
  savePlainP50Ms: number;
  savePlainP95Ms: number;
  /** Ratio of the medians: what dedupe adds to a write. */
  dedupeWriteRatio: number;
  /** Share of restatements of stored memories (one word added) that dedupe on write merged: its recall. */
  restatementsMerged: number;
  /** A dry run of `engram dedupe` over every scope (the whole store), ms. */
  dedupeScanMs: number;
  /** A dry run of aging over every scope, ms. */
  agingScanMs: number;
}

const WRITES = 200;
const RESTATEMENTS = 200;

/** Loads synthetic memories in bulk, then times writes and maintenance scans against them. */
export async function benchMaintenance(sizes: readonly number[]): Promise<MaintenanceBenchRow[]> {
  const directory = mkdtempSync(join(tmpdir(), 'engram-bench-maintenance-'));
  const rows: MaintenanceBenchRow[] = [];
  try {
    for (const size of sizes) {
      const store = new SqliteMemoryStore({ path: join(directory, `${size}.db`) });
      await store.open();
      const random = seededRandom(size);
      const vocabulary = makeVocabulary(Math.max(2_000, size / 5), random);
      const memories = makeMemories(size, { seed: size, scopeCount: 20, vocabulary });
      for (let start = 0; start < memories.length; start += 5_000)
        await store.createMany(memories.slice(start, start + 5_000), { actor: 'bench' });
      const engram = new Engram({ store, defaultScope: 'project:bench-0', readScopes: ['project:bench-0', 'global'] });
      // New statements drawn like the stored ones: mostly not duplicates, as in real extraction.
      const fresh = makeMemories(WRITES * 2, { seed: size + 1, scopeCount: 20, vocabulary });
      const withDedupe: number[] = [];
      const plain: number[] = [];
      for (let index = 0; index < WRITES; index += 1) {
        withDedupe.push(await timeMs(() => engram.save(fresh[index]!)));
        plain.push(await timeMs(() => engram.save(fresh[WRITES + index]!, { dedupe: false })));
      }
      // Restatements of stored memories: the same sentence with one more word must find its original.
      const pick = seededRandom(size + 2);
      let merged = 0;
      for (let index = 0; index < RESTATEMENTS; index += 1) {
        const original = memories[Math.floor(pick() * memories.length)]!;
        const result = await engram.save({ ...original, content: `${original.content.replace(/\.$/, '')} indeed.` });
        if (result.action === 'merged') merged += 1;
      }
      const scopes = Object.keys((await store.stats()).byScope);
      const dedupeScanMs = await timeMs(() => engram.dedupe({ scopes }));
      const agingScanMs = await timeMs(() => engram.age({ allScopes: true, dryRun: true }));
      rows.push({
        size,
        saveDedupeP50Ms: round(median(withDedupe)),
        saveDedupeP95Ms: round(quantile(withDedupe, 0.95)),
        savePlainP50Ms: round(median(plain)),
        savePlainP95Ms: round(quantile(plain, 0.95)),
        dedupeWriteRatio: round(median(withDedupe) / median(plain), 2),
        restatementsMerged: round(merged / RESTATEMENTS, 3),
        dedupeScanMs: round(dedupeScanMs, 1),
        agingScanMs: round(agingScanMs, 1),
      });
      await store.close();
    }
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
  return rows;
}
