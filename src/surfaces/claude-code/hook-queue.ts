import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ENGRAM_NESTED_ENV } from '../../kernel/nested-call.js';
import type { LoadedSettings } from '../../node/load-settings.js';
import type { HookInput } from './hook-input.js';
import type { HookLogEntry } from './hook-log.js';
import { appendSpoolEntry, SPOOL_MAX_BYTES, type SpoolEntry } from './hook-spool.js';
import { claimWorkerStart, type WorkerStart } from './hook-worker-lock.js';

/**
 * The hook side of Stop, PreCompact and SessionEnd: one line in the spool (hook-spool.ts) and a
 * detached worker started, nothing else. The store is not opened and the transcript not read here
 * (only its size is looked at): the worker, `engram serve` or `engram queue run` moves the line
 * into the extraction queue (spool-drain.ts). Loads no store or recall module.
 */

/** A transcript larger than this is not read by the drainer either: `engram extract` reads it. */
export const HOOK_TRANSCRIPT_MAX_BYTES = 64 * 1024 * 1024;

/** What a queueing hook did, for tests and the log. */
export interface SpoolOutcome {
  status: 'spooled' | 'off' | 'skipped' | 'full';
  worker: boolean;
  reason?: string;
}

type Log = (entry: Omit<HookLogEntry, 'at' | 'event'>) => void;

/** A short fingerprint of a store URL: the spool names the store without holding its URL (which may carry a password). */
export function storeFingerprint(url: string): string {
  return createHash('sha256').update(url).digest('hex').slice(0, 16);
}

/** Spools one queueing event for the hook's cwd and starts the worker (when `hooks.worker` allows). */
export function spoolHookEvent(
  event: SpoolEntry['event'],
  input: HookInput,
  cwd: string,
  loaded: LoadedSettings,
  log: Log,
): SpoolOutcome {
  const { hooks } = loaded.settings;
  // SessionEnd still counts the session for consolidation when extraction is off.
  if (!hooks.extract && event !== 'SessionEnd') return { status: 'off', worker: false };
  const transcriptPath = hooks.extract ? usableTranscript(input, log) : undefined;
  if (transcriptPath === undefined && event !== 'SessionEnd')
    return { status: 'skipped', worker: false, reason: 'no transcript to queue' };
  const entry: SpoolEntry = {
    v: 1,
    event,
    sessionId: input.sessionId,
    cwd,
    ...(transcriptPath !== undefined && { transcriptPath }),
    ...(input.reason !== undefined && { reason: input.reason }),
    store: storeFingerprint(loaded.settings.store.url),
    at: new Date().toISOString(),
  };
  const appended = appendSpoolEntry(loaded.home, entry);
  if (appended !== 'appended') {
    log({
      status: 'failed',
      message:
        appended === 'full'
          ? `the hook spool is full (${SPOOL_MAX_BYTES} bytes): not queued; "engram queue run" drains it`
          : 'the event is too long for the hook spool: not queued',
    });
    return { status: 'full', worker: false };
  }
  if (!hooks.worker) return { status: 'spooled', worker: false };
  // A worker for this store that runs, or that another hook is starting, sees the line (it looks
  // again before it exits): of many hooks at once, one starts a worker.
  const claim = claimWorkerStart(loaded.home, entry.store);
  return { status: 'spooled', worker: claim ? spawnWorker(cwd, claim, log) : false };
}

/** The transcript path when it names a file a drainer will read; why not is logged when it is too large. */
function usableTranscript(input: HookInput, log: Log): string | undefined {
  const path = input.transcriptPath;
  if (path === undefined) return undefined;
  let size: number;
  try {
    const info = statSync(path);
    if (!info.isFile()) return undefined;
    size = info.size;
  } catch {
    return undefined; // Not there (yet): the next Stop queues it.
  }
  if (size > HOOK_TRANSCRIPT_MAX_BYTES) {
    log({
      status: 'skipped',
      message: `the transcript is ${size} bytes, over the ${HOOK_TRANSCRIPT_MAX_BYTES} a hook reads: run "engram extract ${path}"`,
    });
    return undefined;
  }
  return path;
}

/** The detached worker's script, beside this module in dist/ (and in the hooks' bundle). */
export function workerScriptPath(): string {
  return join(dirname(fileURLToPath(import.meta.url)), 'hook-worker.js');
}

/** Starts the worker that drains the spool and runs the queue with the configured model, detached: it outlives Claude Code's exit. */
function spawnWorker(cwd: string, claim: WorkerStart, log: Log): boolean {
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
      env: { ...process.env, [ENGRAM_NESTED_ENV]: '1' },
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
