import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteMemoryStore } from '../../src/adapters/sqlite/sqlite-memory-store.js';
import { runDream } from '../../src/consolidation/run-dream.js';
import { DEFAULT_SETTINGS } from '../../src/kernel/settings.js';
import { bulkDistinctFacts, factMemories, FACTS_SCOPE } from '../fixtures/distinct-facts-corpus.js';

// Issue 26, item 1: a dream overturns a fact only when the same subject got a new value. A real
// dream (rules only) on a SQLite store holding the hand-written corpus of distinct-but-similar
// facts beside true updates, and a bulk store of templated distinct facts like the one the issue
// measured (1,533 of 1,554 invalidated before).

const NOW = '2026-04-01T00:00:00.000Z';
let directory: string | undefined;
afterEach(async () => {
  if (directory) await rm(directory, { recursive: true, force: true });
  directory = undefined;
});

async function storeWith(memories: Array<{ id: string; content: string; createdAt: string }>, scope: string) {
  directory = await mkdtemp(join(tmpdir(), 'engram-distinct-facts-'));
  const store = new SqliteMemoryStore({ path: join(directory, 'memory.db'), now: () => new Date(NOW) });
  await store.open();
  await store.importMany(
    memories.map((memory) => ({ ...memory, scope, importance: 0.6, lastAccessedAt: NOW })),
    { onExisting: 'fail' },
    { actor: 'seed' },
  );
  return store;
}

describe('the dream and distinct facts', () => {
  it('invalidates none of the distinct facts and every older statement of a true update', async () => {
    const memories = factMemories();
    const store = await storeWith(memories, FACTS_SCOPE);
    try {
      const report = await runDream(
        { store, settings: DEFAULT_SETTINGS, now: () => new Date(NOW) },
        { trigger: 'manual', scopes: [FACTS_SCOPE] },
      );
      expect(report.status).toBe('applied');
      const invalid = new Set(
        (await store.list({ scopes: [FACTS_SCOPE], invalid: 'only', archived: 'include' })).map((memory) => memory.id),
      );
      const wronglyInvalid = memories.filter((memory) => memory.kind === 'distinct' && invalid.has(memory.id));
      expect(wronglyInvalid.map((memory) => memory.content)).toEqual([]);
      const olders = memories.filter((memory) => memory.kind === 'update' && memory.role === 'older');
      expect(olders.filter((memory) => !invalid.has(memory.id)).map((memory) => memory.content)).toEqual([]);
      // The newer statement of an update stands (a later update of the same subject may overturn it in turn).
      const newersInvalid = memories.filter(
        (memory) => memory.kind === 'update' && memory.role === 'newer' && invalid.has(memory.id),
      );
      expect(newersInvalid).toEqual([]);
    } finally {
      await store.close();
    }
  });

  it('leaves a bulk store of 1,554 templated distinct facts as it was', async () => {
    const memories = bulkDistinctFacts(1_554);
    const store = await storeWith(memories, FACTS_SCOPE);
    try {
      const report = await runDream(
        { store, settings: DEFAULT_SETTINGS, now: () => new Date(NOW) },
        { trigger: 'manual', scopes: [FACTS_SCOPE] },
      );
      expect(report.steps.filter((step) => step.kind === 'invalidate' || step.kind === 'supersede')).toEqual([]);
      expect(await store.count({ scopes: [FACTS_SCOPE], invalid: 'only', archived: 'include' })).toBe(0);
    } finally {
      await store.close();
    }
  }, 60_000);
});
