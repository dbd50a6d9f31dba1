import { EngramError, isEngramError } from '../kernel/errors.js';
import { redactSecrets } from '../privacy/secret-redaction.js';
import { recordRecentExtraction } from './recent-extractions.js';
import type { Settings } from '../kernel/settings.js';
import type { MemoryStore } from '../contracts/memory-store.js';
import type { Job } from '../contracts/memory-store-jobs.js';
import { EXTRACTION_QUEUE, explicitCheckpointName, turnCheckpointName } from './extraction-job-payload.js';
import { extractionStore, type ExtractionStore } from './extraction-store.js';
import type { ExtractionRunReport, JobOutcome } from './extraction-report.js';

export interface ExtractionWorkerOptions {
  /** The store whose queue the worker runs: without jobs, checkpoints and locks it has nothing to claim. */
  store: MemoryStore;
  settings: Pick<Settings, 'extraction'>;
  /** Runs one claimed job; rejects to fail it. */
  run: (job: Job, signal: AbortSignal) => Promise<ExtractionRunReport>;
  /** Names this worker in job leases; default the process id and a random part. */
  workerId?: string;
  now?: () => Date;
  /** Told of every finished job (the service logs them). */
  onOutcome?: (outcome: JobOutcome) => void;
  /** Told of trouble the worker itself hit (a lost lease, a store error while idle). */
  onWarning?: (warning: string) => void;
}

// Errors a retry cannot fix: fail the job at once, visibly, for `engram queue retry` after the fix.
// Finished work is cleaned up at most this often by one worker.
const PRUNE_INTERVAL_MS = 3_600_000;
const PERMANENT_CODES = new Set([
  'INVALID_INPUT',
  'INVALID_SCOPE',
  'CONFIG_INVALID',
  'MODEL_AUTH',
  'MODEL_REQUEST_INVALID',
  'MODEL_NOT_CONFIGURED',
  'PAYLOAD_TOO_LARGE',
]);

/**
 * Runs queued extraction jobs: claims one with a lease (`extraction.leaseMs`, renewed while it runs), runs it, completes it,
 * or fails it with exponential backoff (`extraction.retryBaseDelayMs` doubling up to
 * `retryMaxDelayMs`) until its attempts (`jobs.maxAttempts`) are used up and it stays `failed`.
 * A job whose worker died is claimed again at once (dead on this host) or once its lease runs out
 * (its heartbeat stopped), so nothing accepted waits long or is lost; a run still going at
 * `extraction.runTimeoutMs` is stopped and retried.
 */
export class ExtractionWorker {
  readonly workerId: string;
  readonly #options: ExtractionWorkerOptions;
  readonly #now: () => Date;
  #prunedAt = Number.NEGATIVE_INFINITY;
  #loop: Promise<void> | undefined;
  #stopping = false;
  #wake: (() => void) | undefined;
  #nudged = false;
  #controller = new AbortController();

  constructor(options: ExtractionWorkerOptions) {
    this.#options = options;
    this.#now = options.now ?? (() => new Date());
    this.workerId = options.workerId ?? `extraction:${process.pid}:${globalThis.crypto.randomUUID().slice(0, 8)}`;
  }

  /** Claims and runs one due job; undefined when none is due. */
  async runOnce(): Promise<JobOutcome | undefined> {
    return this.#runOnce(this.#controller.signal);
  }

  /** Runs due jobs until none is left (jobs waiting for a retry are left for later), or until `stop`; returns what happened to each. */
  async drain(options: { maxJobs?: number } = {}): Promise<JobOutcome[]> {
    const outcomes: JobOutcome[] = [];
    const maxJobs = options.maxJobs ?? Number.POSITIVE_INFINITY;
    // A stop aborts this signal (this drain ends); the worker gets a new one, so a later drain runs again.
    const signal = this.#controller.signal;
    while (outcomes.length < maxJobs && !signal.aborted) {
      const outcome = await this.#runOnce(signal);
      if (!outcome) break;
      outcomes.push(outcome);
    }
    return outcomes;
  }

