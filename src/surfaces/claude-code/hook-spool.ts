import {
  closeSync,
  constants,
  fchmodSync,
  fstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { tightenMode } from '../../kernel/node/private-files.js';
import { AGENT_NAMES, type AgentName } from './agent-hook-protocols.js';

/**
 * The spool of Claude Code's queueing hooks (Stop, PreCompact, SessionEnd): one JSON line per
 * event in `<ENGRAM_HOME>/spool/claude-code-hooks.jsonl`, appended by the hook process (which opens
 * no store and reads no transcript), then moved into the store's extraction queue by a drainer
 * (the hook's detached worker, `engram serve`, `engram queue run`). Only node:fs here: the hook
 * loads this and little else.
 *
 * A drainer claims the whole file by renaming it (one drainer wins), queues each event, and
 * removes the claimed file. A drainer that dies before the removal leaves its claim behind; the
 * next one takes it over (its process gone, or older than CLAIM_STALE_MS) and queues it again,
 * which adds nothing: jobs are keyed by session and the last message, and the cursor only moves.
 */

/** One queueing hook's event, as the hook saw it. */
export interface SpoolEntry {
  v: 1;
  event: 'Stop' | 'PreCompact' | 'SessionEnd';
  sessionId: string;
  /** The hook's cwd: the drainer opens engram for it (its project, its store). */
  cwd: string;
  transcriptPath?: string;
  reason?: string;
  /** The agent whose hook spooled it, when not Claude Code: how its transcript is read. */
  agent?: Exclude<AgentName, 'claude-code'>;
  /** A fingerprint of the store the hook's settings name: only a drainer with the same store queues it. */
  store: string;
  at: string;
  /** Drains that could not queue it so far (the store unreadable); each waits longer (retryDelayMs). */
  attempts?: number;
  /** Drains that could not read its transcript (an I/O error): given up after hooks.transcriptReadTries. */
  readFailures?: number;
  /** Not tried again before this time (ISO): a store that stays locked is not hammered every drain. */
  after?: string;
}

/** The spool stops growing here (the hook logs that the event was not spooled). */
export const SPOOL_MAX_BYTES = 4 * 1024 * 1024;
/** One line at most (paths are capped at 4,096 characters by the hook's input checks). */
export const SPOOL_LINE_MAX_BYTES = 16 * 1024;
/** A claim older than this is taken over even when its process seems alive (a reused pid). */
export const CLAIM_STALE_MS = 10 * 60_000;
const SPOOL_FILE = 'claude-code-hooks.jsonl';
const CLAIM = /^claimed-(\d+)-(\d+)-[a-z0-9]+\.jsonl$/;

export function spoolFolder(home: string): string {
  return join(home, 'spool');
}

export function spoolPath(home: string): string {
  return join(spoolFolder(home), SPOOL_FILE);
}

/**
 * Room kept beside the spool for a full disk: a file of this many bytes that a hook deletes when an
 * append fails for want of space, so the event and its log line still fit; the next drainer makes it
 * again once there is room (ensureSpoolReserve).
 */
export const SPOOL_RESERVE_BYTES = 64 * 1024;
const RESERVE_FILE = 'reserve';
const NO_SPACE = new Set(['ENOSPC', 'EDQUOT', 'EFBIG']);

/** What appending did: `reserve` is appended after spending the reserve (the disk is full). */
export type SpoolAppend = 'appended' | 'reserve' | 'full' | 'too-long';

/**
 * Appends one entry as one line with one O_APPEND write (file 0600, folder 0700). Returns why not
 * when the spool is full or the line too long; `reserve` when the disk was full and the reserve was
 * spent to make room; throws what the file system throws otherwise (a disk full with no reserve left).
 *
 * The line starts with a line end too, so a line torn by an earlier failed write (a full disk)
 * never swallows this one. A drainer may rename the spool between this open and this write: the
 * line then lands in a claim that may already be read, so after writing, a spool that is no longer
 * the file written to gets the line again (twice queued adds nothing; lost would lose the event).
 */
export function appendSpoolEntry(home: string, entry: SpoolEntry): SpoolAppend {
  const line = Buffer.from(`\n${JSON.stringify(entry)}\n`, 'utf8');
  if (line.length > SPOOL_LINE_MAX_BYTES) return 'too-long';
  try {
    return appendLine(home, line);
  } catch (error) {
    if (!isNoSpace(error) || !spendReserve(home)) throw error;
  }
  const appended = appendLine(home, line);
  return appended === 'appended' ? 'reserve' : appended;
}

function appendLine(home: string, line: Buffer): 'appended' | 'full' {
  mkdirSync(spoolFolder(home), { recursive: true, mode: 0o700 });
  tightenMode(spoolFolder(home));
  for (let attempt = 0; ; attempt += 1) {
    const fd = openSync(spoolPath(home), constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT, 0o600);
    let stayed: boolean;
    try {
      const info = fstatSync(fd);
      // Made wider by someone else (a copy, an older file): tightened before anything is written to it.
      if ((info.mode & 0o077) !== 0) fchmodSync(fd, info.mode & 0o700);
      if (info.size + line.length > SPOOL_MAX_BYTES) return 'full';
      const written = writeSync(fd, line);
      if (written !== line.length)
        throw Object.assign(new Error(`the spool took ${written} of ${line.length} bytes (disk full?)`), {
          code: 'ENOSPC',
        });
      // Compared while the file is still open: a claimed file already removed keeps its inode
      // number while open, so a new spool cannot have the same one.
      stayed = isSpool(home, fstatSync(fd));
    } finally {
      closeSync(fd);
    }
    if (stayed || attempt >= 20) return 'appended';
  }
}

function isNoSpace(error: unknown): boolean {
  return NO_SPACE.has((error as NodeJS.ErrnoException | undefined)?.code ?? '');
}

/** Deletes the reserve; false when there was none to spend. */
function spendReserve(home: string): boolean {
  try {
    rmSync(join(spoolFolder(home), RESERVE_FILE));
    return true;
  } catch {
    return false;
  }
}

/** Makes the reserve when it is missing (a drainer, while there is room); a partial one is removed. Never throws. */
export function ensureSpoolReserve(home: string): void {
  const path = join(spoolFolder(home), RESERVE_FILE);
  try {
    if (statSync(path).size === SPOOL_RESERVE_BYTES) return;
  } catch {
    // Missing: made below.
  }
  try {
    mkdirSync(spoolFolder(home), { recursive: true, mode: 0o700 });
    writeFileSync(path, Buffer.alloc(SPOOL_RESERVE_BYTES), { mode: 0o600 });
  } catch {
    rmSync(path, { force: true });
  }
}

function isSpool(home: string, written: { ino: number; dev: number }): boolean {
  try {
    const now = statSync(spoolPath(home));
    return now.ino === written.ino && now.dev === written.dev;
  } catch {
    return false;
  }
}

/** A claimed spool file: its path and the entries it held (torn or foreign lines skipped). */
export interface SpoolClaim {
  path: string;
  entries: SpoolEntry[];
  skipped: number;
}

/**
 * Claims what is waiting: first any claim a dead drainer left, then the spool itself, each by one
 * rename to a name of this process (two drainers never get the same file). Nothing waiting: [].
 */
export function claimSpool(home: string, now = Date.now()): SpoolClaim[] {
  const folder = spoolFolder(home);
  let names: string[];
  try {
    names = readdirSync(folder);
  } catch {
    return [];
  }
  const claims: SpoolClaim[] = [];
  const take = (from: string): void => {
    const to = join(folder, `claimed-${process.pid}-${now}-${Math.random().toString(36).slice(2, 10)}.jsonl`);
    try {
      renameSync(from, to);
    } catch {
      return; // Another drainer took it first, or it is gone.
    }
    claims.push(readClaim(to));
  };
  for (const name of names) {
    const match = CLAIM.exec(name);
    if (match && isAbandoned(Number(match[1]), Number(match[2]), now)) take(join(folder, name));
  }
  if (names.includes(SPOOL_FILE)) take(join(folder, SPOOL_FILE));
  return claims;
}

/** Removes a claim once each of its entries is queued (or put back in the spool). */
export function finishClaim(claim: SpoolClaim): void {
  rmSync(claim.path, { force: true });
}

/**
 * Keeps only these entries in a claim (those that could not be put back in the spool), by writing
 * them beside it and renaming over it: the next drainer takes over just them, with their counts.
 */
export function keepInClaim(claim: SpoolClaim, entries: readonly SpoolEntry[]): void {
  const temporary = `${claim.path}.${process.pid}.tmp`;
  try {
    writeFileSync(temporary, entries.map((entry) => `${JSON.stringify(entry)}\n`).join(''), { mode: 0o600 });
    renameSync(temporary, claim.path);
  } catch {
    rmSync(temporary, { force: true }); // The claim stays whole: its other entries are queued again, which adds nothing.
  }
}

/** Events waiting in the spool, claimed ones included (for `engram status`). */
export function countSpooled(home: string): number {
  let names: string[];
  try {
    names = readdirSync(spoolFolder(home));
  } catch {
    return 0;
  }
  let count = 0;
  for (const name of names) {
    if (name !== SPOOL_FILE && !CLAIM.test(name)) continue;
    try {
      count += readEntries(readFileSync(join(spoolFolder(home), name), 'utf8')).entries.length;
    } catch {
      // Claimed and removed meanwhile.
    }
  }
  // The sh fast path's raw events, one file each, not yet adopted (hook-incoming.ts).
  try {
    count += readdirSync(join(spoolFolder(home), 'incoming')).filter((name) =>
      /^ev-\d+-\d+\.json(\.\d+\.taking)?$/.test(name),
    ).length;
  } catch {
    // No fast-path event yet.
  }
  return count;
}

function readClaim(path: string): SpoolClaim {
  let text = '';
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    // Unreadable: nothing to queue from it.
  }
  return { path, ...readEntries(text) };
}

