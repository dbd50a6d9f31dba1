import { EngramError } from '../kernel/errors.js';
import { requireRole, type MemoryStore } from '../contracts/memory-store.js';
import { JOB_STATES, type Job, type JobQueue, type JobState } from '../contracts/memory-store-jobs.js';
import { EXTRACTION_QUEUE } from './extraction-job-payload.js';
import type { JobOutcome } from './extraction-report.js';
import { readRecentExtractions, type RecentExtraction } from './recent-extractions.js';
import { reviveFailedJobs } from './revive-failed-jobs.js';

/**
 * The job queue as `engram.jobs` offers it (`engram queue`, `GET /v1/jobs`, the viewer's Activity):
 * the extraction jobs listed, a failed one retried, the due ones run now. Jobs are shown without
 * their payload, which holds conversation text. A store without the jobs role answers
 * STORE_UNSUPPORTED, except `available` and `recent`, which say so.
 */

/** A job as every surface shows it: everything but the payload, plus the session it came from. */
export type JobJson = Omit<Job, 'payload'> & { sessionId?: string };

/** One run of a job as every surface shows it. */
export type JobOutcomeJson =
  | { job: JobJson; state: 'done'; report: Extract<JobOutcome, { state: 'done' }>['report'] }
  | { job: JobJson; state: 'retrying' | 'failed'; error: string };

/** How many jobs of the extraction queue are in each state. */
export type JobCounts = Record<JobState, number>;

export interface JobListOptions {
  /** Default pending, running and failed. */
  states?: readonly JobState[];
  /** At most this many jobs, oldest first (default 100, at most 10,000). */
  limit?: number;
}

/** The extraction queue: the jobs in the states asked for, and the counts of every state. */
export interface JobList {
  queue: string;
  states: JobState[];
  counts: JobCounts;
  jobs: JobJson[];
}

export interface JobRunOptions {
  /** Runs the due jobs (an Extractor: `createExtractor({ engram, model, autoStart: false })` of engram/node). */
  extractor: { drain(): Promise<JobOutcome[]> };
  /** Also the jobs waiting for a retry: their wait skipped, attempts kept. */
  force?: boolean;
  /** Also the failed jobs: put back with attempts reset, as `retry` does one. */
  failed?: boolean;
}

/** What a run did: what it put back or hastened first, each job it ran, and what is left. */
export interface JobRunReport {
  /** With `force`: the jobs waiting for a retry made due. */
  hastened?: number;
  /** With `failed`: the failed jobs put back, and those another process put back or removed first. */
  revived?: number;
  handledElsewhere?: number;
  outcomes: JobOutcomeJson[];
  /** The counts after the run. */
  left: JobCounts;
}

export const DEFAULT_JOB_STATES: readonly JobState[] = ['pending', 'running', 'failed'];
const DEFAULT_LIMIT = 100;
const MAX_LIMIT = 10_000;

/** `engram.jobs`: the durable extraction queue of the store. */
export class EngramJobs {
  readonly #store: MemoryStore;

  constructor(store: MemoryStore) {
    this.#store = store;
  }

  /** Whether the store has a job queue at all. */
  get available(): boolean {
    return this.#store.jobs !== undefined;
  }

