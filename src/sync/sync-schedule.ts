import { NODE_INTERVAL_TIMERS, type IntervalTimers } from '../maintenance/repeating-run.js';

/**
 * When a long-running process (engram serve) syncs in the background: after writes, once they have
 * been quiet for `debounceMs` (a burst of writes is one sync), and every `intervalMs` whatever
 * happened (the other machines' writes come in). One sync at a time; the runner skips a remote
 * still waiting out its back-off, so a remote that cannot be reached costs nothing until then.
 * Nobody waits on it: hooks and wrappers never call it.
 */
export interface SyncScheduleOptions {
  /** One background sync. */
  run: (signal: AbortSignal) => Promise<void>;
  /** Whether the store changed since the last call (the change feed's head moved). */
  changed: () => Promise<boolean>;
  /** Every how often to sync anyway; 0: only after writes. */
  intervalMs: number;
  debounceMs: number;
  /** How often `changed` is asked. */
  pollMs: number;
  now?: () => number;
  timers?: IntervalTimers;
  log: (message: string) => void;
}

export interface SyncSchedule {
  /** Stops the timer, stops a sync in progress (its git processes are killed; nothing half-applied), waits for it. */
  stop(): Promise<void>;
}

export function startSyncSchedule(options: SyncScheduleOptions): SyncSchedule {
  const timers = options.timers ?? NODE_INTERVAL_TIMERS;
  const now = options.now ?? Date.now;
  let lastRunAt = Number.NEGATIVE_INFINITY;
  let lastChangeAt: number | undefined;
  let running: Promise<void> | undefined;
  let controller: AbortController | undefined;
  let stopped = false;
  const tick = (): void => {
    if (stopped || running) return;
    running = (async () => {
      if (await options.changed()) lastChangeAt = now();
      const time = now();
      const quietAfterWrite = lastChangeAt !== undefined && time - lastChangeAt >= options.debounceMs;
      const intervalDue = options.intervalMs > 0 && time - lastRunAt >= options.intervalMs;
      if (!quietAfterWrite && !intervalDue) return;
      lastRunAt = time;
      lastChangeAt = undefined;
      controller = new AbortController();
      await options.run(controller.signal);
      // What the sync itself wrote is no change to sync again.
      await options.changed();
    })()
      .catch((error: unknown) =>
        options.log(`engram: background sync failed: ${error instanceof Error ? error.message : String(error)}`),
      )
      .finally(() => {
        running = undefined;
        controller = undefined;
      });
  };
  const handle = timers.setInterval(tick, Math.max(1, options.pollMs));
  tick();
  return {
    async stop() {
      if (!stopped) {
        stopped = true;
        timers.clearInterval(handle);
      }
      controller?.abort();
      await running;
    },
  };
}
