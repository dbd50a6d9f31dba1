import { appendFileSync, mkdirSync, readFileSync, renameSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** One line of engram's Claude Code hook log: a hook that answered without memory, or a worker that failed. */
export interface HookLogEntry {
  at: string;
  event: string;
  /** `deadline`, `failed`, `skipped` (bad input), `worker-failed`. */
  status: string;
  message: string;
  /** The agent whose hook this was, when not Claude Code. */
  agent?: string;
  sessionId?: string;
  code?: string;
  ms?: number;
}

const LOG_MAX_BYTES = 1024 * 1024;

/** The log file under engram's home folder. */
export function hookLogPath(home: string): string {
  return join(home, 'logs', 'claude-code-hooks.log');
}

/** Appends one JSON line; never throws (a log that cannot be written must not fail the hook). Past 1 MiB the file is rotated once. */
export function writeHookLog(home: string, entry: HookLogEntry): void {
  try {
    const path = hookLogPath(home);
    mkdirSync(join(home, 'logs'), { recursive: true, mode: 0o700 });
    try {
      if (statSync(path).size > LOG_MAX_BYTES) renameSync(path, `${path}.1`);
    } catch {
      // No log yet.
    }
    const line = JSON.stringify({ ...entry, message: entry.message.slice(0, 500) });
    appendFileSync(path, `${line}\n`, { mode: 0o600 });
  } catch {
    // Nowhere to say it: the hook still answers.
  }
}

/** The last `count` entries of the log, oldest first; lines that are not entries are skipped. */
export function readHookLog(home: string, count: number): HookLogEntry[] {
  let text: string;
  try {
    text = readFileSync(hookLogPath(home), 'utf8');
  } catch {
    return [];
  }
  const entries: HookLogEntry[] = [];
  for (const line of text.split('\n').slice(-count - 1)) {
    if (line.trim() === '') continue;
    try {
      const value = JSON.parse(line) as HookLogEntry;
      if (value && typeof value.event === 'string' && typeof value.status === 'string') entries.push(value);
    } catch {
      // A torn line.
    }
  }
  return entries.slice(-count);
}
