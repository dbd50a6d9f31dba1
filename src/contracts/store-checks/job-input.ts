import { EngramError } from '../../kernel/errors.js';
import { JOB_STATES, type JobFilter, type JobState, type NewJob } from '../memory-store-jobs.js';
import { checkIdentifier, checkWholeNumber, parseInstant, invalid } from './input-primitives.js';
import { MAX_LIMIT } from './store-input.js';

// The checks every backend applies to jobs, once, so SQLite and Postgres refuse the same input with
// the same message and store only what they can give back. Locks and checkpoints: lock-input.ts,
// checkpoint-input.ts.

export const MAX_QUEUE_LENGTH = 200;
export const MAX_JOB_KEY_LENGTH = 500;
export const MAX_WORKER_LENGTH = 200;
export const MAX_JOB_ID_LENGTH = 200;
/** A job's lastError is cut to this many characters: a failing worker must still be able to record why. */
export const MAX_JOB_ERROR_LENGTH = 4_000;
/** Longest job lease: a day. A longer one would hide a dead worker's job for longer than anyone waits. */
export const MAX_LEASE_MS = 24 * 60 * 60 * 1_000;
export const MAX_JOB_ATTEMPTS = 1_000;
const MAX_PAYLOAD_DEPTH = 64;

/** A job as checked for enqueueing: the payload already serialized, times as epoch milliseconds. */
export interface CheckedNewJob {
  queue: string;
  key: string;
  payloadJson: string;
  maxAttempts: number;
  runAt: number;
}

/** Checks a new job and serializes its payload; maxAttempts and runAt get their defaults here. */
export function checkNewJob(
  input: NewJob,
  defaults: { maxAttempts: number; maxPayloadBytes: number; now: number },
): CheckedNewJob {
  if (input === null || typeof input !== 'object' || Array.isArray(input))
    throw invalid('A job is an object: { queue, key, payload, maxAttempts?, runAt? }.');
  const queue = checkQueue(input.queue);
  const key = checkIdentifier(input.key, 'A job key', MAX_JOB_KEY_LENGTH);
  if (!Object.hasOwn(input, 'payload') || input.payload === undefined)
    throw invalid('A job has a payload: any JSON value (null for none).');
  const payloadJson = serializePayload(input.payload, defaults.maxPayloadBytes);
  const maxAttempts = input.maxAttempts ?? defaults.maxAttempts;
  checkWholeNumber(maxAttempts, 'maxAttempts', 1, MAX_JOB_ATTEMPTS);
  const runAt = input.runAt === undefined ? defaults.now : parseInstant(input.runAt, 'runAt');
  return { queue, key, payloadJson, maxAttempts: maxAttempts as number, runAt };
}

export function checkQueue(queue: unknown): string {
  return checkIdentifier(queue, 'A queue name', MAX_QUEUE_LENGTH);
}

export function checkWorker(worker: unknown): string {
  return checkIdentifier(worker, 'A worker name', MAX_WORKER_LENGTH);
}

export function checkJobId(id: unknown): string {
  return checkIdentifier(id, 'A job id', MAX_JOB_ID_LENGTH);
}

/** Checks the options of jobs.claim: a queue, a worker name and a lease from 1 ms to a day. */
export function checkClaim(options: unknown): { queue: string; worker: string; leaseMs: number } {
  if (options === null || typeof options !== 'object' || Array.isArray(options))
    throw invalid('jobs.claim takes { queue, worker, leaseMs }.');
  const { queue, worker, leaseMs } = options as { queue?: unknown; worker?: unknown; leaseMs?: unknown };
  checkWholeNumber(leaseMs, 'leaseMs', 1, MAX_LEASE_MS);
  return { queue: checkQueue(queue), worker: checkWorker(worker), leaseMs: leaseMs as number };
}

/** Checks a lease renewal: a job id, a worker, a lease length. */
export function checkRenewal(
  id: unknown,
  worker: unknown,
  leaseMs: unknown,
): { id: string; worker: string; leaseMs: number } {
  checkWholeNumber(leaseMs, 'leaseMs', 1, MAX_LEASE_MS);
  return { id: checkJobId(id), worker: checkWorker(worker), leaseMs: leaseMs as number };
}

/** Checks a failure report: the error text (cut to 4,000 characters) and an optional retry time. */
export function checkFailure(failure: unknown): { error: string; retryAt?: number } {
  if (failure === null || typeof failure !== 'object' || Array.isArray(failure))
    throw invalid('jobs.fail takes { error, retryAt? }.');
  const { error, retryAt } = failure as { error?: unknown; retryAt?: unknown };
  if (typeof error !== 'string') throw invalid('jobs.fail needs error: a string saying what went wrong.');
  // Postgres text cannot hold NUL; an error message never needs one.
  const text = error.replaceAll('\u0000', '\uFFFD').slice(0, MAX_JOB_ERROR_LENGTH);
  return { error: text, ...(retryAt !== undefined && { retryAt: parseInstant(retryAt, 'retryAt') }) };
}

