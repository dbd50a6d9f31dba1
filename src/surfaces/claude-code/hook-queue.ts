import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ENGRAM_NESTED_ENV } from '../../kernel/nested-call.js';
import type { LoadedSettings } from '../../node/load-settings.js';
import { transcriptIsDatabase } from './agent-hook-protocols.js';
import { HOOK_TRANSCRIPT_MAX_BYTES, type HookInput } from './hook-input.js';
import type { HookLogEntry } from './hook-log.js';
import {
  appendSpoolEntry,
  SPOOL_MAX_BYTES,
  SPOOL_RESERVE_BYTES,
  type SpoolAppend,
  type SpoolEntry,
} from './hook-spool.js';
import { claimWorkerStart, type WorkerStart } from './hook-worker-lock.js';

/**
 * The hook side of Stop, PreCompact and SessionEnd: one line in the spool (hook-spool.ts) and a
 * detached worker started, nothing else. The store is not opened and the transcript not read here
 * (only its size is looked at): the worker, `engram serve` or `engram queue run` moves the line
 * into the extraction queue (spool-drain.ts). Loads no store or recall module.
 */

export { HOOK_TRANSCRIPT_MAX_BYTES };

/** What a queueing hook did, for tests and the log. */
export interface SpoolOutcome {
  /** `lost`: the event could not be spooled (a full disk, a full spool): said in the log, on stderr and to the user. */
  status: 'spooled' | 'off' | 'skipped' | 'lost';
  worker: boolean;
  reason?: string;
  /** What was lost and how to get it back, for the user (Claude Code shows a hook's `systemMessage`). */
  notice?: string;
}

type Log = (entry: Omit<HookLogEntry, 'at' | 'event'>) => void;

/** A short fingerprint of a store URL: the spool names the store without holding its URL (which may carry a password). */
export function storeFingerprint(url: string): string {
  return createHash('sha256').update(url).digest('hex').slice(0, 16);
}

/** For an event the sh fast path recorded and an adopter spools later (hook-incoming.ts). */
export interface SpoolEventOptions {
  /** The hook's environment (the worker is started with it); the process's by default. */
  env?: NodeJS.ProcessEnv;
  /** When the hook ran; now by default. */
  at?: string;
  /** False: no worker is started even when `hooks.worker` allows (the caller drains the spool itself). */
  startWorker?: boolean;
}

