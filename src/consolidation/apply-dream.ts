import { isEngramError } from '../kernel/errors.js';
import { createSortableId } from '../kernel/ids.js';
import type { Settings } from '../kernel/settings.js';
import type { Memory } from '../memory/memory.js';
import { storeMemoryVectors } from '../remember/memory-vectors.js';
import { applyChangeSet, DREAM_ACTOR } from './change-sets.js';
import { changedSince, dropChangedSteps, versionsRead } from './changed-during-run.js';
import type { DreamDependencies } from './dream-inputs.js';
import { indexAfter, type DreamReport } from './dream-report.js';

/** Tries to apply a plan this many times when memories keep changing under it. */
const APPLY_ATTEMPTS = 5;

/**
 * Writes the plan as one change set, over nothing changed since the plan read it: before writing and
 * again inside the write transaction (`ifUpdatedAt`), a memory that changed meanwhile has its steps
 * dropped and reported, and the rest is written (`changed-during-run.ts`).
 */
export async function applyDream(
  dependencies: DreamDependencies,
  report: DreamReport,
  read: ReadonlyMap<string, Memory>,
  now: number,
): Promise<void> {
  const { store } = dependencies;
  const id = createSortableId('cs', now);
  for (let attempt = 1; report.diffs.length > 0; attempt += 1) {
    const versions = versionsRead(report.steps, read);
    const current = new Map(
      (await store.list({ scopes: report.scopes, archived: 'include', invalid: 'include' })).map((memory) => [
        memory.id,
        memory,
      ]),
    );
    const changed = changedSince(versions, (memoryId) => current.get(memoryId));
    if (changed.size > 0) dropChanged(report, changed, read, dependencies.settings);
    if (report.diffs.length === 0) return;
    // Recall may have counted hits meanwhile (not a change): the written state keeps them.
    for (const diff of report.diffs) {
      const latest = current.get(diff.memoryId)!;
      diff.after = { ...diff.after, hitCount: latest.hitCount, lastAccessedAt: latest.lastAccessedAt };
    }
    try {
      report.changeSetId = await applyChangeSet(store, {
        states: report.diffs.map((diff) => diff.after),
        scopes: report.scopes,
        actor: DREAM_ACTOR,
        stampedAt: report.diffs[0]!.after.updatedAt,
        now,
        summary: `dream: improved ${report.diffs.length} memor${report.diffs.length === 1 ? 'y' : 'ies'}`,
        ifUpdatedAt: versionsRead(report.steps, read),
        id,
      });
      return;
    } catch (error) {
      // An edit landed between the check above and the write: read again and drop what it touched.
      if (!isEngramError(error) || error.code !== 'CONFLICT' || attempt >= APPLY_ATTEMPTS) throw error;
      if (!Array.isArray(error.details?.changed)) throw error;
    }
  }
}

/** Drops the steps that memories changed since the plan read them touch; reports them and rebuilds the index figures. */
function dropChanged(
  report: DreamReport,
  changed: ReadonlySet<string>,
  read: ReadonlyMap<string, Memory>,
  settings: Settings,
): void {
  const after = dropChangedSteps(report, changed);
  report.steps = after.steps;
  report.diffs = after.diffs;
  report.dropped.push(...after.dropped);
  report.changedDuringRun = [...new Set([...(report.changedDuringRun ?? []), ...changed])];
  const kept = new Set(report.steps.filter((step) => step.kind === 'annotate').map((step) => step.memoryId));
  report.instructionConflicts = report.instructionConflicts.filter((conflict) => kept.has(conflict.memoryId));
  report.index = report.scopes.map((scope) =>
    indexAfter(
      scope,
      [...read.values()].filter((memory) => memory.scope === scope),
      report.diffs,
      settings,
    ),
  );
}

/** Recomputes the vectors of memories whose text the dream rewrote; a failure is a warning. */
export async function refreshVectors(dependencies: DreamDependencies, report: DreamReport): Promise<void> {
  const { embedder } = dependencies;
  const { vectors } = dependencies.store;
  const changed = report.diffs
    .filter((diff) => diff.after.content !== diff.before.content || diff.after.description !== diff.before.description)
    .map((diff) => diff.after);
  if (!embedder || !vectors || changed.length === 0) return;
  try {
    const result = await storeMemoryVectors({ vectors, embedder }, changed);
    report.warnings.push(...result.warnings);
  } catch {
    report.warnings.push('vectors-not-stored');
  }
}
