import { readdirSync, readFileSync } from 'node:fs';

/** The other processes that hold `text` in their command line or their environment (Linux /proc; none where there is none). */
export function processIdsWith(text: string, where: 'cmdline' | 'environ'): number[] {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return [];
  }
  const found: number[] = [];
  for (const entry of entries) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${entry}/${where}`, 'latin1').includes(text)) found.push(Number(entry));
    } catch {
      // Gone meanwhile, or not ours.
    }
  }
  return found;
}

/** How many other processes hold `text` in their command line or their environment. */
export function processesWith(text: string, where: 'cmdline' | 'environ'): number {
  return processIdsWith(text, where).length;
}
