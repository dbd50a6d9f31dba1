/**
 * A light neutral-LoCoMo run for ranking work, lighter than `npm run bench`'s LoCoMo part: one
 * SQLite store per full-text setting, each given configuration recalled over the questions of the
 * chosen half (default: the tuning half, conversations 1-5), with recall@5/10/25, nDCG@10 and what
 * the defaults would inject. Never tune on the reported half (conversations 6-10).
 *
 *   npx tsx bench/locomo-tune.ts '[{"label":"defaults"},{"label":"no hop","recall":{"secondHopWeight":0}}]' [tuning|reported|both]
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteMemoryStore } from '../src/adapters/sqlite/sqlite-memory-store.js';
import { Engram } from '../src/engram.js';
import { DEFAULT_SETTINGS, type Settings } from '../src/kernel/settings.js';
import { mean, ndcgAtK, recallAtK } from '../src/eval/retrieval-metrics.js';
import { neutralLocomoDataset } from './locomo-bench.js';
import { round } from './statistics.js';

interface Configuration {
  label: string;
  recall?: Partial<Settings['recall']>;
  injection?: Partial<Settings['injection']>;
}

/** Conversations 1-5 (file order) tune; 6-10 are reported, as in the bench. */
const TUNING_CONVERSATIONS = ['conv-26', 'conv-30', 'conv-41', 'conv-42', 'conv-43'];

async function main(): Promise<void> {
  const configurations = JSON.parse(process.argv[2] ?? '[{"label":"defaults"}]') as Configuration[];
  const half = process.argv[3] ?? 'tuning';
  const full = neutralLocomoDataset();
  const only = process.env.TUNE_SCOPE;
  const dataset = only
    ? {
        ...full,
        memories: full.memories.filter((m) => m.scope === only),
        queries: full.queries.filter((q) => q.scope === only),
      }
    : full;
  if (process.env.TUNE_QSCOPE) dataset.queries = dataset.queries.filter((q) => q.scope === process.env.TUNE_QSCOPE);
  const inHalf = (id: string): boolean => {
    const tuning = TUNING_CONVERSATIONS.includes(id.slice(0, id.lastIndexOf(':')));
    return half === 'both' || (half === 'tuning') === tuning;
  };
  const queries = dataset.queries.filter((query) => inHalf(query.id));
  const newest = Math.max(...dataset.memories.map((memory) => Date.parse(memory.createdAt!)));
  const now = (): Date => new Date(newest + 1_000);
  const rows: Array<Record<string, string | number>> = [];
  const stores = new Map<string, SqliteMemoryStore>();
  const directory = await mkdtemp(join(tmpdir(), 'engram-tune-'));
  try {
    for (const configuration of configurations) {
      const settings: Settings = {
        ...DEFAULT_SETTINGS,
        recall: { ...DEFAULT_SETTINGS.recall, ...configuration.recall },
        injection: { ...DEFAULT_SETTINGS.injection, ...configuration.injection },
      };
      const fullText = {
        k1: settings.recall.fullTextK1,
        b: settings.recall.fullTextB,
        coverage: settings.recall.fullTextCoverage,
      };
      const key = JSON.stringify(fullText);
      let store = stores.get(key);
      if (!store) {
        store = new SqliteMemoryStore({
          path: join(directory, `${stores.size}.db`),
          limits: settings.memory,
          now,
          fullText,
        });
        await store.open();
        for (let start = 0; start < dataset.memories.length; start += 1_000)
          await store.createMany(dataset.memories.slice(start, start + 1_000), { actor: 'tune' });
        stores.set(key, store);
      }
      const engram = new Engram({ store, settings, now, actor: 'tune' });
      const recall: Record<number, number[]> = { 5: [], 10: [], 25: [] };
      const ndcg: number[] = [];
      const injected: number[] = [];
      const tokens: number[] = [];
      const started = performance.now();
      for (const query of queries) {
        const relevant = new Set(query.relevant);
        const result = await engram.recall(query.query, {
          scopes: [query.scope],
          topK: 25,
          minScore: 0,
          recordAccess: false,
        });
        const ranking = result.memories.map((entry) => entry.memory.id);
        for (const k of [5, 10, 25]) recall[k]!.push(recallAtK(ranking, relevant, k));
        ndcg.push(ndcgAtK(ranking, relevant, 10));
        if (process.env.TUNE_INJECT === '0') continue;
        const context = await engram.buildMemoryContext(query.query, {
          scopes: [query.scope],
          recordAccess: false,
          includeStaticPart: false,
        });
        injected.push(context.included.filter((entry) => relevant.has(entry.memory.id)).length / relevant.size);
        tokens.push(context.tokens.block);
      }
      rows.push({
        configuration: configuration.label,
        questions: queries.length,
        'R@5': round(mean(recall[5]!)),
        'R@10': round(mean(recall[10]!)),
        'R@25': round(mean(recall[25]!)),
        'nDCG@10': round(mean(ndcg)),
        injected: round(mean(injected)),
        'injected tokens': round(mean(tokens), 1),
        seconds: round((performance.now() - started) / 1_000, 1),
      });
      console.log(JSON.stringify(rows.at(-1)));
    }
  } finally {
    for (const store of stores.values()) await store.close();
    await rm(directory, { recursive: true, force: true });
  }
  console.log(`\nNeutral LoCoMo, ${half} half`);
  console.table(rows);
}

await main();
