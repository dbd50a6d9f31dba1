import { startRepeatingRun, type IntervalTimers, type RepeatingRun } from '../maintenance/repeating-run.js';
import type { DreamReport } from './dream-report.js';

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

export type DreamSchedule = RepeatingRun;

/** Checks the dream gates every `intervalMs`, one run at a time (a tick during a run is skipped). */
export function startDreamSchedule(options: DreamScheduleOptions): DreamSchedule {
  return startRepeatingRun({ ...options, name: 'dream', runAtStart: false });
}
