import type { OpenedEngram } from '../../node/open-engram.js';
import { isEngramError } from '../../kernel/errors.js';
import type { IntervalTimers } from '../../maintenance/repeating-run.js';
import { startSyncSchedule, type SyncSchedule } from '../sync-schedule.js';
import { readSyncState } from '../sync-state.js';
import { syncStore, type RemoteSyncOutcome } from './sync-store.js';
import { resolveRoutes } from './sync-routes.js';

/** How often the service looks at the change feed's head (one cheap query). */
const POLL_MS = 2_000;

/**
 * Background sync in `engram serve`: after writes (debounced) and on the interval, every remote,
 * never waiting for a lock another process holds, each remote's back-off honoured. Says only what
 * changed: a failure once per kind of error, not on every attempt.
 */
export function startBackgroundSync(
  opened: OpenedEngram,
  options: { cwd: string; log: (message: string) => void; timers?: IntervalTimers; now?: () => Date },
): SyncSchedule {
  const feed = opened.engram.store.changes;
  const settings = opened.loaded.settings.sync;
  let head: string | undefined;
  let lastProblem: string | undefined;
  return startSyncSchedule({
    intervalMs: settings.intervalMinutes * 60_000,
    debounceMs: settings.debounceSeconds * 1000,
    pollMs: POLL_MS,
    ...(options.timers && { timers: options.timers }),
    ...(options.now && { now: () => options.now!().getTime() }),
    log: options.log,
    changed: async () => {
      if (!feed) return false;
      const next = await feed.head();
      const moved = head !== undefined && next !== head;
      head = next;
      return moved;
    },
    run: async (signal) => {
      const outcomes = await backgroundSync(opened, {
        cwd: options.cwd,
        signal,
        ...(options.now && { now: options.now }),
      });
      const problem = outcomes
        .filter((outcome) => outcome.status === 'failed')
        .map((outcome) => (outcome.status === 'failed' ? `${outcome.remote}: ${outcome.error.message}` : ''))
        .join('; ');
      if (problem !== (lastProblem ?? '')) {
        options.log(
          problem === ''
            ? 'engram: sync works again.'
            : `engram: background sync: ${problem} (retrying with back-off).`,
        );
        lastProblem = problem;
      }
    },
  });
}

/** One background sync of every remote; nothing when none is configured. */
export async function backgroundSync(
  opened: OpenedEngram,
  options: { cwd: string; signal?: AbortSignal; now?: () => Date },
): Promise<RemoteSyncOutcome[]> {
  try {
    return (
      await syncStore({
        opened,
        cwd: options.cwd,
        background: true,
        ...(options.signal && { signal: options.signal }),
        ...(options.now && { now: options.now }),
      })
    ).remotes;
  } catch (error) {
    if (isEngramError(error) && error.code === 'CONFIG_INVALID' && /No sync remote/.test(error.message)) return [];
    throw error;
  }
}

/**
 * For a short-lived worker: syncs when a remote's last attempt is older than the debounce, so a
 * burst of hooks starting workers costs one sync. Never throws; says what failed.
 */
export async function syncIfDue(
  opened: OpenedEngram,
  options: { cwd: string; log: (message: string) => void; now?: () => Date },
): Promise<void> {
  try {
    const now = (options.now ?? (() => new Date()))().getTime();
    const { routes } = await resolveRoutes(opened, {
      acceptProjectRemote: false,
      cwd: options.cwd,
      now: () => new Date(now),
    });
    const debounceMs = opened.loaded.settings.sync.debounceSeconds * 1000;
    let due = false;
    for (const route of routes) {
      const state = await readSyncState(opened.engram.store, route.key, route.url);
      if (state.lastAttemptAt === undefined || now - Date.parse(state.lastAttemptAt) >= debounceMs) due = true;
    }
    if (!due) return;
    for (const outcome of await backgroundSync(opened, options))
      if (outcome.status === 'failed') options.log(`sync ${outcome.remote}: ${outcome.error.message}`);
  } catch (error) {
    options.log(`sync: ${error instanceof Error ? error.message : String(error)}`);
  }
}
