import { readdirSync, readFileSync } from 'node:fs';

/**
 * How many other processes hold `text` in their command line or their environment (Linux /proc; 0
 * where there is none).
 */
export function processesWith(text: string, where: 'cmdline' | 'environ'): number {
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
      if (readFileSync(`/proc/${entry}/${where}`, 'latin1').includes(text)) count += 1;
    } catch {
      // Gone meanwhile, or not ours.
    }
  }
  return count;
}
