import { readdirSync, readFileSync, rmSync } from 'node:fs';

/**
 * Removes a test's folder once no process runs inside it: a hook's detached worker (started with a
 * project folder inside it as its argument) may still be writing in ENGRAM_HOME after `claude -p` exits,
 * and would make the folders again as they go. Waits up to 30 s, then removes what it can.
 */
export function removeWhenIdle(root: string): void {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline && processesUsing(root) > 0)
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 100);
  try {
    rmSync(root, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
  } catch (error) {
    console.warn(`test folder ${root} not removed: ${(error as Error).message}`);
  }
}

/** How many processes name `root` in their command line (Linux /proc; 0 where there is none). */
function processesUsing(root: string): number {
  let count = 0;
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return 0;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(root)) count += 1;
    } catch {
      // Gone meanwhile.
    }
  }
  return count;
}
