export const JOB_STATES = ['pending', 'running', 'done', 'failed'] as const;
/** pending: waiting for its run time; running: leased by a worker; done; failed: retries used up (visible, retryable by hand). */
export type JobState = (typeof JOB_STATES)[number];

/**
 * A durable background job (extraction of a turn, for one): it survives crashes because it lives in
 * the store. `key` makes enqueueing idempotent within a queue: the same source turn is one job.
 */
export interface Job {
  id: string;
  queue: string;
  key: string;
  /** Any JSON value, stored verbatim. */
  payload: unknown;
  state: JobState;
  /** Runs started so far (a claim counts as one). */
  attempts: number;
  maxAttempts: number;
  /** Not claimed before this instant (ISO-8601): backoff after a failure. */
  runAt: string;
  /** The worker holding the lease while running, else null. */
  lockedBy: string | null;
  /** When the lease runs out; a running job past it can be claimed again (its worker died). */
  lockedUntil: string | null;
  lastError: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface NewJob {
  queue: string;
  key: string;
  payload: unknown;
  /** Default 5. */
  maxAttempts?: number;
  /** Default now. */
  runAt?: string;
}

export interface JobFilter {
  queue?: string;
  states?: readonly JobState[];
  limit?: number;
}

/** Which finished jobs `JobQueue.delete` removes. */
export interface FinishedJobFilter {
  queue: string;
  states: readonly ('done' | 'failed')[];
  updatedBefore: string;
}

/**
 * The jobs role (`store.jobs`): a durable queue with leases, shared by every process that uses the
 * store. Optional: without it (or without checkpoints and locks) extraction cannot queue turns and
 * says so (`extraction-queue-unavailable`).
 */
export interface JobQueue {
  /** Adds a job unless the queue already has one with this key (any state): then returns that one, created false. */
  enqueue(input: NewJob): Promise<{ job: Job; created: boolean }>;
  /**
   * Leases the oldest due job of a queue to `worker` for `leaseMs`: a pending job whose runAt has
   * come, or a running one whose lease ran out or whose holder is provably dead (the process that
   * claimed it is gone from this host: taken back at once, not after its lease). The store records
   * the claiming process's host and pid with the lease. Attempts + 1. Two workers never hold the same job.
   */
  claim(options: { queue: string; worker: string; leaseMs: number }): Promise<Job | undefined>;
  /**
   * The holder's heartbeat: extends the lease of a job `worker` holds to `leaseMs` from now, so a
   * short lease lasts as long as its worker lives and one whose heartbeat stopped is taken back.
   * JOB_LEASE_LOST if `worker` no longer holds it.
   */
  renew(id: string, worker: string, leaseMs: number): Promise<Job>;
  /** Marks a leased job done; JOB_LEASE_LOST if `worker` no longer holds it. */
  complete(id: string, worker: string): Promise<Job>;
  /**
   * Records a failed run of a leased job: back to pending at `retryAt` while attempts remain and
   * `retryAt` is given, else `failed`. JOB_LEASE_LOST if `worker` no longer holds it.
   */
  fail(id: string, worker: string, failure: { error: string; retryAt?: string }): Promise<Job>;
  /** Puts a failed job back to pending now with attempts reset (the user's retry); NOT_FOUND / CONFLICT otherwise. */
  retry(id: string): Promise<Job>;
  /**
   * Makes every pending job of a queue due now, its retry wait skipped (`engram queue run --force`);
   * attempts are kept, running, done and failed jobs untouched. Returns how many were waiting.
   */
  hasten(queue: string): Promise<number>;
  get(id: string): Promise<Job | undefined>;
  /** Jobs by state and queue, oldest first. */
  list(filter: JobFilter): Promise<Job[]>;
  counts(queue?: string): Promise<Record<JobState, number>>;
  /** Deletes finished jobs (`done`, and `failed` when named) of a queue last changed before `updatedBefore`; returns how many. */
  delete(filter: FinishedJobFilter): Promise<number>;
}
