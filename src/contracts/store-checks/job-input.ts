import { EngramError } from '../../kernel/errors.js';
import { JOB_STATES, type JobFilter, type JobState, type NewJob } from '../memory-store-jobs.js';
import { MAX_LIMIT } from './store-input.js';

// The checks every backend applies to jobs, checkpoints and lock names, once, so SQLite and
// Postgres refuse the same input with the same message and store only what they can give back.

/** Longest lock or checkpoint name: room for `memory-write:` and the longest scope. */
export const MAX_COORDINATION_NAME_LENGTH = 500;
export const MAX_QUEUE_LENGTH = 200;
export const MAX_JOB_KEY_LENGTH = 500;
export const MAX_WORKER_LENGTH = 200;
export const MAX_JOB_ID_LENGTH = 200;
export const MAX_CHECKPOINT_VALUE_BYTES = 256 * 1024;
/** A job's lastError is cut to this many characters: a failing worker must still be able to record why. */
export const MAX_JOB_ERROR_LENGTH = 4_000;
/** Longest job lease: a day. A longer one would hide a dead worker's job for longer than anyone waits. */
export const MAX_LEASE_MS = 24 * 60 * 60 * 1_000;
/** Longest wait for a lock: an hour. */
export const MAX_LOCK_WAIT_MS = 60 * 60 * 1_000;
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

/** Checks a lock name (1-500 characters, no control characters). */
export function checkLockName(name: unknown): string {
  return identifier(name, 'A lock name', MAX_COORDINATION_NAME_LENGTH);
}

export function checkCheckpointName(name: unknown): string {
  return identifier(name, 'A checkpoint name', MAX_COORDINATION_NAME_LENGTH);
}

/** Checks a checkpoint value: a string of at most 256 KiB without NUL characters. */
export function checkCheckpointValue(value: unknown, field = 'A checkpoint value'): string {
  if (typeof value !== 'string') throw invalid(`${field} is a string.`);
  if (value.includes('\u0000')) throw invalid(`${field} may not contain NUL characters.`);
  if (Buffer.byteLength(value, 'utf8') > MAX_CHECKPOINT_VALUE_BYTES) {
    throw invalid(
      `${field} is larger than ${MAX_CHECKPOINT_VALUE_BYTES} bytes; store a cursor or an id, not the data.`,
    );
  }
  return value;
}

/** Checks the options of checkpoints.set: `expected` absent (plain set), null (set only if absent) or the value to replace. */
export function checkCheckpointOptions(options: unknown): { expected?: string | null } {
  if (options === undefined) return {};
  if (options === null || typeof options !== 'object' || Array.isArray(options))
    throw invalid('checkpoints.set options are an object: { expected? }.');
  const expected = (options as { expected?: unknown }).expected;
  if (expected === undefined) return {};
  if (expected === null) return { expected: null };
  return { expected: checkCheckpointValue(expected, 'expected') };
}

/** Checks the arguments of locks.hold; the wait defaults to `defaultWaitMs`. */
export function checkLockRequest(
  name: unknown,
  fn: unknown,
  options: unknown,
  defaultWaitMs: number,
): { name: string; waitMs: number } {
  const checkedName = checkLockName(name);
  if (typeof fn !== 'function') throw invalid('locks.hold runs a function: locks.hold(name, async () => …).');
  if (options !== undefined && (options === null || typeof options !== 'object' || Array.isArray(options))) {
    throw invalid('locks.hold options are an object: { waitMs? }.');
  }
  const waitMs = (options as { waitMs?: unknown } | undefined)?.waitMs ?? defaultWaitMs;
  wholeNumber(waitMs, 'waitMs', 0, MAX_LOCK_WAIT_MS);
  return { name: checkedName, waitMs: waitMs as number };
}

