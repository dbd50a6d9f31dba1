import type { AgingReport } from './age-memories.js';
import { startRepeatingRun, type IntervalTimers, type RepeatingRun } from './repeating-run.js';

export { MAX_TIMER_MS, NODE_INTERVAL_TIMERS, type IntervalTimers } from './repeating-run.js';

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

export type AgingSchedule = RepeatingRun;

/** Runs aging now and then every `intervalMs`, one run at a time (a tick during a run is skipped). */
export function startAgingSchedule(options: AgingScheduleOptions): AgingSchedule {
  return startRepeatingRun({ ...options, name: 'aging run', runAtStart: true });
}
