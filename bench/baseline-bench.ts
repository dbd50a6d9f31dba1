import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import type { StoreBenchRow } from './store-bench.js';

/**
 * The `baseline` bench part (issue 12's "same run, side by side"): engram as it was before the
 * move to the `node:sqlite` API (the commit in bench/better-sqlite3-baseline.json, on better-sqlite3)
 * and engram as it is, each running its own store bench in a child process, in alternating rounds
 * on this machine now; medians of the rounds. A figure recorded on another day says as much about
 * that day's machine as about the code, so the ratio is taken here, in one run.
 *
 * The old tree is `git archive`d into bench/.baseline/<commit>/ and gets better-sqlite3 built there
 * once (its install script compiles it when no prebuild can be downloaded: a minute or two); the
 * rest of its node_modules are links to this checkout's.
 */
export interface BaselineRow {
  memories: number;
  'batched writes/s': number;
  'batched writes/s before': number;
  'writes ratio': number;
  'recall p50 ms': number;
  'recall p50 ms before': number;
  'recall p95 ms': number;
  'recall p95 ms before': number;
  'recall ratio': number;
}

export type BaselinePart =
  | {
      commit: string;
      driver: string;
      rounds: number;
      rows: BaselineRow[];
      runs: { before: StoreBenchRow[][]; now: StoreBenchRow[][] };
    }
  | { skipped: string };

interface BaselineRecord {
  commit?: string;
  betterSqlite3?: string;
}

/** Runs the old and the current store bench `rounds` times each, alternating, at `sizes`. */
export function benchBaselinePart(root: string, sizes: readonly number[], rounds = 2): BaselinePart {
  const record = JSON.parse(readFileSync(join(root, 'bench/better-sqlite3-baseline.json'), 'utf8')) as BaselineRecord;
  if (!record.commit || !record.betterSqlite3) return { skipped: 'bench/better-sqlite3-baseline.json names no commit' };
  let tree: string;
  try {
    tree = prepareBaselineTree(root, record.commit, record.betterSqlite3);
  } catch (error) {
    return { skipped: `the baseline tree could not be prepared: ${(error as Error).message.split('\n')[0]}` };
  }
  const before: StoreBenchRow[][] = [];
  const now: StoreBenchRow[][] = [];
  for (let round = 0; round < rounds; round += 1) {
    before.push(runStoreBench(root, tree, sizes));
    now.push(runStoreBench(root, root, sizes));
  }
  const median = (values: number[]): number => {
    const sorted = [...values].sort((a, b) => a - b);
    const middle = Math.floor(sorted.length / 2);
    return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
  };
  const round2 = (value: number): number => Math.round(value * 100) / 100;
  const of = (runs: StoreBenchRow[][], size: number, field: keyof StoreBenchRow): number =>
    round2(median(runs.map((rows) => Number(rows.find((row) => row.size === size)![field]))));
  const rows = sizes.map((size) => {
    const writes = of(now, size, 'batchedWritesPerSecond');
    const writesBefore = of(before, size, 'batchedWritesPerSecond');
    const p95 = of(now, size, 'recallP95Ms');
    const p95Before = of(before, size, 'recallP95Ms');
    return {
      memories: size,
      'batched writes/s': Math.round(writes),
      'batched writes/s before': Math.round(writesBefore),
      'writes ratio': round2(writes / writesBefore),
      'recall p50 ms': of(now, size, 'recallP50Ms'),
      'recall p50 ms before': of(before, size, 'recallP50Ms'),
      'recall p95 ms': p95,
      'recall p95 ms before': p95Before,
      'recall ratio': round2(p95 / p95Before),
    };
  });
  return {
    commit: record.commit,
    driver: `better-sqlite3 ${record.betterSqlite3}`,
    rounds,
    rows,
    runs: { before, now },
  };
}

function runStoreBench(root: string, tree: string, sizes: readonly number[]): StoreBenchRow[] {
  const output = execFileSync(
    join(root, 'node_modules/.bin/tsx'),
    [join(root, 'bench/baseline-store-runner.ts'), join(tree, 'bench/store-bench.ts'), sizes.join(',')],
    { cwd: tree, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 64 * 1024 * 1024 },
  );
  return JSON.parse(output.trim().split('\n').at(-1)!) as StoreBenchRow[];
}

/** bench/.baseline/<commit>: the old sources, better-sqlite3 built beside them, links for the rest. */
function prepareBaselineTree(root: string, commit: string, driverVersion: string): string {
  const tree = join(root, 'bench/.baseline', commit.slice(0, 12));
  const driver = join(tree, '.driver');
  if (!existsSync(join(tree, 'bench/store-bench.ts'))) {
    rmSync(tree, { recursive: true, force: true });
    mkdirSync(tree, { recursive: true });
    const archive = join(tree, 'tree.tar');
    execFileSync('git', ['-C', root, 'archive', '--format=tar', '-o', archive, commit], { stdio: 'pipe' });
    execFileSync('tar', ['-xf', archive, '-C', tree], { stdio: 'pipe' });
    rmSync(archive);
  }
  if (!existsSync(join(driver, 'node_modules/better-sqlite3/build/Release/better_sqlite3.node'))) {
    console.log(`(building better-sqlite3 ${driverVersion} for the baseline: once, a minute or two)`);
    mkdirSync(driver, { recursive: true });
    execFileSync(
      'npm',
      ['install', '--no-save', '--no-audit', '--no-fund', '--prefix', driver, `better-sqlite3@${driverVersion}`],
      { stdio: 'pipe' },
    );
  }
  const modules = join(tree, 'node_modules');
  rmSync(modules, { recursive: true, force: true });
  mkdirSync(modules);
  const link = (from: string, name: string): void => {
    if (name === '.bin' || name.startsWith('.package-lock')) return;
    if (!existsSync(join(modules, name))) symlinkSync(join(from, name), join(modules, name));
  };
  // The old driver's own packages first, so a name in both resolves to the driver's copy.
  for (const name of readdirSync(join(driver, 'node_modules'))) link(join(driver, 'node_modules'), name);
  for (const name of readdirSync(join(root, 'node_modules'))) link(join(root, 'node_modules'), name);
  return tree;
}
