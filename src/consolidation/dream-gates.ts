import type { Settings } from '../kernel/settings.js';

/**
 * When an automatic dream may run (SPEC §3), cheapest check first: ≥ `dream.minHours`
 * since the last consolidation, ≥ `dream.scanMinutes` since the last scan, ≥
 * `dream.minSessions` sessions since; then the store lock. A manual `engram dream` skips
 * the time gates, never the lock.
 */

/** What the store remembers between runs (checkpoint `dream:state`). */
export interface DreamState {
  /** When the last consolidation started (the time gate counts from it). */
  lastRunAt: string | null;
  /** The value before the run in progress set it: put back when that run fails. */
  previousRunAt: string | null;
  /** When the session gate was last counted. */
  lastScanAt: string | null;
  status: 'idle' | 'running' | 'done' | 'cancelled' | 'failed';
  /** Sessions noted (SessionEnd) since the last consolidation. */
  sessions: string[];
}

export const EMPTY_DREAM_STATE: DreamState = {
  lastRunAt: null,
  previousRunAt: null,
  lastScanAt: null,
  status: 'idle',
  sessions: [],
};

/** Why a dream did not run. */
export type DreamSkipReason = 'too-soon' | 'scanned-recently' | 'too-few-sessions' | 'locked';

export type TimeGate = { open: true } | { open: false; reason: 'too-soon' | 'scanned-recently'; nextAt: string };

const HOUR_MS = 3_600_000;
const MINUTE_MS = 60_000;

/**
 * The last consolidation the time gate counts from: a run still marked running after the longest
 * a run may take died (killed, machine off) and counts as never having happened.
 */
export function effectiveLastRun(state: DreamState, now: number, settings: Pick<Settings, 'dream'>): number | null {
  const last = state.lastRunAt === null ? null : Date.parse(state.lastRunAt);
  if (state.status === 'running' && last !== null && now - last > settings.dream.lockStaleMinutes * MINUTE_MS)
    return state.previousRunAt === null ? null : Date.parse(state.previousRunAt);
  return last;
}

/** The two time gates, in order: hours since the last consolidation, minutes since the last scan. */
export function checkTimeGates(state: DreamState, now: number, settings: Pick<Settings, 'dream'>): TimeGate {
  const { minHours, scanMinutes } = settings.dream;
  const last = effectiveLastRun(state, now, settings);
  if (last !== null && now - last < minHours * HOUR_MS)
    return { open: false, reason: 'too-soon', nextAt: new Date(last + minHours * HOUR_MS).toISOString() };
  const scanned = state.lastScanAt === null ? null : Date.parse(state.lastScanAt);
  if (scanned !== null && now - scanned < scanMinutes * MINUTE_MS)
    return {
      open: false,
      reason: 'scanned-recently',
      nextAt: new Date(scanned + scanMinutes * MINUTE_MS).toISOString(),
    };
  return { open: true };
}

/** Reads a stored state leniently: anything unreadable is the empty state (the gates then open, which is safe: the lock still holds). */
export function parseDreamState(text: string | undefined): DreamState {
  if (text === undefined) return { ...EMPTY_DREAM_STATE };
  try {
    const value = JSON.parse(text) as Partial<DreamState>;
    const time = (field: unknown): string | null =>
      typeof field === 'string' && Number.isFinite(Date.parse(field)) ? field : null;
    return {
      lastRunAt: time(value.lastRunAt),
      previousRunAt: time(value.previousRunAt),
      lastScanAt: time(value.lastScanAt),
      status: ['idle', 'running', 'done', 'cancelled', 'failed'].includes(value.status as string)
        ? (value.status as DreamState['status'])
        : 'idle',
      sessions: Array.isArray(value.sessions)
        ? value.sessions.filter((id) => typeof id === 'string').slice(-1_000)
        : [],
    };
  } catch {
    return { ...EMPTY_DREAM_STATE };
  }
}
