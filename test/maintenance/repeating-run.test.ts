import { describe, expect, it } from 'vitest';
import { MAX_TIMER_MS, startRepeatingRun, type IntervalTimers } from '../../src/maintenance/repeating-run.js';

/** Timers the test fires by hand. */
function manualTimers(): IntervalTimers & { fire(): void; intervals: number[]; cleared: number } {
  let callback: (() => void) | undefined;
  const timers = {
    intervals: [] as number[],
    cleared: 0,
    setInterval(next: () => void, milliseconds: number) {
      callback = next;
      timers.intervals.push(milliseconds);
      return 1;
    },
    clearInterval() {
      timers.cleared += 1;
      callback = undefined;
    },
    fire() {
      callback?.();
    },
  };
  return timers;
}

describe('startRepeatingRun', () => {
  it('runs one at a time, skips a tick during a run, logs a failure and keeps going, and stop waits', async () => {
    const timers = manualTimers();
    const log: string[] = [];
    const reports: number[] = [];
    let release: (() => void) | undefined;
    let runs = 0;
    const schedule = startRepeatingRun({
      name: 'test run',
      intervalMs: 5_000,
      runAtStart: true,
      timers,
      log: (message) => log.push(message),
      onReport: (report: number) => reports.push(report),
      run: async () => {
        runs += 1;
        if (runs === 2) throw new Error('store gone');
        await new Promise<void>((resolve) => (release = resolve));
        return runs;
      },
    });
    expect(runs).toBe(1);
    timers.fire();
    expect(runs).toBe(1);
    release!();
    await new Promise((resolve) => setImmediate(resolve));
    expect(reports).toEqual([1]);
    timers.fire();
    await new Promise((resolve) => setImmediate(resolve));
    expect(log).toEqual(['engram: test run failed: store gone']);
    timers.fire();
    expect(runs).toBe(3);
    const stopped = schedule.stop();
    let done = false;
    void stopped.then(() => (done = true));
    await new Promise((resolve) => setImmediate(resolve));
    expect(done).toBe(false);
    release!();
    await stopped;
    expect(reports).toEqual([1, 3]);
    await schedule.stop();
    expect(timers.cleared).toBe(1);
    timers.fire();
    expect(runs).toBe(3);
  });

  it('waits one interval when runAtStart is false, and cuts intervals to what timers honour', async () => {
    const timers = manualTimers();
    let runs = 0;
    const schedule = startRepeatingRun({
      name: 'later',
      intervalMs: Number.MAX_SAFE_INTEGER,
      runAtStart: false,
      timers,
      log: () => undefined,
      run: async () => (runs += 1),
    });
    expect(runs).toBe(0);
    expect(timers.intervals).toEqual([MAX_TIMER_MS]);
    timers.fire();
    expect(runs).toBe(1);
    await schedule.stop();
    const zero = startRepeatingRun({
      name: 'z',
      intervalMs: 0,
      runAtStart: false,
      timers,
      log: () => undefined,
      run: async () => 0,
    });
    expect(timers.intervals.at(-1)).toBe(1);
    await zero.stop();
  });
});
