/**
 * What the recall signals cost: recall p50/p95 on the store bench's synthetic memories with the
 * defaults and with the settings before issue 18 (signals off, top_k 6), interleaved query by query
 * in one process, so a loaded machine slows both alike and the ratio stays meaningful.
 *
 *   npx tsx bench/recall-signals-latency.ts [sizes, default 10000,100000]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteMemoryStore } from '../src/adapters/sqlite/sqlite-memory-store.js';
import { Engram } from '../src/engram.js';
import { DEFAULT_SETTINGS, type Settings } from '../src/kernel/settings.js';
import { makeMemories, makeQueries, makeVocabulary, seededRandom } from './synthetic-memories.js';
import { median, quantile, round, timeMs } from './statistics.js';

const BEFORE: Settings = {
  ...DEFAULT_SETTINGS,
  recall: {
    ...DEFAULT_SETTINGS.recall,
    dateWeight: 0,
    timeMentionWeight: 0,
    secondHopWeight: 0,
    duplicateSimilarity: 1,
    contextSittingWeight: 0,
    topK: 6,
    minScore: 0.25,
  },
};

async function main(): Promise<void> {
  const sizes = (process.argv[2] ?? '10000,100000').split(',').map(Number);
  const directory = mkdtempSync(join(tmpdir(), 'engram-signals-latency-'));
  const rows = [];
  try {
    for (const size of sizes) {
      const vocabulary = makeVocabulary(5_000, seededRandom(7));
      const memories = makeMemories(size, { seed: size, scopeCount: 20, vocabulary });
      const store = new SqliteMemoryStore({ path: join(directory, `${size}.db`) });
      await store.open();
      for (let start = 0; start < memories.length; start += 1_000)
        await store.createMany(memories.slice(start, start + 1_000), { actor: 'bench' });
      const engrams = { defaults: new Engram({ store }), before: new Engram({ store, settings: BEFORE }) };
      const latencies = { defaults: [] as number[], before: [] as number[] };
      const queries = makeQueries(memories, 1_050, size + 2);
      for (const [index, query] of queries.entries()) {
        for (const side of ['defaults', 'before'] as const) {
          const elapsed = await timeMs(() =>
            engrams[side].recall(query.text, { scopes: [query.scope, 'global'], recordAccess: false }),
          );
          if (index >= 50) latencies[side].push(elapsed);
        }
      }
      await store.close();
      for (const side of ['before', 'defaults'] as const)
        rows.push({
          memories: size,
          settings:
            side === 'before'
              ? 'before issue 18 (signals off, top_k 6)'
              : `defaults (signals on, top_k ${DEFAULT_SETTINGS.recall.topK})`,
          'recall p50 ms': round(median(latencies[side])),
          'recall p95 ms': round(quantile(latencies[side], 0.95)),
        });
    }
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
  console.log('\nRecall latency, SQLite, signals on and off, interleaved in one process');
  console.table(rows);
}

await main();
