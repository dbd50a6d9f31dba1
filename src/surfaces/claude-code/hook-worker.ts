import { setPriority } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { EXTRACTION_QUEUE } from '../../extraction/extraction-job-payload.js';
import { isEngramError } from '../../kernel/errors.js';
import { stopOnSignals } from '../../kernel/node/stop-signals.js';
import { engramHome, loadSettings } from '../../node/load-settings.js';
import type { Extractor } from '../../extraction/extractor.js';
import type { OpenedEngram } from '../../node/open-engram.js';
import { writeHookLog } from './hook-log.js';
import { HOOK_ACTOR } from './hook-input.js';
import { storeFingerprint } from './hook-queue.js';
import { hasNewEventFor, nextRetryFor } from './hook-spool.js';
import { pruneSessionRoots } from './hook-session-root.js';
import {
  acquireWorkerLock,
  releaseWorkerLock,
  takeWorkerLock,
  touchWorkerLock,
  WORKER_LOCK_HEARTBEAT_MS,
} from './hook-worker-lock.js';

/** Rounds of one worker at most (spool, jobs, dream check); what comes later waits for the next hook's worker or serve. */
const MAX_ROUNDS = 200;

/**
 * The detached worker a queueing hook starts (`node hook-worker.js <cwd>`): moves the hooks' spool
 * into the extraction queue (spool-drain.ts), runs every due extraction job with the configured
 * model (offline: explicit statements only), logs what failed, and exits once nothing is left to do.
 * What waits for a retry (an event the store could not take, a failed job, a dead worker's lease)
 * keeps it, idle, until it is due, for `hooks.workerLingerMs` at most: no other hook has to come
 * along for it. One per store at a time
 * (a lock in the spool folder, taken for it by the hook that starts it: a hook that finds one running
 * or starting starts none), and it looks at the spool again after each round; several at once would
 * still be safe (jobs are leased). It runs at the lowest CPU priority (`hooks.workerNice`) and loads
 * the store only once it holds the lock, so the hooks Claude Code waits for keep the CPU. `engram
 * serve` runs the same queue when it is up.
 */
