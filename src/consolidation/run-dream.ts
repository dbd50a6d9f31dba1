import { EngramError, isEngramError } from '../kernel/errors.js';
import { createSortableId } from '../kernel/ids.js';
import type { Settings } from '../kernel/settings.js';
import type { Memory } from '../memory/memory.js';
import type { Scope } from '../memory/scope.js';
import { buildMemoryIndex } from '../memory/memory-index.js';
import { requireRole, type MemoryStore } from '../contracts/memory-store.js';
import type { LanguageModel, LanguageModelUsage } from '../contracts/language-model.js';
import type { Embedder } from '../contracts/embedder.js';
import type { AgentTool } from '../extraction/agent-extraction.js';
import { storeMemoryVectors } from '../remember/memory-vectors.js';
import { planOffline, type InstructionConflict, type InstructionText } from './offline-plan.js';
import { resolvePlan, type DreamMemoryDiff, type DreamStep, type DroppedProposal } from './dream-plan.js';
import { proposeWithModel } from './model-plan.js';
import { selectGathered, type GatheredSession, type GatherSummary } from './gather.js';
import { applyChangeSet, DREAM_ACTOR } from './change-sets.js';
import { changedSince, dropChangedSteps, versionsRead } from './changed-during-run.js';
import {
  checkTimeGates,
  effectiveLastRun,
  parseDreamState,
  type DreamSkipReason,
  type DreamState,
} from './dream-gates.js';

/** What a dream reads and writes. */
export interface DreamDependencies {
  store: MemoryStore;
  settings: Settings;
  now: () => Date;
  /** With a model, a helper proposes what rules cannot find; without one the dream is rules only. */
  model?: LanguageModel;
  /** The helper's read-only tools for one scope (`openDreamTools` in node/); none: it reads only what it is shown. */
  openTools?: (scope: Scope) => Promise<readonly AgentTool[]>;
  /** The instruction files (CLAUDE.md…), read for contradictions and never written. */
  instructions?: readonly InstructionText[];
  /** Vectors of rewritten memories are recomputed when the store keeps vectors. */
  embedder?: Embedder;
  onWarning?: (warning: string) => void;
  /**
   * The gather phase's reader: the sessions active since `since` (null: never consolidated), newest
   * first, at most `maxSessions` (`gatherSessionFiles` in node/ reads engram's and Claude Code's).
   * Read only when a model is configured; a failure is a warning and the dream plans without them.
   */
  gather?: (input: { since: string | null; maxSessions: number; signal: AbortSignal }) => Promise<GatheredSession[]>;
}

export interface DreamOptions {
  /** The scopes to consolidate, each on its own; undefined: every scope of the store (the service's runs). */
  scopes?: readonly Scope[];
  /** Plan and report, change nothing. */
  dryRun?: boolean;
  /** `automatic` runs pass the time and session gates first; `manual` (engram dream) only the lock. */
  trigger: 'manual' | 'automatic';
  /** The user's cancel: the run stops, nothing of it is applied, and the last-run time is kept. */
  signal?: AbortSignal;
}

/** The index a dream rebuilt for one scope: within its caps, without archived or invalid memories. */
export interface DreamIndexReport {
  scope: Scope;
  shown: number;
  total: number;
  truncated: boolean;
  /** Pointers the index no longer holds: memories the dream archived or invalidated. */
  droppedPointers: number;
}

export interface DreamReport {
  status: 'applied' | 'planned' | 'unchanged' | 'skipped';
  skipped?: DreamSkipReason;
  /** When the gate that stopped an automatic run opens. */
  nextAt?: string;
  trigger: 'manual' | 'automatic';
  dryRun: boolean;
  scopes: Scope[];
  /** `engram undo <changeSetId>` reverts the whole run. */
  changeSetId?: string;
  steps: DreamStep[];
  /** Proposals refused, and steps not applied because their memories changed while the dream ran. */
  dropped: DroppedProposal[];
  diffs: DreamMemoryDiff[];
  /** Memories a person or another process changed while the dream ran: their steps were dropped, the edits stand. */
  changedDuringRun?: string[];
  /** Memories that contradict an instruction file: annotated, listed here; the files are never edited. */
  instructionConflicts: InstructionConflict[];
  index: DreamIndexReport[];
  model?: { calls: number; usage: Required<LanguageModelUsage>; malformed: string[] };
  /** What the gather phase gave the helper, summed over the scopes (with a model and a reader only). */
  gathered?: GatherSummary;
  /** Memories of the scopes, invalid and archived included, before and after: a dream never lowers it. */
  countBefore: number;
  countAfter: number;
  improved: number;
  /** SPEC's one-line report: "improved N memories". */
  summary: string;
  warnings: string[];
}

