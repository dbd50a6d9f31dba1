import type { Memory } from '../memory/memory.js';
import type { MemoryStore } from '../contracts/memory-store.js';
import { planOffline } from './offline-plan.js';
import { resolvePlan } from './dream-plan.js';
import { proposeWithModel } from './model-plan.js';
import { selectGathered, type GatheredSession } from './gather.js';
import type { DreamDependencies } from './dream-inputs.js';
import { indexAfter, type DreamReport } from './dream-report.js';

/** Orient, gather and consolidate every scope on its own; fills the report's plan. Returns every memory read, by id. */
export async function planDream(
  dependencies: DreamDependencies,
  report: DreamReport,
  signal: AbortSignal,
  since: string | null,
): Promise<Map<string, Memory>> {
  const read = new Map<string, Memory>();
  const { store, settings, model } = dependencies;
  const now = dependencies.now().toISOString();
  const sessions = model ? await gatherSessions(dependencies, report, signal, since) : [];
  for (const scope of report.scopes) {
    signal.throwIfAborted();
    const memories = await store.list({
      scopes: [scope],
      archived: 'include',
      invalid: 'include',
      order: 'created-asc',
    });
    report.countBefore += memories.length;
    for (const memory of memories) read.set(memory.id, memory);
    const offline = planOffline({
      memories,
      settings,
      now,
      ...(dependencies.instructions && { instructions: dependencies.instructions }),
    });
    const proposals: Array<{ proposal: unknown; by: 'rules' | 'model' }> = offline.proposals.map((proposal) => ({
      proposal,
      by: 'rules',
    }));
    const active = memories.filter((memory) => !memory.archived && memory.invalidAt === null);
    if (model && active.length > 1) {
      const tools = dependencies.openTools ? await dependencies.openTools(scope) : [];
      const gathered = selectGathered({ sessions, memories: active, maxTokens: settings.dream.gatherMaxTokens });
      if (gathered.sessions > 0) {
        report.gathered ??= { sessions: 0, notes: 0, messages: 0, tokens: 0 };
        for (const key of ['sessions', 'notes', 'messages', 'tokens'] as const) report.gathered[key] += gathered[key];
      }
      const result = await proposeWithModel({
        model,
        settings,
        memories: active,
        tools,
        signal,
        ...(gathered.text !== '' && { gathered: gathered.text }),
      });
      report.model ??= {
        calls: 0,
        usage: { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 },
        malformed: [],
      };
      report.model.calls += result.modelCalls;
      for (const key of Object.keys(result.usage) as Array<keyof typeof result.usage>)
        report.model.usage[key] += result.usage[key];
      if (result.malformed) report.model.malformed.push(`${scope}: ${result.malformed}`);
      proposals.push(...result.proposals.map((proposal) => ({ proposal, by: 'model' as const })));
    }
    const resolved = resolvePlan({
      memories,
      scopes: [scope],
      foreignIds: await foreignIds(store, memories, proposals),
      proposals,
      now,
      limits: settings.memory,
      aging: settings.aging,
    });
    report.steps.push(...resolved.steps);
    report.dropped.push(...resolved.dropped);
    report.diffs.push(...resolved.diffs);
    const annotated = new Set(resolved.steps.filter((step) => step.kind === 'annotate').map((step) => step.memoryId));
    report.instructionConflicts.push(...offline.conflicts.filter((conflict) => annotated.has(conflict.memoryId)));
    report.index.push(indexAfter(scope, memories, resolved.diffs, settings));
  }
  // One time for the whole change set (each scope's plan stamps with its own latest; take the latest of all).
  const stamps = report.diffs.map((diff) => diff.after.updatedAt).sort();
  const stamp = stamps.at(-1);
  if (stamp !== undefined) {
    for (const diff of report.diffs) diff.after = { ...diff.after, updatedAt: stamp };
    for (const step of report.steps) step.after = { ...step.after, updatedAt: stamp };
  }
  return read;
}

/** The gather phase's sessions; a reader that fails leaves a warning and none. */
async function gatherSessions(
  dependencies: DreamDependencies,
  report: DreamReport,
  signal: AbortSignal,
  since: string | null,
): Promise<GatheredSession[]> {
  if (!dependencies.gather) return [];
  try {
    return await dependencies.gather({ since, maxSessions: dependencies.settings.dream.gatherMaxSessions, signal });
  } catch (error) {
    signal.throwIfAborted();
    const warning = `sessions-not-gathered: ${error instanceof Error ? error.message : String(error)}`.slice(0, 300);
    report.warnings.push(warning);
    dependencies.onWarning?.(warning);
    return [];
  }
}

/** Ids the proposals name that are not in this scope but exist in another (dropped as "another scope"). */
async function foreignIds(
  store: MemoryStore,
  memories: readonly Memory[],
  proposals: ReadonlyArray<{ proposal: unknown; by: 'rules' | 'model' }>,
): Promise<Set<string>> {
  const own = new Set(memories.map((memory) => memory.id));
  const named = new Set<string>();
  for (const { proposal, by } of proposals) {
    if (by !== 'model' || proposal === null || typeof proposal !== 'object') continue;
    const record = proposal as Record<string, unknown>;
    for (const value of [
      record.memoryId,
      record.keeperId,
      record.supersededBy,
      ...(Array.isArray(record.duplicateIds) ? record.duplicateIds : []),
    ])
      if (typeof value === 'string' && !own.has(value) && named.size < 500) named.add(value);
  }
  const found = new Set<string>();
  for (const id of named) {
    try {
      if (await store.get(id)) found.add(id);
    } catch {
      // Not an id at all: reported as unknown.
    }
  }
  return found;
}
