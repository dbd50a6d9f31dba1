import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteMemoryStore } from '../src/adapters/sqlite/sqlite-memory-store.js';
import { Engram } from '../src/engram.js';
import type { MemoryStore } from '../src/contracts/memory-store.js';
import { makeMemories, makeQueries, makeVocabulary, seededRandom } from './synthetic-memories.js';
import { median, quantile, round, timeMs } from './statistics.js';

export interface StoreBenchRow {
  backend: string;
  size: number;
  singleWritesPerSecond: number;
  batchedWritesPerSecond: number;
  recallP50Ms: number;
  recallP95Ms: number;
  /** Recall as an agent runs it: the same, plus recording the hits (a write transaction). */
  recallWithHitsP95Ms: number;
  queries: number;
}

export interface ProcessBenchRow {
  size: number;
  baselineMedianMs: number;
  recallMedianMs: number;
  ratio: number;
  runs: number;
}

const BATCH = 1_000;
const SINGLE_WRITES = 500;
const QUERIES = 2_000;

/**
 * Fills a store with `size` synthetic memories in batches and measures writes and full-text recall.
 * `settle` runs between the writes and the recall (Postgres: ANALYZE, which autovacuum does within
 * a minute of a bulk load in a real deployment).
 */
export async function benchStore(
  backend: string,
  store: MemoryStore,
  size: number,
  settle?: () => Promise<void>,
): Promise<StoreBenchRow> {
  const vocabulary = makeVocabulary(5_000, seededRandom(7));
  const memories = makeMemories(size, { seed: size, scopeCount: 20, vocabulary });
  const actor = { actor: 'bench' };

  let batchedMs = 0;
  for (let start = 0; start < memories.length; start += BATCH) {
    const batch = memories.slice(start, start + BATCH);
    batchedMs += await timeMs(() => store.createMany(batch, actor));
  }

  const singles = makeMemories(SINGLE_WRITES, { seed: size + 1, scopeCount: 20, vocabulary });
  const singleMs = await timeMs(async () => {
    for (const memory of singles) await store.create(memory, actor);
  });

  await settle?.();
  const engram = new Engram({ store });
  const queries = makeQueries(memories, QUERIES + 50, size + 2);
  const latencies: number[] = [];
  for (const [index, query] of queries.entries()) {
    const elapsed = await timeMs(() =>
      engram.recall(query.text, { scopes: [query.scope, 'global'], recordAccess: false }),
    );
    if (index >= 50) latencies.push(elapsed); // the first 50 warm caches
  }
  const withHits: number[] = [];
  for (const query of queries.slice(0, 300)) {
    withHits.push(await timeMs(() => engram.recall(query.text, { scopes: [query.scope, 'global'] })));
  }
  return {
    backend,
    size,
    singleWritesPerSecond: Math.round((SINGLE_WRITES / singleMs) * 1000),
    batchedWritesPerSecond: Math.round((memories.length / batchedMs) * 1000),
    recallP50Ms: round(median(latencies)),
    recallP95Ms: round(quantile(latencies, 0.95)),
    recallWithHitsP95Ms: round(quantile(withHits, 0.95)),
    queries: latencies.length,
  };
}

/** Runs the SQLite store bench at each size on a fresh file; returns the rows and the 10K file for the process bench. */
export async function benchSqlite(sizes: readonly number[]): Promise<{ rows: StoreBenchRow[]; directory: string }> {
  const directory = mkdtempSync(join(tmpdir(), 'engram-bench-'));
  const rows: StoreBenchRow[] = [];
  for (const size of sizes) {
    const store = new SqliteMemoryStore({ path: join(directory, `${size}.db`) });
    await store.open();
    rows.push(await benchStore('sqlite', store, size));
    await store.close();
  }
  return { rows, directory };
}

/** `engram recall` as a whole process against `node -e ''`, interleaved, medians of `runs` each. */
export function benchRecallProcess(cliPath: string, databasePath: string, size: number, runs = 25): ProcessBenchRow {
  const home = mkdtempSync(join(tmpdir(), 'engram-bench-home-'));
  const environment = { ...process.env, ENGRAM_HOME: home, ENGRAM_STORE: databasePath };
  const run = (args: string[]): number => {
    const start = process.hrtime.bigint();
    const result = spawnSync(process.execPath, args, { env: environment, cwd: home, encoding: 'utf8' });
    const elapsed = Number(process.hrtime.bigint() - start) / 1e6;
    if (result.status !== 0) throw new Error(`${args.join(' ')} failed: ${result.stderr}`);
    return elapsed;
  };
  const baseline: number[] = [];
  const recall: number[] = [];
  const recallArgs = [
    cliPath,
    'recall',
    'what did we decide about the kalo testing setup',
    '--scope',
    'project:bench-3,global',
  ];
  run(['-e', '']);
  run(recallArgs);
  for (let index = 0; index < runs; index += 1) {
    baseline.push(run(['-e', '']));
    recall.push(run(recallArgs));
  }
  rmSync(home, { recursive: true, force: true });
  const baselineMedianMs = round(median(baseline), 1);
  const recallMedianMs = round(median(recall), 1);
  return { size, baselineMedianMs, recallMedianMs, ratio: round(recallMedianMs / baselineMedianMs, 2), runs };
}