const STATE = 'dream:state';
export const DREAM_LOCK = 'dream';

/**
 * One consolidation (SPEC §3 layer 6): orient (each scope's memories and index), gather (the
 * rules' findings and, with a model, the helper's), consolidate (merge, date, invalidate,
 * condense, archive, annotate; each proposal checked, a bad one dropped alone) and prune and index
 * (the rebuilt MEMORY.md within its caps). Applied as ONE change set with actor `dream`; nothing
 * is deleted. Automatic runs pass the gates first; every run holds the store lock `dream` or skips.
 */
export async function runDream(dependencies: DreamDependencies, options: DreamOptions): Promise<DreamReport> {
  const { store, settings } = dependencies;
  const checkpoints = requireRole(store, 'checkpoints', 'consolidation');
  const locks = requireRole(store, 'locks', 'consolidation');
  const nowMs = (): number => dependencies.now().getTime();
  const scopes =
    options.scopes === undefined ? Object.keys((await store.stats()).byScope) : [...new Set(options.scopes)];
  const report = emptyReport(options, scopes);

  if (options.trigger === 'automatic') {
    const state = parseDreamState(await checkpoints.get(STATE));
    const gate = checkTimeGates(state, nowMs(), settings);
    if (!gate.open) return skip(report, gate.reason, gate.nextAt);
    await writeState(store, { ...state, lastScanAt: dependencies.now().toISOString() });
    const sessions = await sessionsSince(store, scopes, state, settings);
    if (sessions < settings.dream.minSessions) return skip(report, 'too-few-sessions');
  }

  try {
    return await locks.hold(DREAM_LOCK, () => consolidate(dependencies, options, report), { waitMs: 0 });
  } catch (error) {
    if (isEngramError(error) && error.code === 'LOCK_TIMEOUT') return skip(report, 'locked');
    throw error;
  }
}

async function consolidate(
  dependencies: DreamDependencies,
  options: DreamOptions,
  report: DreamReport,
): Promise<DreamReport> {
  const { store, settings } = dependencies;
  const checkpoints = requireRole(store, 'checkpoints', 'consolidation');
  const started = dependencies.now();
  const stored = parseDreamState(await checkpoints.get(STATE));
  // We hold the lock, so a run still marked running died (killed, machine off): it never happened.
  const state: DreamState =
    stored.status === 'running' ? { ...stored, lastRunAt: stored.previousRunAt, status: 'failed' } : stored;
  // Double-checked inside the lock: another process may have finished a run since our gates passed.
  if (options.trigger === 'automatic') {
    const gate = checkTimeGates({ ...state, lastScanAt: null }, started.getTime(), settings);
    if (!gate.open) return skip(report, gate.reason, gate.nextAt);
  }
  const record = !options.dryRun;
  const previous = state.lastRunAt;
  if (record) {
    await writeState(store, {
      ...state,
      lastRunAt: started.toISOString(),
      previousRunAt: previous ?? effectiveLastRunIso(state, started.getTime(), settings),
      status: 'running',
    });
  }
  // A holder never keeps the lock past dream.lockStaleMinutes: the run gives up (an error: rolled back) first.
  const timeout = AbortSignal.timeout(Math.max(1, settings.dream.lockStaleMinutes * 60_000));
  const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
  try {
    const read = await plan(dependencies, report, signal, previous);
    signal.throwIfAborted();
    if (record && report.diffs.length > 0) {
      await apply(dependencies, report, read, started.getTime());
      await refreshVectors(dependencies, report);
    }
    report.countAfter = record ? await countAll(store, report.scopes) : report.countBefore;
    if (report.countAfter < report.countBefore)
      throw new EngramError('INTERNAL', 'A dream lowered the number of memories; this must never happen.');
    report.status = options.dryRun ? 'planned' : report.diffs.length > 0 ? 'applied' : 'unchanged';
    report.improved = report.diffs.length;
    report.summary = `improved ${report.improved} memor${report.improved === 1 ? 'y' : 'ies'}`;
    if (record)
      await writeState(store, { ...parseDreamState(await checkpoints.get(STATE)), status: 'done', sessions: [] });
    return report;
  } catch (error) {
    if (record) {
      const cancelled = options.signal?.aborted === true && !timeout.aborted;
      const now = parseDreamState(await checkpoints.get(STATE));
      // A cancel keeps the last-run time (the user stopped it); an error puts it back so the next check retries.
      await writeState(
        store,
        cancelled ? { ...now, status: 'cancelled' } : { ...now, lastRunAt: previous, status: 'failed' },
      );
    }
    throw error;
  }
}

function effectiveLastRunIso(state: DreamState, now: number, settings: Pick<Settings, 'dream'>): string | null {
  const last = effectiveLastRun(state, now, settings);
  return last === null ? null : new Date(last).toISOString();
}

