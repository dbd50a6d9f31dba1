import { expect, it } from 'vitest';
import { undoChangeSet } from '../../src/consolidation/change-sets.js';
import { runDream } from '../../src/consolidation/run-dream.js';
import type { DreamReport } from '../../src/consolidation/dream-report.js';
import type { MemoryStore } from '../../src/contracts/memory-store.js';
import { DEFAULT_SETTINGS } from '../../src/kernel/settings.js';
import type { Memory } from '../../src/memory/memory.js';
import { ScriptedLanguageModel } from '../../src/testing/scripted-language-model.js';
import { runStoreWorker, unexpectedStderr } from '../../src/testing/store-write-worker-process.js';
import { buildDreamCorpus, CORPUS_NOW, CORPUS_SCOPE, type DreamCorpus } from '../fixtures/dream-corpus.js';

// Issue 26, item 2 (the cases; dream-concurrent-edit.test.ts and postgres-dream-concurrent-edit.test.ts run them): a dream applies a step only if its memory is still the version the plan read.
// A person's edit made by another process while the dream runs (here: while its model thinks, after
// the plan read the memories; or right before the change set is written) stands, and the steps it
// touches are dropped and reported. On SQLite and on PostgreSQL.

/** A store opened on an empty database, and the URL another process opens it by. */
export interface OpenedStore {
  store: MemoryStore;
  url: string;
}

/** The edits a person makes in another process: they change memories the rules' plan changes too. */
function personEdits(corpus: DreamCorpus) {
  const overturned = corpus.invalidations[0]!.older; // "…PostgreSQL 14…", overturned by the rules
  const keeper = corpus.merges[0]!.keeper; // a merge's keeper: its duplicates' steps go with it
  return {
    overturned,
    keeper,
    duplicates: corpus.merges[0]!.duplicates,
    edits: [
      { id: overturned, patch: { content: 'The staging database runs PostgreSQL 14 until the June migration.' } },
      { id: keeper, patch: { importance: 0.95 } },
    ],
  };
}

async function editInAnotherProcess(url: string, edits: ReturnType<typeof personEdits>['edits']): Promise<Memory[]> {
  const result = await runStoreWorker({ url, task: { mode: 'update', edits, actor: 'person' } });
  expect({ exitCode: result.exitCode, stderr: unexpectedStderr(result.stderr) }).toEqual({ exitCode: 0, stderr: '' });
  return result.ids.map((line) => JSON.parse(line) as Memory);
}

async function expectEditsStood(
  store: MemoryStore,
  report: DreamReport,
  edited: Memory[],
  plan: ReturnType<typeof personEdits>,
): Promise<void> {
  for (const memory of edited) expect(await store.get(memory.id)).toEqual(memory);
  expect(new Set(report.changedDuringRun)).toEqual(new Set([plan.overturned, plan.keeper]));
  const reasons = report.dropped.map((item) => item.reason).join('\n');
  expect(reasons).toContain(`invalidate of ${plan.overturned} not applied: the memory changed while the dream ran`);
  expect(reasons).toContain(`merge of ${plan.keeper} not applied`);
  for (const duplicate of plan.duplicates) {
    expect(reasons).toContain(`supersede of ${duplicate} not applied: ${plan.keeper}`);
    expect((await store.get(duplicate))!.invalidAt).toBeNull();
  }
  // Nothing of the dropped steps is in the plan applied; the rest is.
  const touched = new Set(report.diffs.map((diff) => diff.memoryId));
  for (const id of [plan.overturned, plan.keeper, ...plan.duplicates]) expect(touched.has(id)).toBe(false);
  expect(report.status).toBe('applied');
  expect(report.improved).toBeGreaterThan(20);
  // And the change set undoes exactly what was applied, the edits untouched.
  await undoChangeSet(store, { id: report.changeSetId!, scopes: [CORPUS_SCOPE], actor: 'test', now: () => new Date() });
  for (const memory of edited) expect(await store.get(memory.id)).toEqual(memory);
}

/** A fresh store holding the dream corpus, given to `work` with the person's planned edits, then closed. */
async function withCorpusStore(
  open: () => Promise<OpenedStore>,
  work: (opened: OpenedStore, plan: ReturnType<typeof personEdits>) => Promise<void>,
): Promise<void> {
  const opened = await open();
  try {
    const corpus = buildDreamCorpus();
    await opened.store.importMany(corpus.memories, { onExisting: 'fail' }, { actor: 'seed' });
    await work(opened, personEdits(corpus));
  } finally {
    await opened.store.close();
  }
}

/** The cases, for one backend (`open` gives a fresh empty store each time). */
export function concurrentEditCases(open: () => Promise<OpenedStore>): void {
  it('an edit made while the model plans stands; the steps it touches are dropped and reported', async () => {
    await withCorpusStore(open, async ({ store, url }, plan) => {
      let edited: Memory[] = [];
      const model = new ScriptedLanguageModel({
        script: [
          async () => {
            // The plan has read every memory by now; a person edits two of them from another process.
            edited = await editInAnotherProcess(url, plan.edits);
            return '[]';
          },
        ],
      });
      const report = await runDream(
        { store, settings: DEFAULT_SETTINGS, now: () => new Date(CORPUS_NOW), model },
        { trigger: 'manual', scopes: [CORPUS_SCOPE] },
      );
      expect(edited).toHaveLength(2);
      await expectEditsStood(store, report, edited, plan);
    });
  }, 120_000);

  it('an edit landing after the last check, right before the write, is caught in the write transaction', async () => {
    await withCorpusStore(open, async ({ store, url }, plan) => {
      let edited: Memory[] = [];
      let writes = 0;
      // The same store; its first change-set write waits until another process has edited.
      const timed = new Proxy(store, {
        get(target, property) {
          const value = Reflect.get(target, property, target) as unknown;
          if (typeof value !== 'function') return value;
          if (property !== 'importMany') return value.bind(target);
          return async (...args: unknown[]) => {
            writes += 1;
            if (writes === 1) edited = await editInAnotherProcess(url, plan.edits);
            return (value as (...parameters: unknown[]) => unknown).apply(target, args);
          };
        },
      });
      const report = await runDream(
        { store: timed, settings: DEFAULT_SETTINGS, now: () => new Date(CORPUS_NOW) },
        { trigger: 'manual', scopes: [CORPUS_SCOPE] },
      );
      expect(writes).toBe(2);
      await expectEditsStood(store, report, edited, plan);
    });
  }, 120_000);
}