function readEntries(text: string): { entries: SpoolEntry[]; skipped: number } {
  const entries: SpoolEntry[] = [];
  let skipped = 0;
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    const entry = parseEntry(line);
    if (entry) entries.push(entry);
    else skipped += 1;
  }
  return { entries, skipped };
}

function parseEntry(line: string): SpoolEntry | undefined {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (value === null || typeof value !== 'object') return undefined;
  const entry = value as Partial<SpoolEntry>;
  const text = (field: unknown): boolean => typeof field === 'string' && field !== '';
  if (entry.v !== 1 || !['Stop', 'PreCompact', 'SessionEnd'].includes(entry.event as string)) return undefined;
  if (!text(entry.sessionId) || !text(entry.cwd) || !text(entry.store) || !text(entry.at)) return undefined;
  if (entry.transcriptPath !== undefined && !text(entry.transcriptPath)) return undefined;
  if (entry.after !== undefined && !text(entry.after)) return undefined;
  const agent: string | undefined = entry.agent;
  if (agent !== undefined && (agent === 'claude-code' || !(AGENT_NAMES as readonly string[]).includes(agent)))
    return undefined;
  const count = (field: unknown): boolean =>
    field === undefined || (Number.isSafeInteger(field) && (field as number) >= 0);
  if (!count(entry.attempts) || !count(entry.readFailures)) return undefined;
  return entry as SpoolEntry;
}

