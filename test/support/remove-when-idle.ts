import { rmSync } from 'node:fs';
import { processIdsWith } from './process-scan.js';

const pause = (ms: number): void => {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
};

/**
 * Removes a test's folder once no process runs inside it: a hook's detached worker (started with a
 * project folder inside it as its argument) may still be writing in ENGRAM_HOME after the agent
 * exits, and would make the folders again as they go. Waits up to 5 s for them to finish; then the
 * ones left (a worker that stays for a retry, `hooks.workerLingerMs`: after a corrupt-store step, up
 * to an hour) are sent SIGTERM, which they stop on, and SIGKILL 5 s later; then it removes what it can.
 */
export function removeWhenIdle(root: string): void {
  const waitUntilIdle = (ms: number): number[] => {
    const deadline = Date.now() + ms;
    let left = processIdsWith(root, 'cmdline');
    while (Date.now() < deadline && left.length > 0) {
      pause(100);
      left = processIdsWith(root, 'cmdline');
    }
    return left;
  };
  for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
    const left = waitUntilIdle(5_000);
    if (left.length === 0) break;
    for (const pid of left) {
      try {
        process.kill(pid, signal);
      } catch {
        // Gone meanwhile.
      }
    }
  }
  waitUntilIdle(2_000);
  try {
    rmSync(root, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
  } catch (error) {
    console.warn(`test folder ${root} not removed: ${(error as Error).message}`);
  }
}
