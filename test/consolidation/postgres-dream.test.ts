import { afterAll, describe, expect, inject, it } from 'vitest';
import { PostgresMemoryStore } from '../../src/adapters/postgres/postgres-memory-store.js';
import { runDream } from '../../src/consolidation/run-dream.js';
import { undoChangeSet } from '../../src/consolidation/change-sets.js';
import { DEFAULT_SETTINGS } from '../../src/kernel/settings.js';
import { buildDreamCorpus, CORPUS_NOW, CORPUS_SCOPE } from '../fixtures/dream-corpus.js';
import { dropSchema, freshSchemaUrl } from '../support/postgres-schemas.js';
import { contentFields, snapshot } from './dream-support.js';

// Consolidation on a real PostgreSQL server: the lock across connections (two stores, like two
// machines) and the change set applied in one transaction and undone exactly.

const serverUrl = inject('postgresUrl') ?? '';
const schemas: string[] = [];
afterAll(async () => {
  for (const schema of schemas) await dropSchema(serverUrl, schema);
});

async function openSeeded(): Promise<{ url: string; store: PostgresMemoryStore }> {
  const { url, schema } = freshSchemaUrl(serverUrl, 'dream');
  schemas.push(schema);
  const store = new PostgresMemoryStore({ url, now: () => new Date(CORPUS_NOW) });
  await store.open();
  await store.importMany(buildDreamCorpus().memories, { onExisting: 'fail' }, { actor: 'seed' });
  return { url, store };
}

describe.skipIf(!serverUrl)('dream on PostgreSQL', () => {
  it('applies one change set, never deletes, and undo gives back every field', async () => {
    const { store } = await openSeeded();
    try {
      const before = await snapshot(store);
      const deps = { store, settings: DEFAULT_SETTINGS, now: () => new Date(CORPUS_NOW) };
      const report = await runDream(deps, { trigger: 'manual', scopes: [CORPUS_SCOPE] });
      expect(report.status).toBe('applied');
      expect(report.diffs.length).toBeGreaterThan(30);
      expect((await store.stats()).total).toBe(before.size);
      await undoChangeSet(store, {
        id: report.changeSetId!,
        scopes: [CORPUS_SCOPE],
        actor: 'test',
        now: () => new Date(),
      });
      const restored = await snapshot(store);
      for (const [id, memory] of before) expect(contentFields(restored.get(id)!), id).toEqual(contentFields(memory));
    } finally {
      await store.close();
    }
  }, 120_000);

  it('a dream on another connection skips while the lock is held, and runs once it is free', async () => {
    const { url, store } = await openSeeded();
    const other = new PostgresMemoryStore({ url, now: () => new Date(CORPUS_NOW) });
    await other.open();
    try {
      const deps = { settings: DEFAULT_SETTINGS, now: () => new Date(CORPUS_NOW) };
      let inner: unknown;
      await store.locks.hold('dream', async () => {
        inner = await runDream({ ...deps, store: other }, { trigger: 'manual', scopes: [CORPUS_SCOPE], dryRun: true });
      });
      expect(inner).toMatchObject({ status: 'skipped', skipped: 'locked' });
      const after = await runDream(
        { ...deps, store: other },
        { trigger: 'manual', scopes: [CORPUS_SCOPE], dryRun: true },
      );
      expect(after.status).toBe('planned');
    } finally {
      await other.close();
      await store.close();
    }
  }, 120_000);
});
