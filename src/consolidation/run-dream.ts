import { EngramError, isEngramError } from '../kernel/errors.js';
import type { Settings } from '../kernel/settings.js';
import type { Scope } from '../memory/scope.js';
import { requireRole, type MemoryStore } from '../contracts/memory-store.js';
import { checkTimeGates, effectiveLastRun, type DreamState } from './dream-gates.js';
import type { DreamDependencies, DreamOptions } from './dream-inputs.js';
import { emptyReport, skipReport, type DreamReport } from './dream-report.js';
import { readDreamState, writeDreamState } from './dream-state.js';
import { planDream } from './plan-dream.js';
import { applyDream, refreshVectors } from './apply-dream.js';

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
  // Both roles are required up front: a store without them answers this error before any read.
  requireRole(store, 'checkpoints', 'consolidation');
  const locks = requireRole(store, 'locks', 'consolidation');
  const nowMs = (): number => dependencies.now().getTime();
  const scopes =
    options.scopes === undefined ? Object.keys((await store.stats()).byScope) : [...new Set(options.scopes)];
  const report = emptyReport(options, scopes);

  if (options.trigger === 'automatic') {
    const state = await readDreamState(store);
    const gate = checkTimeGates(state, nowMs(), settings);
    if (!gate.open) return skipReport(report, gate.reason, gate.nextAt);
    await writeDreamState(store, { ...state, lastScanAt: dependencies.now().toISOString() });
    const sessions = await sessionsSince(store, scopes, state, settings);
    if (sessions < settings.dream.minSessions) return skipReport(report, 'too-few-sessions');
  }

  try {
    return await locks.hold(DREAM_LOCK, () => consolidate(dependencies, options, report), { waitMs: 0 });
  } catch (error) {
    if (isEngramError(error) && error.code === 'LOCK_TIMEOUT') return skipReport(report, 'locked');
    throw error;
  }
}

async function consolidate(
  dependencies: DreamDependencies,
  options: DreamOptions,
  report: DreamReport,
): Promise<DreamReport> {
  const { store, settings } = dependencies;
  const started = dependencies.now();
  const stored = await readDreamState(store);
  // We hold the lock, so a run still marked running died (killed, machine off): it never happened.
  const state: DreamState =
    stored.status === 'running' ? { ...stored, lastRunAt: stored.previousRunAt, status: 'failed' } : stored;
  // Double-checked inside the lock: another process may have finished a run since our gates passed.
  if (options.trigger === 'automatic') {
    const gate = checkTimeGates({ ...state, lastScanAt: null }, started.getTime(), settings);
    if (!gate.open) return skipReport(report, gate.reason, gate.nextAt);
  }
  const record = !options.dryRun;
  const previous = state.lastRunAt;
  if (record) {
    await writeDreamState(store, {
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
    const read = await planDream(dependencies, report, signal, previous);
    signal.throwIfAborted();
    if (record && report.diffs.length > 0) {
      await applyDream(dependencies, report, read, started.getTime());
      await refreshVectors(dependencies, report);
    }
    report.countAfter = record ? await countAll(store, report.scopes) : report.countBefore;
    if (report.countAfter < report.countBefore)
      throw new EngramError('INTERNAL', 'A dream lowered the number of memories; this must never happen.');
    report.status = options.dryRun ? 'planned' : report.diffs.length > 0 ? 'applied' : 'unchanged';
    report.improved = report.diffs.length;
    report.summary = `improved ${report.improved} memor${report.improved === 1 ? 'y' : 'ies'}`;
    if (record) await writeDreamState(store, { ...(await readDreamState(store)), status: 'done', sessions: [] });
    return report;
  } catch (error) {
    if (record) {
      const cancelled = options.signal?.aborted === true && !timeout.aborted;
      const now = await readDreamState(store);
      // A cancel keeps the last-run time (the user stopped it); an error puts it back so the next check retries.
      await writeDreamState(
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