/** A claim whose drainer is gone (or that is older than CLAIM_STALE_MS: a reused pid, a drainer stuck for good). */
export function isAbandoned(pid: number, claimedAt: number, now: number): boolean {
  if (now - claimedAt > CLAIM_STALE_MS) return true;
  if (pid === process.pid) return false;
  try {
    process.kill(pid, 0);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

/** Whether the spool (not a claim) holds an event for this store no drainer has tried yet. */
export function hasNewEventFor(home: string, store: string): boolean {
  try {
    const { entries } = readEntries(readFileSync(spoolPath(home), 'utf8'));
    return entries.some((entry) => entry.store === store && entry.attempts === undefined);
  } catch {
    return false;
  }
}

/** When the spool's earliest event for this store that waits for a retry is due (epoch ms), if any. */
export function nextRetryFor(home: string, store: string): number | undefined {
  let text: string;
  try {
    text = readFileSync(spoolPath(home), 'utf8');
  } catch {
    return undefined;
  }
  let next: number | undefined;
  for (const entry of readEntries(text).entries) {
    if (entry.store !== store) continue;
    const due = entry.after === undefined ? Date.now() : Date.parse(entry.after);
    if (Number.isFinite(due) && (next === undefined || due < next)) next = due;
  }
  return next;
}
