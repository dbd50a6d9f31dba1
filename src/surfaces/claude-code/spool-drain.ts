import { existsSync, statSync } from 'node:fs';
import { loadSettings } from '../../node/load-settings.js';
import { openEngram, type OpenedEngram } from '../../node/open-engram.js';
import { queueSessionEnd, queueTranscript } from './claude-code-hooks.js';
import { HOOK_ACTOR, type HookInput } from './hook-input.js';
import { adoptIncoming } from './hook-incoming.js';
import { writeHookLog } from './hook-log.js';
import { storeFingerprint } from './hook-queue.js';
import {
  appendSpoolEntry,
  claimSpool,
  ensureSpoolReserve,
  finishClaim,
  keepInClaim,
  type SpoolEntry,
} from './hook-spool.js';

/**
 * Moves the Claude Code hooks' spool (hook-spool.ts) into the store's extraction queue: each event's
 * transcript read from its session's cursor and queued as Stop/PreCompact/SessionEnd always did
 * (claude-code-hooks.ts). Who drains: the worker each queueing hook starts, `engram serve` (every
 * SPOOL_POLL_MS) and `engram queue run`; with `hooks.worker` off, serve or `queue run` do.
 *
 * An event is queued at least once and counted once: a drainer that dies mid-way leaves its claim,
 * the next one queues it again, and that adds nothing (jobs keyed by session and last message, the
 * dream's session list a set). An event the store cannot take now (locked, corrupt) goes back to
 * the spool and is tried again after a wait that doubles each time (retryDelayMs), for
 * SPOOL_MAX_AGE_MS at most; an event for another store (the hook ran with other settings) goes back
 * untouched for a drainer with that store, for SPOOL_MAX_AGE_MS at most. An event whose transcript
 * can never be read (gone, not a file, not this user's to read) is given up at once, logged: no
 * wait makes it readable; one that fails in a way that may pass (an I/O error) is tried again like a
 * store that cannot take it, hooks.transcriptReadTries drains at most.
 */

/** How often `engram serve` looks at the spool. */
export const SPOOL_POLL_MS = 1_000;
/** An event no drainer could queue for this long is given up (logged). */
const SPOOL_MAX_AGE_MS = 7 * 24 * 3_600_000;

/** The wait before the next try of an event that failed `attempts` times: 5 s doubling, 10 minutes at most. */
export function retryDelayMs(attempts: number): number {
  return Math.min(10 * 60_000, 5_000 * 2 ** Math.min(20, Math.max(0, attempts - 1)));
}

export interface SpoolDrainReport {
  /** Events claimed from the spool. */
  claimed: number;
  /** Events that queued extraction jobs (or found nothing new: already queued). */
  queued: number;
  /** Events put back for a later drain (store unavailable, or another store's). */
  putBack: number;
  /** Events given up (logged). */
  dropped: number;
  /** Extraction jobs created. */
  jobs: number;
}

export interface SpoolDrainOptions {
  home: string;
  env: NodeJS.ProcessEnv;
  /** An engram the caller has open: used for events whose cwd resolves to its store and project. */
  opened?: OpenedEngram;
  /** Test hook: called after each event is queued (a crash here must lose nothing). */
  afterEach?: (entry: SpoolEntry) => void | Promise<void>;
}

