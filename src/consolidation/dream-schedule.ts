import { MAX_TIMER_MS, NODE_INTERVAL_TIMERS, type IntervalTimers } from '../maintenance/aging-schedule.js';
import type { DreamReport } from './run-dream.js';

export interface DreamScheduleOptions {
  /** One automatic run (gates first, then the lock): the service passes runDream with trigger `automatic`. */
  run: () => Promise<DreamReport>;
  /** Time between gate checks (`dream.checkMinutes`); the first check is one interval after start. */
  intervalMs: number;
  timers?: IntervalTimers;
  onReport?: (report: DreamReport) => void;
  /** Where a failed run is reported; a failure never stops the schedule (the run rolled its time back, so it retries). */
  log: (message: string) => void;
}

export interface DreamSchedule {
  /** Stops the timer and waits for a run in progress. Idempotent. */
  stop(): Promise<void>;
}

/** Checks the dream gates every `intervalMs`, one run at a time (a tick during a run is skipped). */
export function startDreamSchedule(options: DreamScheduleOptions): DreamSchedule {
  const timers = options.timers ?? NODE_INTERVAL_TIMERS;
  let running: Promise<void> | undefined;
  let stopped = false;
  const tick = (): void => {
    if (stopped || running) return;
    running = options
      .run()
      .then((report) => options.onReport?.(report))
      .catch((error: unknown) =>
        options.log(`engram: dream failed: ${error instanceof Error ? error.message : String(error)}`),
      )
      .finally(() => {
        running = undefined;
      });
  };
  const handle = timers.setInterval(tick, Math.min(Math.max(1, options.intervalMs), MAX_TIMER_MS));
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
