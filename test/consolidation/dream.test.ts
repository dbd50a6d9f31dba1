import { afterEach, describe, expect, it } from 'vitest';
import { runDream } from '../../src/consolidation/run-dream.js';
import { queueDream, readDreamState } from '../../src/consolidation/dream-state.js';
import type { DreamDependencies } from '../../src/consolidation/dream-inputs.js';
import { changeSetEntries, readChangeSet } from '../../src/consolidation/change-sets.js';
import { rewriteRelativeDates } from '../../src/consolidation/relative-dates.js';
import { checkTimeGates, EMPTY_DREAM_STATE } from '../../src/consolidation/dream-gates.js';
import { DEFAULT_SETTINGS } from '../../src/kernel/settings.js';
import { ScriptedLanguageModel } from '../../src/testing/scripted-language-model.js';
import { CORPUS_SCOPE, OTHER_SCOPE } from '../fixtures/dream-corpus.js';
import { contentFields, openSeededStore, snapshot, type SeededStore, undoIn } from './dream-support.js';

let seeded: SeededStore | undefined;
afterEach(async () => {
  await seeded?.close();
  seeded = undefined;
});

function dependencies(store: SeededStore, extra: Partial<DreamDependencies> = {}): DreamDependencies {
  return {
    store: store.store,
    settings: DEFAULT_SETTINGS,
    now: () => new Date(store.clock.now),
    instructions: store.corpus.instructions,
    ...extra,
  };
}

