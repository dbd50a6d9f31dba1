/** The timer functions a schedule uses; tests pass fakes, the service passes Node's. */
export interface IntervalTimers {
  setInterval(callback: () => void, milliseconds: number): unknown;
  clearInterval(handle: unknown): void;
}

/** Node's timers, unref'd so a pending run never keeps a process alive. */
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

export interface RepeatingRunOptions<Report> {
  /** What the log calls the run ("aging run", "dream"). */
  name: string;
  /** One run. */
  run: () => Promise<Report>;
  /** Time between runs. */
  intervalMs: number;
  /** Whether the first run starts at once (else one interval after start). */
  runAtStart: boolean;
  timers?: IntervalTimers;
  /** Called after each run that finished. */
  onReport?: (report: Report) => void;
  /** Where a failed run is reported; a failure never stops the schedule or the service. */
  log: (message: string) => void;
}

export interface RepeatingRun {
  /** Stops the timer and waits for a run in progress to finish. Idempotent. */
  stop(): Promise<void>;
}

/**
 * Runs `run` every `intervalMs`, one run at a time: a tick that comes while a run is still going
 * is skipped, never queued, so slow stores do not pile runs up. The service's aging and
 * consolidation schedules are this loop.
 */
export function startRepeatingRun<Report>(options: RepeatingRunOptions<Report>): RepeatingRun {
  const timers = options.timers ?? NODE_INTERVAL_TIMERS;
  let running: Promise<void> | undefined;
  let stopped = false;
  const tick = (): void => {
    if (stopped || running) return;
    running = options
      .run()
      .then((report) => options.onReport?.(report))
      .catch((error: unknown) =>
        options.log(`engram: ${options.name} failed: ${error instanceof Error ? error.message : String(error)}`),
      )
      .finally(() => {
        running = undefined;
      });
  };
  // Node fires a timer longer than about 24.8 days after 1 ms instead, so longer intervals are cut to that.
  const handle = timers.setInterval(tick, Math.min(Math.max(1, options.intervalMs), MAX_TIMER_MS));
  if (options.runAtStart) tick();
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