  /** The jobs in the given states (default pending, running, failed), oldest first, with the counts of every state. */
  async list(options: JobListOptions = {}): Promise<JobList> {
    if (options === null || typeof options !== 'object')
      throw new EngramError('INVALID_INPUT', 'The options of a job list are an object ({ states?, limit? }).');
    const states = checkStates(options.states);
    const limit = options.limit ?? DEFAULT_LIMIT;
    if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT)
      throw new EngramError(
        'INVALID_INPUT',
        `Invalid limit ${JSON.stringify(limit)}: a whole number from 1 to ${MAX_LIMIT}.`,
      );
    const queue = this.#queue();
    const [jobs, counts] = await Promise.all([
      queue.list({ queue: EXTRACTION_QUEUE, states, limit }),
      queue.counts(EXTRACTION_QUEUE),
    ]);
    return { queue: EXTRACTION_QUEUE, states, counts, jobs: jobs.map(jobJson) };
  }

  /** How many jobs are in each state. */
  async counts(): Promise<JobCounts> {
    return this.#queue().counts(EXTRACTION_QUEUE);
  }

  /** Puts a failed job back to pending now, attempts reset (a worker picks it up); NOT_FOUND, or CONFLICT when it is not failed. */
  async retry(id: string): Promise<JobJson> {
    if (typeof id !== 'string' || !/^[A-Za-z0-9_-]{1,200}$/.test(id))
      throw new EngramError('INVALID_INPUT', `Invalid job id ${JSON.stringify(String(id).slice(0, 80))}.`);
    const queue = this.#queue();
    const existing = await queue.get(id);
    if (!existing || existing.queue !== EXTRACTION_QUEUE)
      throw new EngramError(
        'NOT_FOUND',
        `No job with id ${JSON.stringify(id.slice(0, 80))} in the extraction queue ("engram queue" lists them).`,
      );
    return jobJson(await queue.retry(id));
  }

  /**
   * Runs every due job now in this process, through the extractor given; with `failed` the failed
   * ones are put back first, with `force` the ones waiting for a retry are made due.
   */
  async run(options: JobRunOptions): Promise<JobRunReport> {
    if (options === null || typeof options !== 'object' || typeof options.extractor?.drain !== 'function')
      throw new EngramError('INVALID_INPUT', 'run() takes { extractor } (an Extractor), with force? and failed?.');
    for (const flag of ['force', 'failed'] as const)
      if (options[flag] !== undefined && typeof options[flag] !== 'boolean')
        throw new EngramError('INVALID_INPUT', `Invalid ${flag} ${JSON.stringify(options[flag])}: true or false.`);
    const queue = this.#queue();
    const revived = options.failed === true ? await reviveFailedJobs(queue, EXTRACTION_QUEUE) : undefined;
    const hastened = options.force === true ? await queue.hasten(EXTRACTION_QUEUE) : undefined;
    const outcomes = await options.extractor.drain();
    return {
      ...(hastened !== undefined && { hastened }),
      ...(revived && { revived: revived.revived, handledElsewhere: revived.handledElsewhere }),
      outcomes: outcomes.map(jobOutcomeJson),
      left: await queue.counts(EXTRACTION_QUEUE),
    };
  }

  /**
   * The latest runs of every process that shares the store (the service, hooks' workers, the CLI),
   * newest first; undefined for a store without checkpoints, which keeps none.
   */
  async recent(): Promise<RecentExtraction[] | undefined> {
    return this.#store.checkpoints ? readRecentExtractions(this.#store) : undefined;
  }

  #queue(): JobQueue {
    return requireRole(this.#store, 'jobs', 'the extraction queue');
  }
}

/** A job as every surface shows it: everything but the payload (conversation text), plus its session. */
export function jobJson(job: Job): JobJson {
  const { payload, ...rest } = job;
  const sessionId =
    payload !== null &&
    typeof payload === 'object' &&
    typeof (payload as { sessionId?: unknown }).sessionId === 'string'
      ? (payload as { sessionId: string }).sessionId
      : undefined;
  return { ...rest, ...(sessionId !== undefined && { sessionId }) };
}

/** One run of a job as every surface shows it. */
export function jobOutcomeJson(outcome: JobOutcome): JobOutcomeJson {
  return outcome.state === 'done'
    ? { job: jobJson(outcome.job), state: outcome.state, report: outcome.report }
    : { job: jobJson(outcome.job), state: outcome.state, error: outcome.error };
}

function checkStates(states: readonly JobState[] | undefined): JobState[] {
  if (states === undefined) return [...DEFAULT_JOB_STATES];
  if (!Array.isArray(states) || states.length === 0)
    throw new EngramError('INVALID_INPUT', `states is a non-empty list of ${JOB_STATES.join(', ')}.`);
  for (const state of states) {
    if (!JOB_STATES.includes(state))
      throw new EngramError(
        'INVALID_INPUT',
        `Invalid job state ${JSON.stringify(String(state).slice(0, 40))}: use ${JOB_STATES.join(', ')}.`,
      );
  }
  return [...new Set(states)];
}