describe('offline dream over the seeded corpus', () => {
  it('plans every planted merge, invalidation, date, annotation and archive, and nothing the guards protect', async () => {
    seeded = await openSeededStore();
    const { corpus } = seeded;
    expect(corpus.memories.length).toBeGreaterThanOrEqual(200);
    const before = await snapshot(seeded.store);
    const report = await runDream(dependencies(seeded), { trigger: 'manual', scopes: [CORPUS_SCOPE], dryRun: true });
    expect(report.status).toBe('planned');
    // A dry run changes nothing.
    expect(await snapshot(seeded.store)).toEqual(before);

    const merges = report.steps.filter((step) => step.kind === 'merge');
    expect(
      merges.map((step) => ({ keeper: step.memoryId, duplicates: [...step.relatedIds].sort() })).sort(byKeeper),
    ).toEqual(corpus.merges.map((merge) => ({ ...merge, duplicates: [...merge.duplicates].sort() })).sort(byKeeper));
    const invalidations = report.steps.filter((step) => step.kind === 'invalidate');
    expect(invalidations.map((step) => ({ older: step.memoryId, newer: step.relatedIds[0] }))).toEqual(
      expect.arrayContaining(corpus.invalidations),
    );
    expect(invalidations).toHaveLength(corpus.invalidations.length);
    for (const step of invalidations) {
      const newer = before.get(step.relatedIds[0]!)!;
      expect(step.after.invalidAt).toBe(newer.validFrom);
      expect(step.after.supersededBy).toBe(newer.id);
    }
    for (const { id, expected } of corpus.dates) {
      const diff = report.diffs.find((candidate) => candidate.memoryId === id);
      expect(diff?.after.content, id).toContain(expected);
    }
    const touched = new Set(report.diffs.map((diff) => diff.memoryId));
    for (const [a, b] of corpus.guarded) {
      expect(touched.has(a), a).toBe(false);
      expect(touched.has(b), b).toBe(false);
    }
    for (const id of corpus.untouchable) expect(touched.has(id), id).toBe(false);
    expect(report.instructionConflicts.map((conflict) => conflict.memoryId)).toEqual([corpus.instructionConflict]);
    expect(report.steps.find((step) => step.kind === 'archive')?.memoryId).toBe(corpus.aging);
    expect(report.summary).toBe(`improved ${report.diffs.length} memories`);
    expect(report.index[0]).toMatchObject({ scope: CORPUS_SCOPE, truncated: true });
  });

  it('applies one change set with actor dream, never deletes, and undo gives back every field', async () => {
    seeded = await openSeededStore();
    const before = await snapshot(seeded.store);
    const countBefore = (await seeded.store.stats()).total;
    const report = await runDream(dependencies(seeded), { trigger: 'manual', scopes: [CORPUS_SCOPE] });
    expect(report.status).toBe('applied');
    expect(report.changeSetId).toMatch(/^cs_/);
    expect((await seeded.store.stats()).total).toBe(countBefore);
    expect(report.countAfter).toBe(report.countBefore);
    const record = (await readChangeSet(seeded.store, report.changeSetId!))!;
    const entries = await changeSetEntries(seeded.store, record);
    expect(entries).toHaveLength(report.diffs.length);
    expect(new Set(entries.map((entry) => entry.actor))).toEqual(new Set(['dream']));
    // History names what the dream did: merged and overturned memories invalidated, aged ones archived.
    const actionOf = new Map(entries.map((entry) => [entry.memoryId, entry.action]));
    for (const diff of report.diffs) {
      const expected =
        diff.before.invalidAt === null && diff.after.invalidAt !== null
          ? 'invalidate'
          : !diff.before.archived && diff.after.archived
            ? 'archive'
            : 'update';
      expect(actionOf.get(diff.memoryId), diff.memoryId).toBe(expected);
    }
    expect(new Set(actionOf.values())).toEqual(new Set(['invalidate', 'archive', 'update']));
    // Recall reads current facts: a superseded duplicate is out of full-text search.
    const superseded = report.steps.find((step) => step.kind === 'supersede')!;
    const after = (await seeded.store.get(superseded.memoryId))!;
    expect(after.supersededBy).toBe(superseded.relatedIds[0]);
    // A second dream finds nothing left of what the first did: planted duplicates left, 0.
    const again = await runDream(dependencies(seeded), { trigger: 'manual', scopes: [CORPUS_SCOPE], dryRun: true });
    expect(again.steps.filter((step) => step.kind === 'merge' || step.kind === 'invalidate')).toEqual([]);

    seeded.clock.now += 60_000;
    const undo = await undoIn(seeded, report.changeSetId!);
    expect(undo.undone).toHaveLength(report.diffs.length);
    const restored = await snapshot(seeded.store);
    expect(restored.size).toBe(before.size);
    for (const [id, memory] of before) expect(contentFields(restored.get(id)!), id).toEqual(contentFields(memory));
    await expect(undoIn(seeded, report.changeSetId!, { now: () => new Date() })).rejects.toMatchObject({
      code: 'UNDO_CONFLICT',
    });
  });

  it('refuses to undo a change set when a memory changed since, and changes nothing', async () => {
    seeded = await openSeededStore();
    const report = await runDream(dependencies(seeded), { trigger: 'manual', scopes: [CORPUS_SCOPE] });
    const edited = report.diffs.find((diff) => diff.after.invalidAt === null && !diff.after.archived)!;
    await seeded.store.update(edited.memoryId, { importance: 0.99 }, { actor: 'user' });
    const before = await snapshot(seeded.store);
    await expect(undoIn(seeded, report.changeSetId!, { now: () => new Date() })).rejects.toMatchObject({
      code: 'UNDO_CONFLICT',
    });
    expect(await snapshot(seeded.store)).toEqual(before);
    await expect(
      undoIn(seeded, report.changeSetId!, { scopes: [OTHER_SCOPE], now: () => new Date() }),
    ).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });
});

