import { setPriority } from 'node:os';
import { engramHome, loadSettings } from '../../node/load-settings.js';
import { writeHookLog } from './hook-log.js';
import { ADOPTER_LOCK, adoptIncoming, countIncoming } from './hook-incoming.js';
import {
  acquireWorkerLock,
  releaseWorkerLock,
  takeWorkerLock,
  touchWorkerLock,
  WORKER_LOCK_HEARTBEAT_MS,
} from './hook-worker-lock.js';

/** Rounds of one adopter at most: a hook that comes later starts the next one. */
const MAX_ROUNDS = 100;

/**
 * The process the sh fast path starts (`engram.mjs hook adopt-events`, detached) when no adopter
 * runs: it turns the raw events waiting in `spool/incoming/` into spool lines and starts each
 * store's worker as the Node hook would (hook-incoming.ts), then exits. One at a time (the
 * `worker-incoming.pid` lock, taken for it by the sh hook with an exclusive create and handed over
 * with its pid, as the Node hook does for a store's worker); it lets go of the lock before its last
 * look, so a hook that writes after that look finds no adopter and starts one. Loads no store.
 */
export async function runEventAdopter(): Promise<never> {
  const env = process.env;
  const started = Date.now();
  let home = '';
  try {
    home = engramHome(env);
    try {
      setPriority(loadSettings({ env }).settings.hooks.workerNice);
    } catch {
      // Settings unreadable or not allowed: the events' own settings are read one by one below.
    }
    if (await acquireWorkerLock(home, ADOPTER_LOCK)) {
      const heartbeat = setInterval(() => touchWorkerLock(home, ADOPTER_LOCK), WORKER_LOCK_HEARTBEAT_MS);
      heartbeat.unref();
      try {
        for (let round = 0; round < MAX_ROUNDS; round += 1) {
          adoptIncoming({ home, env, startWorkers: true });
          releaseWorkerLock(home, ADOPTER_LOCK);
          if (countIncoming(home) === 0 || !takeWorkerLock(home, ADOPTER_LOCK)) break;
        }
      } finally {
        clearInterval(heartbeat);
        releaseWorkerLock(home, ADOPTER_LOCK);
      }
    }
  } catch (error) {
    if (home !== '')
      writeHookLog(home, {
        at: new Date().toISOString(),
        event: 'adopter',
        status: 'failed',
        message: error instanceof Error ? error.message : String(error),
        ms: Date.now() - started,
      });
  }
  process.exit(0);
}
