import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openEngram, type OpenedEngram } from '../src/node/open-engram.js';
import { syncStore } from '../src/sync/node/sync-store.js';
import { makeMemories, makeVocabulary, seededRandom } from './synthetic-memories.js';
import { median, round, timeMs } from './statistics.js';

// ENGRAM_BENCH_PARTS=sync: git sync (issue 29), two machines and a bare repository on disk. Per
// store size (ENGRAM_BENCH_SYNC_SIZES, default 10000,100000): the first sync of an existing store
// (it pushes every memory), the first sync of a new machine (it imports them all), and a sync
// after 1 change (median of ENGRAM_BENCH_SYNC_ROUNDS), beside the same 1-change sync on a store
// of 100 memories measured in the same run. Incremental sync reads the change feed, not the store:
// its ratio to the 100-memory sync should stay near 1 as the store grows.

interface SyncBenchRow {
  memories: number;
  firstPushMs: number;
  firstImportMs: number;
  oneChangeMedianMs: number;
  oneChangeMaxMs: number;
  /** One-change sync here ÷ the same on 100 memories. */
  ratioToSmallStore: number;
  /** One-change sync ÷ the first sync of this store. */
  ratioToFirstSync: number;
}

interface Machine {
  opened: OpenedEngram;
  cwd: string;
}

async function machine(root: string, name: string, remote: string): Promise<Machine> {
  const home = join(root, name, 'home');
  const cwd = join(root, name, 'work');
  mkdirSync(home, { recursive: true });
  mkdirSync(cwd, { recursive: true });
  const opened = await openEngram({
    cwd,
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: join(root, name),
      ENGRAM_HOME: home,
      ENGRAM_SYNC_REMOTE: remote,
      ENGRAM_SYNC_MACHINE: name,
      ENGRAM_MODEL_PROVIDER: 'none',
    },
    actor: `bench-${name}`,
  });
  return { opened, cwd };
}

function sync(target: Machine): Promise<unknown> {
  return syncStore({ opened: target.opened, cwd: target.cwd, onWarning: () => undefined });
}

async function measure(size: number, rounds: number): Promise<Omit<SyncBenchRow, 'ratioToSmallStore'>> {
  const root = mkdtempSync(join(tmpdir(), 'engram-bench-sync-'));
  const remote = join(root, 'remote.git');
  execFileSync('git', ['init', '--bare', '--quiet', remote]);
  const a = await machine(root, 'a', remote);
  const b = await machine(root, 'b', remote);
  try {
    const vocabulary = makeVocabulary(5_000, seededRandom(3));
    const memories = makeMemories(size, { seed: 5, scopeCount: 0, vocabulary });
    for (let start = 0; start < memories.length; start += 5_000)
      await a.opened.engram.store.createMany(memories.slice(start, start + 5_000), { actor: 'seed' });
    const firstPushMs = await timeMs(() => sync(a));
    const firstImportMs = await timeMs(() => sync(b));
    const times: number[] = [];
    for (let round = 0; round < rounds; round += 1) {
      await a.opened.engram.remember({ content: `Bench change ${round}: the build cache lives on volume ${round}.` });
      times.push(await timeMs(() => sync(a)));
    }
    const oneChangeMedianMs = median(times);
    return {
      memories: size,
      firstPushMs: round(firstPushMs, 0),
      firstImportMs: round(firstImportMs, 0),
      oneChangeMedianMs: round(oneChangeMedianMs, 1),
      oneChangeMaxMs: round(Math.max(...times), 1),
      ratioToFirstSync: round(oneChangeMedianMs / firstPushMs, 4),
    };
  } finally {
    await a.opened.close();
    await b.opened.close();
    rmSync(root, { recursive: true, force: true });
  }
}

export async function benchSyncPart(): Promise<SyncBenchRow[]> {
  const sizes = (process.env.ENGRAM_BENCH_SYNC_SIZES ?? '10000,100000').split(',').map(Number);
  const rounds = Number(process.env.ENGRAM_BENCH_SYNC_ROUNDS ?? 7);
  const small = await measure(100, rounds);
  const rows: SyncBenchRow[] = [];
  for (const size of sizes) {
    const row = await measure(size, rounds);
    rows.push({ ...row, ratioToSmallStore: round(row.oneChangeMedianMs / small.oneChangeMedianMs, 2) });
  }
  console.log(`\nGit sync (bare repository on disk; 1-change sync on 100 memories: ${small.oneChangeMedianMs} ms)`);
  console.table(rows);
  return rows;
}
