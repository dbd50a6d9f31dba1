import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { StoreBenchRow } from './store-bench.js';

/** The store figures recorded on better-sqlite3 before the move to the `node:sqlite` API (issue 12). */
interface DriverBaseline {
  recordedAt: string;
  driver: string;
  store: StoreBenchRow[];
  /** The engram commit these figures came from, and its better-sqlite3 version (the `baseline` part rebuilds it). */
  commit?: string;
  betterSqlite3?: string;
  install?: { seconds?: number; note?: string };
}

/** One row per size: today's figure beside the better-sqlite3 one and their ratio (target: within 15%). */
export interface DriverComparisonRow {
  memories: number;
  'batched writes/s': number;
  'batched writes/s before': number;
  'writes ratio': number;
  'recall p95 ms': number;
  'recall p95 ms before': number;
  'recall ratio': number;
}

/** Reads the recorded baseline (bench/better-sqlite3-baseline.json). */
export function readDriverBaseline(root: string): DriverBaseline {
  return JSON.parse(readFileSync(join(root, 'bench/better-sqlite3-baseline.json'), 'utf8')) as DriverBaseline;
}

/** Today's SQLite rows beside the recorded better-sqlite3 rows of the same size. */
export function compareWithDriverBaseline(
  rows: readonly StoreBenchRow[],
  baseline: DriverBaseline,
): DriverComparisonRow[] {
  const round = (value: number): number => Math.round(value * 100) / 100;
  return rows.flatMap((row) => {
    const before = baseline.store.find((entry) => entry.size === row.size);
    if (!before) return [];
    return [
      {
        memories: row.size,
        'batched writes/s': row.batchedWritesPerSecond,
        'batched writes/s before': before.batchedWritesPerSecond,
        'writes ratio': round(row.batchedWritesPerSecond / before.batchedWritesPerSecond),
        'recall p95 ms': row.recallP95Ms,
        'recall p95 ms before': before.recallP95Ms,
        'recall ratio': round(row.recallP95Ms / before.recallP95Ms),
      },
    ];
  });
}