/** Spools one queueing event for the hook's cwd and starts the worker (when `hooks.worker` allows). */
export function spoolHookEvent(
  event: SpoolEntry['event'],
  input: HookInput,
  cwd: string,
  loaded: LoadedSettings,
  log: Log,
  options: SpoolEventOptions = {},
): SpoolOutcome {
  const { hooks } = loaded.settings;
  // SessionEnd still counts the session for consolidation when extraction is off.
  if (!hooks.extract && event !== 'SessionEnd') return { status: 'off', worker: false };
  const transcript = hooks.extract ? usableTranscript(input) : {};
  const transcriptPath = transcript.path;
  // Said, so that a turn never queued leaves a trace (a SessionEnd is still spooled, to be counted).
  if (transcript.why !== undefined && (event !== 'SessionEnd' || input.transcriptPath !== undefined))
    log({ status: 'skipped', message: transcript.why });
  if (transcriptPath === undefined && event !== 'SessionEnd')
    return { status: 'skipped', worker: false, reason: transcript.why ?? 'no transcript to queue' };
  const entry: SpoolEntry = {
    v: 1,
    event,
    sessionId: input.sessionId,
    cwd,
    ...(transcriptPath !== undefined && { transcriptPath }),
    ...(input.reason !== undefined && { reason: input.reason }),
    ...(input.agent !== undefined && { agent: input.agent }),
    store: storeFingerprint(loaded.settings.store.url),
    at: options.at ?? new Date().toISOString(),
  };
  const lost = (why: string): SpoolOutcome => {
    const what =
      event === 'SessionEnd'
        ? `the end of session ${input.sessionId} (its last turns and its count for consolidation)`
        : `the ${event} of session ${input.sessionId} (its turns since the last one queued)`;
    const recover =
      transcriptPath === undefined
        ? ''
        : ` A later Stop of this session queues those turns with its own; or run "engram extract ${transcriptPath}".`;
    const notice = `engram did not queue ${what}: ${why}.${recover}`;
    log({ status: 'lost', message: notice });
    return { status: 'lost', worker: false, reason: why, notice };
  };
  let appended: SpoolAppend;
  try {
    appended = appendSpoolEntry(loaded.home, entry);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const full = code === 'ENOSPC' || code === 'EDQUOT' || code === 'EFBIG';
    return lost(
      full
        ? `the disk holding ${loaded.home} is full (${code})`
        : `the hook spool cannot be written (${error instanceof Error ? error.message : String(error)})`,
    );
  }
  if (appended === 'full')
    return lost(`the hook spool is full (${SPOOL_MAX_BYTES} bytes); "engram queue run" drains it`);
  if (appended === 'too-long') return lost('the event is too long for the hook spool');
  if (appended === 'reserve')
    log({
      status: 'disk-full',
      message: `the disk holding ${loaded.home} is full: this event was kept by spending the spool's reserve (${SPOOL_RESERVE_BYTES} bytes); free some space, or the next events are lost`,
    });
  if (!hooks.worker || options.startWorker === false) return { status: 'spooled', worker: false };
  // A worker for this store that runs, or that another hook is starting, sees the line (it looks
  // again before it exits): of many hooks at once, one starts a worker.
  const claim = claimWorkerStart(loaded.home, entry.store);
  return { status: 'spooled', worker: claim ? spawnWorker(cwd, claim, log, options.env ?? process.env) : false };
}

/** The transcript path when it names a file a drainer will read, else why not. */
function usableTranscript(input: HookInput): { path?: string; why?: string } {
  const path = input.transcriptPath;
  if (path === undefined) return { why: 'the event names no transcript: nothing to queue' };
  let size: number;
  try {
    const info = statSync(path);
    if (!info.isFile()) return { why: `the transcript ${path} is not a file: nothing to queue` };
    size = info.size;
  } catch {
    return { why: `the transcript ${path} is not there (yet): the next Stop of the session queues its turns` };
  }
  if (size > HOOK_TRANSCRIPT_MAX_BYTES && !transcriptIsDatabase(input.agent))
    return {
      why: `the transcript is ${size} bytes, over the ${HOOK_TRANSCRIPT_MAX_BYTES} a hook reads: run "engram extract ${path}"`,
    };
  return { path };
}

/** The detached worker's script, beside this module in dist/ (and in the hooks' bundle). */
export function workerScriptPath(): string {
  return join(dirname(fileURLToPath(import.meta.url)), 'hook-worker.js');
}

/** Starts the worker that drains the spool and runs the queue with the configured model, detached: it outlives Claude Code's exit. */
function spawnWorker(cwd: string, claim: WorkerStart, log: Log, env: NodeJS.ProcessEnv): boolean {
  const script = workerScriptPath();
  if (!existsSync(script)) {
    claim.abandon();
    return false;
  }
  try {
    const child = spawn(process.execPath, [script, cwd], {
      detached: true,
      stdio: 'ignore',
      cwd,
      // The worker may call `claude -p` (the claude-code model provider): its hooks see this and do nothing.
      env: { ...env, [ENGRAM_NESTED_ENV]: '1' },
    });
    child.on('error', () => undefined);
    child.unref();
    if (child.pid === undefined) {
      claim.abandon();
      return false;
    }
    claim.started(child.pid);
    return true;
  } catch (error) {
    claim.abandon();
    log({ status: 'failed', message: `cannot start the extraction worker: ${(error as Error).message}` });
    return false;
  }
}
