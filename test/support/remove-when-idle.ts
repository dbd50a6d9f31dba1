import { rmSync } from 'node:fs';
import { processesWith } from './process-scan.js';

/**
 * Removes a test's folder once no process runs inside it: a hook's detached worker (started with a
 * project folder inside it as its argument) may still be writing in ENGRAM_HOME after `claude -p` exits,
 * and would make the folders again as they go. Waits up to 30 s, then removes what it can.
 */
export function removeWhenIdle(root: string): void {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline && processesWith(root, 'cmdline') > 0)
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 100);
  try {
    rmSync(root, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
  } catch (error) {
    console.warn(`test folder ${root} not removed: ${(error as Error).message}`);
  }
}
