import { createExtractor } from '../../node/create-extractor.js';
import { engramHome } from '../../node/load-settings.js';
import { openEngram } from '../../node/open-engram.js';
import { writeHookLog } from './hook-log.js';
import { HOOK_ACTOR } from './hook-input.js';
import { storeFingerprint } from './hook-queue.js';
import {
  acquireWorkerLock,
  hasNewEventFor,
  releaseWorkerLock,
  touchWorkerLock,
  WORKER_LOCK_HEARTBEAT_MS,
} from './hook-spool.js';
import { drainSpool } from './spool-drain.js';

/** Rounds of one worker at most (spool, jobs, dream check); what comes later waits for the next hook's worker or serve. */
const MAX_ROUNDS = 50;

/**
 * The detached worker a queueing hook starts (`node hook-worker.js <cwd>`): moves the hooks' spool
 * into the extraction queue (spool-drain.ts), runs every due extraction job with the configured
 * model (offline: explicit statements only), logs what failed, and exits. One per store at a time
 * (a lock in the spool folder: a hook that finds one running starts none), and it looks at the
 * spool again after each round; several at once would still be safe (jobs are leased). `engram
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
    const opened = await openEngram({ cwd, env: process.env, actor: HOOK_ACTOR });
    const store = storeFingerprint(opened.loaded.settings.store.url);
    try {
      // Another worker for this store runs: it looks at the spool again before it exits.
      if (!acquireWorkerLock(home, store)) return;
      // The lock says this worker is alive while it runs: a lock left untouched is a dead worker's.
      const heartbeat = setInterval(() => touchWorkerLock(home, store), WORKER_LOCK_HEARTBEAT_MS);
      heartbeat.unref();
      const model = opened.engram.model;
      const extractor = createExtractor({
        engram: opened.engram,
        projectRoot: opened.loaded.project.root,
        autoStart: false,
        ...(model && { model }),
      });
      for (let round = 0; round < MAX_ROUNDS; round += 1) {
        await drainSpool({ home, env: process.env, opened });
        const outcomes = await extractor.drain();
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
        // Let go first, then look: a hook that appends after the look finds no worker and starts one.
        releaseWorkerLock(home, store);
        if (!hasNewEventFor(home, store) || !acquireWorkerLock(home, store)) break;
      }
      // What the hooks and extraction wrote goes to the sync remotes (debounced; nobody waits on it).
      const { syncIfDue } = await import('../../sync/node/sync-background.js');
      await syncIfDue(opened, { cwd, log: (message) => log('worker-failed', message) });
    } finally {
      releaseWorkerLock(home, store);
      await opened.close();
    }
  } catch (error) {
    log('worker-failed', error instanceof Error ? error.message : String(error));
  }
}

await runWorker(process.argv[2] ?? process.cwd());
process.exit(0);