  async #runOnce(signal: AbortSignal): Promise<JobOutcome | undefined> {
    const { settings } = this.#options;
    const store = extractionStore(this.#options.store);
    // A store without a queue holds no job to run (the extractor says it cannot queue).
    if (!store) return undefined;
    const job = await store.jobs.claim({
      queue: EXTRACTION_QUEUE,
      worker: this.workerId,
      leaseMs: settings.extraction.leaseMs,
    });
    if (!job) return undefined;
    // The lease is short and renewed while the run goes on (a heartbeat every third of it), so a
    // worker that died or hangs without its event loop loses the job within a lease, and one that
    // died on this host at once (the store checks its pid). A run is still cut off at
    // `extraction.runTimeoutMs`; a renewal that finds the lease taken (the heartbeat stalled past
    // the lease and another worker claimed it) stops the run too: two workers never run one job.
    const deadline = new AbortController();
    const budgetMs = settings.extraction.runTimeoutMs;
    const timer = setTimeout(
      () =>
        deadline.abort(
          new EngramError(
            'JOB_LEASE_LOST',
            `The extraction job ran longer than ${budgetMs} ms (extraction.runTimeoutMs) and was stopped; it will be retried.`,
          ),
        ),
      budgetMs,
    );
    timer.unref?.();
    const heartbeat = setInterval(
      () => {
        store.jobs.renew(job.id, this.workerId, settings.extraction.leaseMs).catch((error: unknown) => {
          if (isEngramError(error) && error.code === 'JOB_LEASE_LOST') deadline.abort(error);
          else
            this.#options.onWarning?.(
              `extraction job ${job.id}: its lease was not renewed (${error instanceof Error ? error.message : String(error)}); trying again`,
            );
        });
      },
      Math.max(10, Math.floor(settings.extraction.leaseMs / 3)),
    );
    heartbeat.unref?.();
    let outcome: JobOutcome;
    try {
      const report = await this.#options.run(job, AbortSignal.any([signal, deadline.signal]));
      if (deadline.signal.aborted) throw deadline.signal.reason;
      await store.jobs.complete(job.id, this.workerId);
      outcome = { job, state: 'done', report };
    } catch (error) {
      outcome = await this.#fail(
        store,
        job,
        deadline.signal.aborted && !signal.aborted ? deadline.signal.reason : error,
        signal,
      );
    } finally {
      clearTimeout(timer);
      clearInterval(heartbeat);
    }
    this.#options.onOutcome?.(outcome);
    // Kept in the store for the viewer's Activity, whichever process ran it; never fails the run.
    await recordRecentExtraction(store, outcome, this.#now()).catch((error: unknown) =>
      this.#options.onWarning?.(
        `the run of job ${job.id} was not added to the recent extractions: ${error instanceof Error ? error.message : String(error)}`,
      ),
    );
    return outcome;
  }

  /** Starts working in the background: runs jobs as they are queued (`nudge`) and looks for others' every `pollIntervalMs`. */
  start(): void {
    if (this.#loop || !extractionStore(this.#options.store)) return;
    this.#loop = this.#work();
  }

  /** Says a job was just queued, so an idle background worker runs it now instead of at its next poll. */
  nudge(): void {
    this.#nudged = true;
    this.#wake?.();
  }

  /**
   * Stops the background loop and any drain in progress; a running job is aborted and goes back to
   * the queue, its attempt not counted (a shutdown is not the job's fault). Then `drain` and `start` work again.
   */
  async stop(): Promise<void> {
    this.#stopping = true;
    this.#controller.abort(new Error('The extraction worker was stopped.'));
    this.#wake?.();
    await this.#loop;
    this.#loop = undefined;
    this.#stopping = false;
    this.#controller = new AbortController();
  }

  get running(): boolean {
    return this.#loop !== undefined && !this.#stopping;
  }

  /**
   * Deletes what finished long ago (`extraction.retainDays`): done jobs with their payloads, and the
   * per-turn and per-message records, which only guard runs the cursor has long passed. At most once
   * an hour per worker; the cursors themselves are kept.
   */
  async prune(): Promise<{ jobs: number; checkpoints: number }> {
    const { settings } = this.#options;
    const store = extractionStore(this.#options.store);
    if (!store) return { jobs: 0, checkpoints: 0 };
    const updatedBefore = new Date(this.#now().getTime() - settings.extraction.retainDays * 86_400_000).toISOString();
    const jobs = await store.jobs.delete({ queue: EXTRACTION_QUEUE, states: ['done'], updatedBefore });
    let checkpoints = 0;
    for (const prefix of [turnCheckpointName(''), explicitCheckpointName('', '').slice(0, -1)]) {
      checkpoints += await store.checkpoints.delete({ prefix, updatedBefore });
    }
    this.#prunedAt = this.#now().getTime();
    return { jobs, checkpoints };
  }

  async #work(): Promise<void> {
    while (!this.#stopping) {
      this.#nudged = false;
      try {
        if (this.#now().getTime() - this.#prunedAt >= PRUNE_INTERVAL_MS) await this.prune();
        await this.drain();
      } catch (error) {
        // The store failed while claiming or recording: keep the loop alive, try again later.
        this.#options.onWarning?.(`extraction worker: ${(error as Error).message}`);
      }
      if (this.#stopping) break;
      if (this.#nudged) continue;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, this.#options.settings.extraction.pollIntervalMs);
        // An idle worker never keeps the process alive.
        timer.unref?.();
        this.#wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.#wake = undefined;
    }
  }

  async #fail(store: ExtractionStore, job: Job, error: unknown, signal: AbortSignal): Promise<JobOutcome> {
    const { settings } = this.#options;
    const message = describeError(error);
    const code = isEngramError(error) ? { code: error.code } : {};
    if (signal.aborted) return this.#release(store, job, message, code);
    const permanent = isEngramError(error) && PERMANENT_CODES.has(error.code);
    const delay = Math.min(
      settings.extraction.retryMaxDelayMs,
      settings.extraction.retryBaseDelayMs * 2 ** Math.max(0, job.attempts - 1),
    );
    const retryAt = permanent ? undefined : new Date(this.#now().getTime() + delay).toISOString();
    try {
      const failed = await store.jobs.fail(job.id, this.workerId, {
        error: message,
        ...(retryAt !== undefined && { retryAt }),
      });
      return failed.state === 'failed'
        ? { job: failed, state: 'failed', error: message, ...code }
        : { job: failed, state: 'retrying', error: message, ...code, ...(retryAt !== undefined && { retryAt }) };
    } catch (failError) {
      // The lease was lost (another worker took the job over): that worker decides its fate.
      this.#options.onWarning?.(
        `extraction job ${job.id}: could not record its failure (${(failError as Error).message})`,
      );
      return { job, state: 'retrying', error: message, ...code };
    }
  }

  /**
   * Gives a job stopped mid-run back to the queue, due now, without spending its attempt. The store
   * counts attempts when a job is claimed and has no call to hand one back, so the job is failed and
   * retried, which resets its attempts: a job can thus get more runs than `jobs.maxAttempts` when the
   * process stops during them, but a shutdown never fails it for good.
   */
  async #release(store: ExtractionStore, job: Job, message: string, code: { code?: string }): Promise<JobOutcome> {
    try {
      await store.jobs.fail(job.id, this.workerId, { error: message });
      const released = await store.jobs.retry(job.id);
      return { job: released, state: 'retrying', error: message, ...code, retryAt: released.runAt };
    } catch (releaseError) {
      // The lease was lost (another worker took the job over), or the store closed mid-release: the job stays visible in `engram queue`.
      this.#options.onWarning?.(
        `extraction job ${job.id}: could not give it back to the queue (${(releaseError as Error).message})`,
      );
      return { job, state: 'retrying', error: message, ...code };
    }
  }
}

/** The error a job records (in the store, the outcome, the logs): a provider's message may quote what it was sent or answered, so it is redacted. */
function describeError(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return redactSecrets(isEngramError(error) ? `${error.code}: ${message}` : message).text;
}