describe('dream with a scripted model', () => {
  it('applies the valid steps across wording and drops only the bad ones, never touching another scope', async () => {
    seeded = await openSeededStore();
    const { corpus } = seeded;
    const [guardA, guardB] = corpus.guarded[0]!;
    const archived = corpus.untouchable[0]!;
    const foreign = corpus.untouchable.find((id) => id.startsWith('other-'))!;
    const plan = [
      ...corpus.modelMerges.map((merge) => ({ kind: 'merge', keeperId: merge.keeper, duplicateIds: merge.duplicates })),
      ...corpus.modelInvalidations.map((item) => ({
        kind: 'invalidate',
        memoryId: item.older,
        supersededBy: item.newer,
      })),
      { kind: 'merge', keeperId: guardA, duplicateIds: [guardB] },
      { kind: 'condense', memoryId: archived, content: 'short' },
      { kind: 'invalidate', memoryId: foreign, supersededBy: corpus.modelInvalidations[0]!.newer },
      { kind: 'archive', memoryId: 'no-such-memory' },
      { kind: 'explode', memoryId: guardA },
      'not a step',
      { kind: 'rewrite-dates', memoryId: guardA, content: '' },
    ];
    const model = new ScriptedLanguageModel({
      script: [`Here is the plan:\n\`\`\`json\n${JSON.stringify(plan)}\n\`\`\``],
    });
    const foreignBefore = await seeded.store.get(foreign);
    const report = await runDream(dependencies(seeded, { model }), { trigger: 'manual', scopes: [CORPUS_SCOPE] });
    expect(model.calls).toBe(1);
    expect(report.model).toMatchObject({ calls: 1, malformed: [] });
    const byModel = report.steps.filter((step) => step.by === 'model');
    expect(
      byModel
        .filter((step) => step.kind === 'merge')
        .map((step) => step.memoryId)
        .sort(),
    ).toEqual(corpus.modelMerges.map((merge) => merge.keeper).sort());
    expect(byModel.find((step) => step.kind === 'invalidate')?.memoryId).toBe(corpus.modelInvalidations[0]!.older);
    const reasons = report.dropped.filter((item) => item.by === 'model').map((item) => item.reason);
    expect(reasons).toHaveLength(7);
    expect(reasons.join('\n')).toMatch(/order-differs/);
    expect(reasons.join('\n')).toMatch(/archived/);
    expect(reasons.join('\n')).toMatch(/another scope/);
    expect(reasons.join('\n')).toMatch(/no memory "no-such-memory"/);
    expect(reasons.join('\n')).toMatch(/unknown step kind/);
    expect(await seeded.store.get(foreign)).toEqual(foreignBefore);
    expect((await seeded.store.get(guardA))!.invalidAt).toBeNull();
  });

  it('goes on with the rules when the model answers bad JSON', async () => {
    seeded = await openSeededStore();
    const model = new ScriptedLanguageModel({ script: ['{"steps": [ {"kind": "merge", '] });
    const report = await runDream(dependencies(seeded, { model }), { trigger: 'manual', scopes: [CORPUS_SCOPE] });
    expect(report.model?.malformed).toHaveLength(1);
    expect(report.status).toBe('applied');
    expect(report.steps.filter((step) => step.kind === 'merge')).toHaveLength(seeded.corpus.merges.length);
  });
});