/** Checks the filter of jobs.delete: a queue, finished states only (a pending or running job is never deleted), an instant. */
export function checkJobDeletion(filter: unknown): {
  queue: string;
  states: Array<'done' | 'failed'>;
  updatedBefore: number;
} {
  if (filter === null || typeof filter !== 'object' || Array.isArray(filter))
    throw invalid('jobs.delete takes { queue, states, updatedBefore }.');
  const { queue, states, updatedBefore } = filter as { queue?: unknown; states?: unknown; updatedBefore?: unknown };
  const checked = checkStates(states);
  if (checked.length === 0 || checked.some((state) => state !== 'done' && state !== 'failed')) {
    throw invalid('jobs.delete deletes finished jobs only: states are "done" and/or "failed".');
  }
  return {
    queue: checkQueue(queue),
    states: checked as Array<'done' | 'failed'>,
    updatedBefore: parseInstant(updatedBefore, 'updatedBefore'),
  };
}

/** Checks a job listing filter: queue and states known, limit a whole number. */
export function checkJobFilter(filter: JobFilter | undefined): { queue?: string; states?: JobState[]; limit?: number } {
  if (filter === undefined) return {};
  if (filter === null || typeof filter !== 'object' || Array.isArray(filter))
    throw invalid('A job filter is an object: { queue?, states?, limit? }.');
  const checked: { queue?: string; states?: JobState[]; limit?: number } = {};
  if (filter.queue !== undefined) checked.queue = checkQueue(filter.queue);
  if (filter.states !== undefined) checked.states = checkStates(filter.states);
  if (filter.limit !== undefined) {
    checkWholeNumber(filter.limit, 'limit', 0, MAX_LIMIT);
    checked.limit = filter.limit;
  }
  return checked;
}

export function checkStates(states: unknown): JobState[] {
  if (!Array.isArray(states)) throw invalid(`states is an array of ${JOB_STATES.join(', ')}.`);
  for (const state of states) {
    if (!JOB_STATES.includes(state as JobState))
      throw invalid(
        `Unknown job state ${JSON.stringify(String(state)).slice(0, 40)}: one of ${JOB_STATES.join(', ')}.`,
      );
  }
  return [...new Set(states as JobState[])];
}

/**
 * Serializes a payload that JSON can give back unchanged: null, booleans, finite numbers, strings,
 * arrays and plain objects. Anything JSON would drop or alter (undefined, NaN, a Date, a Map, a
 * class instance, a cycle) is refused, so what a worker reads is what was enqueued.
 */
export function serializePayload(payload: unknown, maxBytes: number): string {
  assertJsonValue(payload, 'payload', 0, new Set());
  const json = JSON.stringify(payload);
  if (Buffer.byteLength(json, 'utf8') > maxBytes) {
    throw new EngramError(
      'INVALID_INPUT',
      `A job payload is larger than ${maxBytes} bytes as JSON (setting jobs.maxPayloadBytes); store the data elsewhere and enqueue a reference.`,
    );
  }
  return json;
}

function assertJsonValue(value: unknown, path: string, depth: number, seen: Set<object>): void {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw invalid(`${path} is ${value}, which JSON cannot hold.`);
    return;
  }
  if (typeof value !== 'object')
    throw invalid(`${path} is ${value === undefined ? 'undefined' : `a ${typeof value}`}, which JSON cannot hold.`);
  if (depth >= MAX_PAYLOAD_DEPTH) throw invalid(`The payload nests deeper than ${MAX_PAYLOAD_DEPTH} levels.`);
  if (seen.has(value)) throw invalid(`${path} refers back to itself (a cycle).`);
  seen.add(value);
  if (Array.isArray(value)) {
    for (let index = 0; index < value.length; index += 1) {
      if (!(index in value)) throw invalid(`${path}[${index}] is a hole in the array, which JSON cannot hold.`);
      assertJsonValue(value[index], `${path}[${index}]`, depth + 1, seen);
    }
  } else {
    const prototype = Object.getPrototypeOf(value) as unknown;
    if (prototype !== Object.prototype && prototype !== null)
      throw invalid(`${path} is not a plain object (a class instance, Date or Map); JSON would not give it back.`);
    for (const [key, item] of Object.entries(value))
      assertJsonValue(item, `${path}.${key.slice(0, 40)}`, depth + 1, seen);
  }
  seen.delete(value);
}