/** Tries to apply a plan this many times when memories keep changing under it. */
const APPLY_ATTEMPTS = 5;

/**
 * Writes the plan as one change set, over nothing changed since the plan read it: before writing and
 * again inside the write transaction (`ifUpdatedAt`), a memory that changed meanwhile has its steps
 * dropped and reported, and the rest is written (`changed-during-run.ts`).
 */
async function apply(
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

/** Orient, gather and consolidate every scope on its own; fills the report's plan. Returns every memory read, by id. */
async function plan(
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

function indexAfter(
  scope: Scope,
  memories: readonly Memory[],
  diffs: readonly DreamMemoryDiff[],
  settings: Settings,
): DreamIndexReport {
  const after = new Map(memories.map((memory) => [memory.id, memory]));
  for (const diff of diffs) after.set(diff.memoryId, diff.after);
  const isActive = (memory: Memory): boolean => !memory.archived && memory.invalidAt === null;
  const active = [...after.values()].filter(isActive);
  const index = buildMemoryIndex(active, settings.index);
  return {
    scope,
    shown: index.shown,
    total: index.total,
    truncated: index.truncated,
    droppedPointers: memories.filter(isActive).length - active.length,
  };
}

async function refreshVectors(dependencies: DreamDependencies, report: DreamReport): Promise<void> {
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

async function countAll(store: MemoryStore, scopes: readonly Scope[]): Promise<number> {
  if (scopes.length === 0) return 0;
  return store.count({ scopes, archived: 'include', invalid: 'include' });
}

/** Distinct sessions since the last consolidation: those noted at SessionEnd and those memories were written in. */
async function sessionsSince(
  store: MemoryStore,
  scopes: readonly Scope[],
  state: DreamState,
  settings: Settings,
): Promise<number> {
  const sessions = new Set(state.sessions);
  const last = state.lastRunAt;
  if (scopes.length === 0) return sessions.size;
  const page = 500;
  for (let offset = 0; sessions.size < settings.dream.minSessions; offset += page) {
    const memories = await store.list({
      scopes,
      archived: 'include',
      invalid: 'include',
      order: 'updated-desc',
      limit: page,
      offset,
    });
    for (const memory of memories) {
      if (last !== null && memory.updatedAt <= last) return sessions.size;
      if (memory.source?.sessionId) sessions.add(memory.source.sessionId);
    }
    if (memories.length < page) break;
  }
  return sessions.size;
}

async function writeState(store: MemoryStore, state: DreamState): Promise<void> {
  await requireRole(store, 'checkpoints', 'consolidation').set(STATE, JSON.stringify(state));
}

/** Reads the consolidation state the gates use (last run, last scan, sessions noted). */
export async function readDreamState(store: MemoryStore): Promise<DreamState> {
  return parseDreamState(await requireRole(store, 'checkpoints', 'consolidation').get(STATE));
}

/**
 * Queues a dream for a session that ended (the Claude Code plugin's SessionEnd calls this): the
 * session is counted for the session gate and the service's next check runs the dream if the
 * gates open. Never runs a dream inline; cheap enough for a hook.
 */
export async function queueDream(store: MemoryStore, input: { sessionId: string }): Promise<void> {
  const checkpoints = requireRole(store, 'checkpoints', 'consolidation');
  if (typeof input?.sessionId !== 'string' || input.sessionId.length === 0 || input.sessionId.length > 200)
    throw new EngramError(
      'INVALID_INPUT',
      'queueDream needs the sessionId of the session that ended (1-200 characters).',
    );
  for (let attempt = 0; attempt < 10; attempt += 1) {
    const text = await checkpoints.get(STATE);
    const state = parseDreamState(text);
    if (state.sessions.includes(input.sessionId)) return;
    const next = { ...state, sessions: [...state.sessions, input.sessionId].slice(-1_000) };
    if (await checkpoints.set(STATE, JSON.stringify(next), { expected: text ?? null })) return;
  }
  throw new EngramError(
    'CONFLICT',
    'Could not note the session for consolidation: the state kept changing; try again.',
  );
}

function emptyReport(options: DreamOptions, scopes: Scope[]): DreamReport {
  return {
    status: 'unchanged',
    trigger: options.trigger,
    dryRun: options.dryRun === true,
    scopes,
    steps: [],
    dropped: [],
    diffs: [],
    instructionConflicts: [],
    index: [],
    countBefore: 0,
    countAfter: 0,
    improved: 0,
    summary: 'improved 0 memories',
    warnings: [],
  };
}

function skip(report: DreamReport, reason: DreamSkipReason, nextAt?: string): DreamReport {
  return { ...report, status: 'skipped', skipped: reason, ...(nextAt !== undefined && { nextAt }) };
}
