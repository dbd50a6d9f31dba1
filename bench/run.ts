import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { benchLocomo } from './locomo-bench.js';
import { benchRecallProcess, benchSqlite } from './store-bench.js';
import { benchMaintenance } from './maintenance-bench.js';

/** `npm run bench`: store throughput and recall latency at 1K/10K/100K memories, and CLI start-up. */
async function main(): Promise<void> {
  const sizes = (process.env.ENGRAM_BENCH_SIZES ?? '1000,10000,100000').split(',').map(Number);
  const root = resolve(import.meta.dirname, '..');
  const started = new Date();

  const { rows, directory } = await benchSqlite(sizes);
  console.log('\nStore (in-process, SQLite)');
  console.table(
    rows.map((row) => ({
      memories: row.size,
      'single writes/s': row.singleWritesPerSecond,
      'batched writes/s': row.batchedWritesPerSecond,
      'recall p50 ms': row.recallP50Ms,
      'recall p95 ms': row.recallP95Ms,
      'recall + hits p95 ms': row.recallWithHitsP95Ms,
    })),
  );

  const processSize = sizes.includes(10_000) ? 10_000 : sizes[0]!;
  const processRow = benchRecallProcess(join(root, 'dist/surfaces/cli/main.js'), join(directory, `${processSize}.db`), processSize);
  console.log(`\n\`engram recall\` as a process at ${processSize} memories`);
  console.table([
    { command: "node -e ''", 'median ms': processRow.baselineMedianMs },
    { command: 'engram recall', 'median ms': processRow.recallMedianMs, ratio: processRow.ratio },
  ]);
  rmSync(directory, { recursive: true, force: true });

  const locomo = await benchLocomo();

  const maintenance = await benchMaintenance(sizes);
  console.log('\nDedupe on write and maintenance (in-process, SQLite)');
  console.table(maintenance);

  const results = {
    date: started.toISOString(),
    node: process.version,
    platform: `${process.platform}-${process.arch}`,
    store: rows,
    recallProcess: processRow,
    locomo: locomo ?? { skipped: 'LoCoMo data absent (../shared/data/locomo)' },
    maintenance,
  };
  const folder = join(root, 'bench/results');
  mkdirSync(folder, { recursive: true });
  const file = join(folder, `bench-${started.toISOString().replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
  writeFileSync(join(folder, 'latest.json'), `${JSON.stringify(results, null, 2)}\n`);
  console.log(`\nwrote ${file}`);
}

await main();
