import { rmSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import type { StoreBenchRow } from './store-bench.js';

// Child process of the `baseline` bench part: runs one engram tree's own SQLite store bench
// (its bench/store-bench.ts, with its own driver) and prints the rows as JSON on the last line.
// Run with the tree as the working folder, so its imports resolve against its node_modules.
const [storeBenchPath, sizesArgument] = process.argv.slice(2);
if (!storeBenchPath || !sizesArgument) throw new Error('usage: baseline-store-runner <store-bench.ts> <sizes>');
const { benchSqlite } = (await import(pathToFileURL(storeBenchPath).href)) as {
  benchSqlite: (sizes: readonly number[]) => Promise<{ rows: StoreBenchRow[]; directory: string }>;
};
const { rows, directory } = await benchSqlite(sizesArgument.split(',').map(Number));
rmSync(directory, { recursive: true, force: true });
console.log(JSON.stringify(rows));
