import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteMemoryStore } from '../src/adapters/sqlite/sqlite-memory-store.js';
import { runDream } from '../src/consolidation/run-dream.js';
import { DEFAULT_SETTINGS } from '../src/kernel/settings.js';
import { bulkDistinctFacts, factMemories, FACTS_SCOPE } from '../test/fixtures/distinct-facts-corpus.js';

/** What a dream did to the distinct-facts corpus and to a bulk store of templated distinct facts (issue 26). */
export interface DistinctFactsFigures {
  corpus: {
    distinctPairs: number;
    /** Memories of distinct pairs the dream invalidated (overturned or merged away). Target 0. */
    distinctInvalidated: number;
    trueUpdates: number;
    /** True updates whose older statement the dream invalidated. */
    updatesCaught: number;
    trueUpdateRecall: number;
    /** Newer statements of true updates invalidated (a wrong direction). Target 0. */
    newerInvalidated: number;
    examples: string[];
  };
  bulk: { memories: number; invalidated: number; ms: number };
}

const NOW = '2026-04-01T00:00:00.000Z';

/** Runs a real offline dream (SQLite, rules only) over both and counts. */
export async function measureDistinctFacts(bulkCount = 1_554): Promise<DistinctFactsFigures> {
  const directory = mkdtempSync(join(tmpdir(), 'engram-distinct-facts-'));
  try {
    const memories = factMemories();
    const invalid = await dreamOver(join(directory, 'corpus.db'), memories);
    const wrong = memories.filter((memory) => memory.kind === 'distinct' && invalid.has(memory.id));
    const olders = memories.filter((memory) => memory.kind === 'update' && memory.role === 'older');
    const caught = olders.filter((memory) => invalid.has(memory.id)).length;
    const bulk = bulkDistinctFacts(bulkCount);
    const started = performance.now();
    const bulkInvalid = await dreamOver(join(directory, 'bulk.db'), bulk);
    const ms = performance.now() - started;
    return {
      corpus: {
        distinctPairs: memories.filter((memory) => memory.kind === 'distinct').length / 2,
        distinctInvalidated: wrong.length,
        trueUpdates: olders.length,
        updatesCaught: caught,
        trueUpdateRecall: Math.round((caught / olders.length) * 1000) / 1000,
        newerInvalidated: memories.filter(
          (memory) => memory.kind === 'update' && memory.role === 'newer' && invalid.has(memory.id),
        ).length,
        examples: wrong.slice(0, 5).map((memory) => memory.content),
      },
      bulk: { memories: bulk.length, invalidated: bulkInvalid.size, ms: Math.round(ms) },
    };
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}

async function dreamOver(
  path: string,
  memories: ReadonlyArray<{ id: string; content: string; createdAt: string }>,
): Promise<Set<string>> {
  const store = new SqliteMemoryStore({ path, now: () => new Date(NOW) });
  await store.open();
  try {
    await store.importMany(
      memories.map(({ id, content, createdAt }) => ({
        id,
        content,
        createdAt,
        scope: FACTS_SCOPE,
        importance: 0.6,
        lastAccessedAt: NOW,
      })),
      { onExisting: 'fail' },
      { actor: 'seed' },
    );
    await runDream(
      { store, settings: DEFAULT_SETTINGS, now: () => new Date(NOW) },
      { trigger: 'manual', scopes: [FACTS_SCOPE] },
    );
    const invalid = await store.list({ scopes: [FACTS_SCOPE], invalid: 'only', archived: 'include' });
    return new Set(invalid.map((memory) => memory.id));
  } finally {
    await store.close();
  }
}