/** Drains what the spool holds now. Never throws: what fails is logged and put back. */
export async function drainSpool(options: SpoolDrainOptions): Promise<SpoolDrainReport> {
  const { home, env } = options;
  const report: SpoolDrainReport = { claimed: 0, queued: 0, putBack: 0, dropped: 0, jobs: 0 };
  const log = (entry: SpoolEntry, status: string, message: string): void =>
    writeHookLog(home, {
      at: new Date().toISOString(),
      event: entry.event,
      sessionId: entry.sessionId,
      status,
      message,
    });
  const openedHere = new Map<string, Promise<OpenedEngram>>();
  const mine = options.opened
    ? `${storeFingerprint(options.opened.loaded.settings.store.url)}\0${options.opened.loaded.project.root}`
    : undefined;
  const engramFor = async (entry: SpoolEntry): Promise<OpenedEngram | 'foreign'> => {
    const loaded = loadSettings({ cwd: entry.cwd, env });
    const fingerprint = storeFingerprint(loaded.settings.store.url);
    if (fingerprint !== entry.store) return 'foreign';
    const key = `${fingerprint}\0${loaded.project.root}`;
    if (key === mine) return options.opened!;
    let opening = openedHere.get(key);
    if (!opening) {
      opening = openEngram({ cwd: entry.cwd, env, actor: HOOK_ACTOR });
      openedHere.set(key, opening);
      opening.catch(() => openedHere.delete(key));
    }
    return opening;
  };
  // A transcript that could not be read now: put back to wait, or given up after `tries` drains.
  const unreadable = (entry: SpoolEntry, why: string, tries: number): SpoolEntry | undefined => {
    const readFailures = (entry.readFailures ?? 0) + 1;
    const path = JSON.stringify((entry.transcriptPath ?? '').slice(0, 300));
    if (readFailures >= tries) {
      log(
        entry,
        'skipped',
        `not queued, given up after ${readFailures} tries: the transcript ${path} cannot be read (${why})`,
      );
      return undefined;
    }
    const attempts = (entry.attempts ?? 0) + 1;
    const wait = retryDelayMs(attempts);
    log(
      entry,
      'failed',
      `not queued yet: the transcript ${path} cannot be read now (try ${readFailures} of ${tries}, next in ${Math.round(wait / 1000)} s): ${why}`,
    );
    return { ...entry, attempts, readFailures, after: new Date(Date.now() + wait).toISOString() };
  };
  try {
    // The sh fast path's raw events first (hook-incoming.ts): they become spool lines claimed just below.
    adoptIncoming({ home, env, startWorkers: false });
    for (const claim of claimSpool(home)) {
      report.claimed += claim.entries.length;
      const back: SpoolEntry[] = [];
      for (const entry of claim.entries) {
        const now = Date.now();
        const age = now - Date.parse(entry.at);
        if (entry.after !== undefined && Date.parse(entry.after) > now && !(age > SPOOL_MAX_AGE_MS)) {
          back.push(entry); // Its wait is not over.
          continue;
        }
        if (!isFolder(entry.cwd)) {
          report.dropped += 1;
          log(entry, 'skipped', `not queued: the hook's cwd ${JSON.stringify(entry.cwd.slice(0, 200))} is gone`);
          continue;
        }
        try {
          const opened = await engramFor(entry);
          if (opened === 'foreign') {
            if (age > SPOOL_MAX_AGE_MS) {
              report.dropped += 1;
              log(entry, 'skipped', 'not queued: no drainer with the store the hook named came in 7 days');
            } else back.push(entry);
            continue;
          }
          const input: HookInput = {
            sessionId: entry.sessionId,
            cwd: entry.cwd,
            ...(entry.transcriptPath !== undefined && { transcriptPath: entry.transcriptPath }),
            ...(entry.reason !== undefined && { reason: entry.reason }),
            ...(entry.agent !== undefined && { agent: entry.agent }),
          };
          const context = {
            opened,
            input,
            log: (line: { status: string; message: string }) => log(entry, line.status, line.message),
          };
          const outcome =
            entry.event === 'SessionEnd' ? await queueSessionEnd(context) : await queueTranscript(context);
          if (outcome.status === 'unreadable') {
            const given = unreadable(
              entry,
              outcome.reason ?? 'unreadable',
              opened.engram.settings.hooks.transcriptReadTries,
            );
            if (given === undefined) report.dropped += 1;
            else back.push(given);
            continue;
          }
          if (outcome.status === 'unavailable') log(entry, 'failed', 'the store has no job queue: nothing was queued');
          if (outcome.givenUp) report.dropped += 1;
          else report.queued += 1;
          report.jobs += outcome.jobs;
          await options.afterEach?.(entry);
        } catch (error) {
          const attempts = (entry.attempts ?? 0) + 1;
          const why = error instanceof Error ? error.message : String(error);
          if (age > SPOOL_MAX_AGE_MS) {
            report.dropped += 1;
            log(entry, 'failed', `not queued after ${attempts} tries over 7 days, given up: ${why}`);
          } else {
            const wait = retryDelayMs(attempts);
            back.push({ ...entry, attempts, after: new Date(Date.now() + wait).toISOString() });
            log(entry, 'failed', `not queued yet (try ${attempts}, next in ${Math.round(wait / 1000)} s): ${why}`);
          }
        }
      }
      // Put back first, then drop the claim: a crash between the two queues some twice, which adds nothing.
      const unplaced: SpoolEntry[] = [];
      for (const entry of back) {
        try {
          const placed = appendSpoolEntry(home, entry);
          if (placed !== 'appended' && placed !== 'reserve') unplaced.push(entry);
        } catch {
          unplaced.push(entry);
        }
      }
      report.putBack += back.length;
      // What could not be put back (the spool full) stays in the claim, alone, for the next drainer to take over.
      if (unplaced.length === 0) finishClaim(claim);
      else keepInClaim(claim, unplaced);
    }
    // Room for the next full disk, made while there is room.
    ensureSpoolReserve(home);
  } finally {
    for (const opening of openedHere.values())
      await (await opening.catch(() => undefined))?.close().catch(() => undefined);
  }
  return report;
}

function isFolder(path: string): boolean {
  try {
    return existsSync(path) && statSync(path).isDirectory();
  } catch {
    return false;
  }
}