describe('gates', () => {
  const HOUR = 3_600_000;
  it('opens after 24 h, 10 minutes since the scan and 5 sessions; cancel keeps the last run, an error rolls it back', async () => {
    seeded = await openSeededStore();
    const store = seeded.store;
    const deps = dependencies(seeded);
    const scopes = [CORPUS_SCOPE];
    // The corpus's memories name 9 sessions since never: the first automatic run goes.
    const first = await runDream(deps, { trigger: 'automatic', scopes });
    expect(first.status).toBe('applied');
    const state = await readDreamState(store);
    expect(state.status).toBe('done');
    seeded.clock.now += 23 * HOUR;
    expect(await runDream(deps, { trigger: 'automatic', scopes })).toMatchObject({
      status: 'skipped',
      skipped: 'too-soon',
    });
    seeded.clock.now += 2 * HOUR;
    // No session since: the scan happens, and the gate says too few.
    expect(await runDream(deps, { trigger: 'automatic', scopes })).toMatchObject({ skipped: 'too-few-sessions' });
    seeded.clock.now += 5 * 60_000;
    expect(await runDream(deps, { trigger: 'automatic', scopes })).toMatchObject({ skipped: 'scanned-recently' });
    for (const session of ['s1', 's2', 's3', 's4', 's5']) await queueDream(store, { sessionId: session });
    await queueDream(store, { sessionId: 's5' });
    expect((await readDreamState(store)).sessions).toHaveLength(5);
    seeded.clock.now += 6 * 60_000;
    // A model that fails: the run errors and the last-run time goes back, so the next check retries.
    const failing = new ScriptedLanguageModel({ script: [{ error: new Error('model down') }] });
    const lastRun = (await readDreamState(store)).lastRunAt;
    await expect(runDream({ ...deps, model: failing }, { trigger: 'automatic', scopes })).rejects.toThrow('model down');
    expect(await readDreamState(store)).toMatchObject({ lastRunAt: lastRun, status: 'failed' });
    // A cancel keeps the new last-run time.
    seeded.clock.now += 11 * 60_000;
    const controller = new AbortController();
    const hanging = new ScriptedLanguageModel({
      script: [
        () => {
          setTimeout(() => controller.abort(), 10);
          return { hang: true };
        },
      ],
    });
    await expect(
      runDream({ ...deps, model: hanging }, { trigger: 'automatic', scopes, signal: controller.signal }),
    ).rejects.toThrow();
    const cancelled = await readDreamState(store);
    expect(cancelled.status).toBe('cancelled');
    expect(cancelled.lastRunAt).toBe(new Date(seeded.clock.now).toISOString());
    // A manual run ignores the time gates.
    expect((await runDream(deps, { trigger: 'manual', scopes })).status).not.toBe('skipped');
  });

  it('treats a run still marked running past the stale time as never having happened', () => {
    const now = Date.parse('2026-04-20T12:00:00Z');
    const state = {
      ...EMPTY_DREAM_STATE,
      status: 'running' as const,
      lastRunAt: new Date(now - 2 * HOUR).toISOString(),
      previousRunAt: new Date(now - 50 * HOUR).toISOString(),
    };
    expect(checkTimeGates(state, now, DEFAULT_SETTINGS).open).toBe(true);
    expect(checkTimeGates({ ...state, status: 'done' }, now, DEFAULT_SETTINGS)).toMatchObject({ reason: 'too-soon' });
  });

  it('skips when another holder has the lock', async () => {
    seeded = await openSeededStore();
    const deps = dependencies(seeded);
    let inner: unknown;
    await seeded.store.locks.hold('dream', async () => {
      inner = await runDream(deps, { trigger: 'manual', scopes: [CORPUS_SCOPE] });
    });
    expect(inner).toMatchObject({ status: 'skipped', skipped: 'locked' });
  });
});

describe('relative dates', () => {
  it('rewrites from the source time, leaves code and unknown phrases, and survives hostile text', () => {
    const at = '2026-03-10T15:00:00.000Z';
    expect(rewriteRelativeDates('We deployed yesterday.', at).text).toBe('We deployed on 9 March 2026.');
    expect(rewriteRelativeDates('Run `git log --since yesterday` today', at).text).toBe(
      'Run `git log --since yesterday` on 10 March 2026',
    );
    expect(rewriteRelativeDates('The day before yesterday it rained.', at).text).toBe('On 8 March 2026 it rained.');
    expect(rewriteRelativeDates('999 days ago', at).rewrites).toEqual([]);
    expect(rewriteRelativeDates('nothing here', 'not a date').text).toBe('nothing here');
    const hostile = `${'yesterday '.repeat(10_000)}\u0000`;
    expect(rewriteRelativeDates(hostile, at).rewrites).toHaveLength(10_000);
  });
});

function byKeeper(a: { keeper: string }, b: { keeper: string }): number {
  return a.keeper < b.keeper ? -1 : a.keeper > b.keeper ? 1 : 0;
}
