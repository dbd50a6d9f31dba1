import type { Memory } from '../memory/memory.js';
import type { DreamMemoryDiff, DreamStep, DroppedProposal } from './dream-plan.js';

/**
 * A dream plans from the memories as it read them; a person (or another process) may change one
 * while it runs. Such a memory's steps are dropped, never written over the edit (issue 26), and so
 * is every step that leaned on it: a merge into a keeper that was edited, an invalidation by a newer
 * memory that was edited, and, in turn, every other step of the memories those steps touch (a
 * memory's steps build on each other, so they go together). Pure.
 */

/** The version of every memory a plan's steps name (the step's own memory and the ones it leans on), as read. */
export function versionsRead(steps: readonly DreamStep[], read: ReadonlyMap<string, Memory>): Record<string, string> {
  const versions: Record<string, string> = {};
  for (const step of steps)
    for (const id of [step.memoryId, ...step.relatedIds]) {
      const memory = read.get(id);
      if (memory) versions[id] = memory.updatedAt;
    }
  return versions;
}

/** Which of `versions` a memory no longer matches (`current` undefined: the memory is gone). */
export function changedSince(
  versions: Readonly<Record<string, string>>,
  current: (id: string) => Memory | undefined,
): Set<string> {
  return new Set(Object.keys(versions).filter((id) => current(id)?.updatedAt !== versions[id]));
}

export interface PlanAfterEdits {
  steps: DreamStep[];
  diffs: DreamMemoryDiff[];
  /** The steps dropped, each with its reason. */
  dropped: DroppedProposal[];
}

/** Drops the steps a change to `changed` memories invalidates (see the top of this file). */
export function dropChangedSteps(
  plan: { steps: readonly DreamStep[]; diffs: readonly DreamMemoryDiff[] },
  changed: ReadonlySet<string>,
): PlanAfterEdits {
  if (changed.size === 0) return { steps: [...plan.steps], diffs: [...plan.diffs], dropped: [] };
  const affected = new Map<string, string>([...changed].map((id) => [id, id]));
  const dropped = new Set<DreamStep>();
  for (let grew = true; grew;) {
    grew = false;
    for (const step of plan.steps) {
      if (dropped.has(step)) continue;
      const cause = [step.memoryId, ...step.relatedIds].find((id) => affected.has(id));
      if (cause === undefined) continue;
      dropped.add(step);
      for (const id of [step.memoryId, ...step.relatedIds])
        if (!affected.has(id)) {
          affected.set(id, affected.get(cause)!);
          grew = true;
        }
    }
  }
  return {
    steps: plan.steps.filter((step) => !dropped.has(step)),
    diffs: plan.diffs.filter((diff) => !affected.has(diff.memoryId)),
    dropped: plan.steps
      .filter((step) => dropped.has(step))
      .map((step) => {
        const cause = [step.memoryId, ...step.relatedIds].find((id) => changed.has(id)) ?? step.memoryId;
        const origin = affected.get(cause) ?? cause;
        return {
          proposal: { kind: step.kind, memoryId: step.memoryId, relatedIds: step.relatedIds },
          by: step.by,
          reason:
            origin === step.memoryId
              ? `${step.kind} of ${step.memoryId} not applied: the memory changed while the dream ran (the edit stands)`
              : `${step.kind} of ${step.memoryId} not applied: ${origin}, which it goes with, changed while the dream ran (the edit stands)`,
        };
      }),
  };
}
