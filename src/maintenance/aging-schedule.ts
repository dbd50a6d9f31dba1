import type { AgingReport } from './age-memories.js';

/** The timer functions a schedule uses; tests pass fakes, the service passes Node's. */
export interface IntervalTimers {
  setInterval(callback: () => void, milliseconds: number): unknown;
  clearInterval(handle: unknown): void;
}

/** Node's timers, unref'd so a pending aging run never keeps a process alive. */
export const NODE_INTERVAL_TIMERS: IntervalTimers = {
  setInterval(callback, milliseconds) {
    const handle = setInterval(callback, milliseconds);
    handle.unref();
    return handle;
  },
  clearInterval(handle) {
    clearInterval(handle as NodeJS.Timeout);
  },
};

/** The longest delay Node's timers honour (2^31 − 1 ms). */
export const MAX_TIMER_MS = 2_147_483_647;

export interface AgingScheduleOptions {
  /** One aging run (the service passes `ageMemories` over its store, every scope). */
  run: () => Promise<AgingReport>;
  /** Time between runs; the first run starts at once. */
  intervalMs: number;
  timers?: IntervalTimers;
  /** Called after each run that finished. */
  onReport?: (report: AgingReport) => void;
  /** Where a failed run is reported; a failure never stops the schedule or the service. */
  log: (message: string) => void;
}

export interface AgingSchedule {
  /** Stops the timer and waits for a run in progress to finish. Idempotent. */
  stop(): Promise<void>;
}

/**
 * Runs aging now and then every `intervalMs`, one run at a time: a tick that comes while a run is
 * still going is skipped, never queued, so slow stores do not pile runs up.
 */
export function startAgingSchedule(options: AgingScheduleOptions): AgingSchedule {
  const timers = options.timers ?? NODE_INTERVAL_TIMERS;
  let running: Promise<void> | undefined;
  let stopped = false;
  const tick = (): void => {
    if (stopped || running) return;
    running = options
      .run()
      .then((report) => options.onReport?.(report))
      .catch((error: unknown) =>
        options.log(`engram: aging run failed: ${error instanceof Error ? error.message : String(error)}`),
      )
      .finally(() => {
        running = undefined;
      });
  };
  // Node fires a timer longer than about 24.8 days after 1 ms instead, so longer intervals are cut to that.
  const handle = timers.setInterval(tick, Math.min(Math.max(1, options.intervalMs), MAX_TIMER_MS));
  tick();
  return {
    async stop() {
      if (!stopped) {
        stopped = true;
        timers.clearInterval(handle);
      }
      await running;
    },
  };
}