/** Checks a new job and serializes its payload; maxAttempts and runAt get their defaults here. */
export function checkNewJob(
  input: NewJob,
  defaults: { maxAttempts: number; maxPayloadBytes: number; now: number },
): CheckedNewJob {
  if (input === null || typeof input !== 'object' || Array.isArray(input))
    throw invalid('A job is an object: { queue, key, payload, maxAttempts?, runAt? }.');
  const queue = checkQueue(input.queue);
  const key = identifier(input.key, 'A job key', MAX_JOB_KEY_LENGTH);
  if (!Object.hasOwn(input, 'payload') || input.payload === undefined)
    throw invalid('A job has a payload: any JSON value (null for none).');
  const payloadJson = serializePayload(input.payload, defaults.maxPayloadBytes);
  const maxAttempts = input.maxAttempts ?? defaults.maxAttempts;
  wholeNumber(maxAttempts, 'maxAttempts', 1, MAX_JOB_ATTEMPTS);
  const runAt = input.runAt === undefined ? defaults.now : instant(input.runAt, 'runAt');
  return { queue, key, payloadJson, maxAttempts: maxAttempts as number, runAt };
}

export function checkQueue(queue: unknown): string {
  return identifier(queue, 'A queue name', MAX_QUEUE_LENGTH);
}

export function checkWorker(worker: unknown): string {
  return identifier(worker, 'A worker name', MAX_WORKER_LENGTH);
}

export function checkJobId(id: unknown): string {
  return identifier(id, 'A job id', MAX_JOB_ID_LENGTH);
}

/** Checks the options of jobs.claim: a queue, a worker name and a lease from 1 ms to a day. */
export function checkClaim(options: unknown): { queue: string; worker: string; leaseMs: number } {
  if (options === null || typeof options !== 'object' || Array.isArray(options))
    throw invalid('jobs.claim takes { queue, worker, leaseMs }.');
  const { queue, worker, leaseMs } = options as { queue?: unknown; worker?: unknown; leaseMs?: unknown };
  wholeNumber(leaseMs, 'leaseMs', 1, MAX_LEASE_MS);
  return { queue: checkQueue(queue), worker: checkWorker(worker), leaseMs: leaseMs as number };
}

/** Checks a failure report: the error text (cut to 4,000 characters) and an optional retry time. */
export function checkFailure(failure: unknown): { error: string; retryAt?: number } {
  if (failure === null || typeof failure !== 'object' || Array.isArray(failure))
    throw invalid('jobs.fail takes { error, retryAt? }.');
  const { error, retryAt } = failure as { error?: unknown; retryAt?: unknown };
  if (typeof error !== 'string') throw invalid('jobs.fail needs error: a string saying what went wrong.');
  // Postgres text cannot hold NUL; an error message never needs one.
  const text = error.replaceAll('\u0000', '\uFFFD').slice(0, MAX_JOB_ERROR_LENGTH);
  return { error: text, ...(retryAt !== undefined && { retryAt: instant(retryAt, 'retryAt') }) };
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
    updatedBefore: instant(updatedBefore, 'updatedBefore'),
  };
}

/** Checks the filter of checkpoints.delete: a non-empty name prefix and an instant. */
export function checkCheckpointDeletion(filter: unknown): { prefix: string; updatedBefore: number } {
  if (filter === null || typeof filter !== 'object' || Array.isArray(filter))
    throw invalid('checkpoints.delete takes { prefix, updatedBefore }.');
  const { prefix, updatedBefore } = filter as { prefix?: unknown; updatedBefore?: unknown };
  return { prefix: checkCheckpointName(prefix), updatedBefore: instant(updatedBefore, 'updatedBefore') };
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
    wholeNumber(filter.limit, 'limit', 0, MAX_LIMIT);
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

function identifier(value: unknown, what: string, maxLength: number): string {
  if (typeof value !== 'string' || value.length === 0) throw invalid(`${what} is a non-empty string.`);
  if (value.length > maxLength) throw invalid(`${what} is longer than ${maxLength} characters.`);
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(value)) throw invalid(`${what} may not contain control characters.`);
  return value;
}

function instant(value: unknown, field: string): number {
  const milliseconds = typeof value === 'string' ? Date.parse(value) : Number.NaN;
  if (Number.isNaN(milliseconds)) throw invalid(`${field} must be an ISO-8601 date-time.`);
  return milliseconds;
}

function wholeNumber(value: unknown, field: string, minimum: number, maximum: number): void {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < minimum || value > maximum) {
    throw invalid(`${field} must be a whole number from ${minimum} to ${maximum}.`);
  }
}

function invalid(message: string): EngramError {
  return new EngramError('INVALID_INPUT', message);
}