async function runWorker(cwd: string): Promise<void> {
  const home = engramHome(process.env);
  const started = Date.now();
  const log = (status: string, message: string, code?: string): void =>
    writeHookLog(home, {
      at: new Date().toISOString(),
      event: 'worker',
      status,
      message,
      ...(code && { code }),
      ms: Date.now() - started,
    });
  try {
    const loaded = loadSettings({ cwd, env: process.env });
    try {
      setPriority(loaded.settings.hooks.workerNice);
    } catch {
      // Not allowed here: the worker runs at the priority it got.
    }
    const store = storeFingerprint(loaded.settings.store.url);
    // SIGTERM or SIGINT (a shutdown, a logout): the running job goes back to the queue, then the lock and the store are let go.
    let extractor: Extractor | undefined;
    const stop = stopOnSignals({
      graceMs: loaded.settings.server.stopGraceMs,
      log: (message) => log('worker-stopped', message),
      onStop: () => void extractor?.stop(),
    });
    const stopped = (): boolean => stop.signal.aborted;
    // Another worker for this store runs: it looks at the spool again before it exits. Nothing of
    // the store is loaded before this, so a worker that is not needed costs only node's start.
    if (!(await acquireWorkerLock(home, store))) {
      stop.dispose();
      return;
    }
    // The lock says this worker is alive while it runs: a lock left untouched is a dead worker's.
    const heartbeat = setInterval(() => touchWorkerLock(home, store), WORKER_LOCK_HEARTBEAT_MS);
    heartbeat.unref();
    const [{ openEngram }, { createExtractor }, { drainSpool, retryDelayMs }] = await Promise.all([
      import('../../node/open-engram.js'),
      import('../../node/create-extractor.js'),
      import('./spool-drain.js'),
    ]);
    let opened: Awaited<ReturnType<typeof openEngram>> | undefined;
    try {
      // A store that cannot open now (locked, unreachable) is tried again while the worker may stay:
      // the spooled events wait for it, not for another hook.
      for (let attempt = 1; opened === undefined && !stopped(); attempt += 1) {
        try {
          opened = await openEngram({ cwd, env: process.env, actor: HOOK_ACTOR });
        } catch (error) {
          const wait = retryDelayMs(attempt);
          // A store that needs the user (corrupt, newer, misconfigured) is not waited for.
          if (isEngramError(error) && NEEDS_THE_USER.has(error.code)) throw error;
          if (Date.now() + wait > started + loaded.settings.hooks.workerLingerMs) throw error;
          log(
            'worker-failed',
            `cannot open the store (try ${attempt}, next in ${Math.round(wait / 1000)} s): ${error instanceof Error ? error.message : String(error)}`,
          );
          await waitFor(Date.now() + wait, stopped);
        }
      }
      if (opened === undefined) return;
      const model = opened.engram.model;
      extractor = createExtractor({
        engram: opened.engram,
        projectRoot: opened.loaded.project.root,
        autoStart: false,
        ...(model && { model }),
      });
      let failedRounds = 0;
      for (let round = 0; round < MAX_ROUNDS && !stopped(); round += 1) {
        let due: number | undefined;
        try {
          await drainSpool({ home, env: process.env, opened });
          const outcomes = await extractor.drain();
          if (stopped()) break;
          for (const outcome of outcomes) {
            if (outcome.state !== 'done')
              log('worker-failed', `extraction job ${outcome.job.id} ${outcome.state}: ${outcome.error}`, outcome.code);
          }
          // Consolidation as `engram serve` runs it: gated (24 h, the scan interval, 5 sessions) and
          // locked, so this is a cheap check almost every time and one dream when the gates open.
          const { runDreamWithFiles, dreamSessionHomes } = await import('../../consolidation/node/dream-runner.js');
          const report = await runDreamWithFiles(
            { engram: opened.engram, projectRoot: opened.loaded.project.root, ...dreamSessionHomes(process.env) },
            { trigger: 'automatic' },
          );
          if (report.status === 'applied') log('dream', `dream ${report.changeSetId}: ${report.summary}`);
          if (hasNewEventFor(home, store)) continue;
          // What waits for a retry (an event the store could not take, a job that failed) is run when
          // it is due, without waiting for another hook: the worker stays, idle, watching the spool.
          due = await nextDue(opened, home, store);
          failedRounds = 0;
        } catch (error) {
          // A round that failed on something that may pass (the store busy or locked by another
          // process, a dream that could not take its lock) is tried again while the worker may stay;
          // the events put back wait for it, not for another hook.
          if (isEngramError(error) && NEEDS_THE_USER.has(error.code)) throw error;
          failedRounds += 1;
          const wait = retryDelayMs(failedRounds);
          log(
            'worker-failed',
            `a round failed (try ${failedRounds}, next in ${Math.round(wait / 1000)} s): ${error instanceof Error ? error.message : String(error)}`,
            isEngramError(error) ? error.code : undefined,
          );
          due = Date.now() + wait;
        }
        if (due !== undefined && due <= started + loaded.settings.hooks.workerLingerMs) {
          await waitFor(due, () => stopped() || hasNewEventFor(home, store));
          continue;
        }
        // Let go first, then look: a hook that appends after the look finds no worker and starts one.
        releaseWorkerLock(home, store);
        if (!hasNewEventFor(home, store) || !takeWorkerLock(home, store)) break;
      }
      pruneSessionRoots(home, 'claude-code', loaded.settings.hooks.sessionRootDays);
      if (!stopped()) {
        // What the hooks and extraction wrote goes to the sync remotes (debounced; nobody waits on it).
        const { syncIfDue } = await import('../../sync/node/sync-background.js');
        await syncIfDue(opened, { cwd, log: (message) => log('worker-failed', message) });
      }
    } finally {
      clearInterval(heartbeat);
      releaseWorkerLock(home, store);
      await opened?.close();
      stop.dispose();
    }
  } catch (error) {
    log('worker-failed', error instanceof Error ? error.message : String(error));
  }
}

/** Why a store may not open that no wait fixes: the user must act (the worker logs it and exits). */
const NEEDS_THE_USER = new Set([
  'STORE_CORRUPT',
  'STORE_SCHEMA_NEWER',
  'STORE_UNSUPPORTED',
  'CONFIG_INVALID',
  'INVALID_INPUT',
]);
/** Spool events are looked for this often while the worker waits for a retry. */
const WATCH_MS = 1_000;

/**
 * When the next thing this worker could run is due (epoch ms): a spooled event waiting for its
 * retry, a pending extraction job's retry, or a running job's lease that runs out (its worker stopped).
 */
async function nextDue(opened: OpenedEngram, home: string, store: string): Promise<number | undefined> {
  const times: number[] = [];
  const spooled = nextRetryFor(home, store);
  if (spooled !== undefined) times.push(spooled);
  const jobs = opened.engram.store.jobs;
  if (jobs) {
    for (const job of await jobs.list({ queue: EXTRACTION_QUEUE, states: ['pending', 'running'] })) {
      const at = job.state === 'pending' ? job.runAt : job.lockedUntil;
      if (at !== null) times.push(Date.parse(at));
    }
  }
  return times.length === 0 ? undefined : Math.min(...times);
}

/** Waits until `due` (at least WATCH_MS), or until `woken` says there is new work. */
async function waitFor(due: number, woken: () => boolean): Promise<void> {
  const until = Math.max(due, Date.now() + WATCH_MS);
  while (Date.now() < until) {
    await sleep(Math.min(WATCH_MS, until - Date.now()));
    if (woken()) return;
  }
}

await runWorker(process.argv[2] ?? process.cwd());
process.exit(0);
