import { isEngramError } from '../kernel/errors.js';
import type { JobQueue } from '../contracts/memory-store-jobs.js';
import { MAX_LIMIT } from '../contracts/store-checks/store-input.js';

// Failed jobs read per round, beyond the ones this run has already seen.
const PAGE = 500;

/** What `reviveFailedJobs` did: jobs it put back, and jobs another process put back or removed first. */
export interface RevivedJobs {
  revived: number;
  handledElsewhere: number;
}

/**
 * Puts every failed job of a queue back to pending, as `JobQueue.retry` does one (`engram queue run
 * --failed`). Each job once: one that fails again meanwhile (another worker ran it) is not revived
 * twice, and one another process retried or removed first (CONFLICT, NOT_FOUND) counts as handled
 * elsewhere, not as an error that stops the run.
 */
export async function reviveFailedJobs(jobs: Pick<JobQueue, 'list' | 'retry'>, queue: string): Promise<RevivedJobs> {
  const result: RevivedJobs = { revived: 0, handledElsewhere: 0 };
  const seen = new Set<string>();
  for (;;) {
    // Oldest first, so the seen ones that failed again come first: read past them, or they would
    // fill the page and hide failed jobs not yet seen.
    const limit = Math.min(MAX_LIMIT, seen.size + PAGE);
    const failed = (await jobs.list({ queue, states: ['failed'], limit })).filter((job) => !seen.has(job.id));
    if (failed.length === 0) return result;
    for (const job of failed) {
      seen.add(job.id);
      try {
        await jobs.retry(job.id);
        result.revived += 1;
      } catch (error) {
        if (!isEngramError(error) || (error.code !== 'CONFLICT' && error.code !== 'NOT_FOUND')) throw error;
        result.handledElsewhere += 1;
      }
    }
  }
}
