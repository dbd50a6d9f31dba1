import { EngramError } from '../../kernel/errors.js';
import type { Job, JobState } from '../../contracts/memory-store-jobs.js';
import type { CheckpointRecord } from '../../contracts/memory-store-records.js';
import type { RestoredJob } from '../../contracts/store-checks/record-copy-input.js';

/** A job as both backends store it: snake_case columns, times as epoch milliseconds, the payload as JSON text. */
export interface JobRow {
  id: string;
  queue: string;
  key: string;
  payload: string;
  state: JobState;
  attempts: number;
  max_attempts: number;
  run_at: number;
  locked_by: string | null;
  locked_until: number | null;
  last_error: string | null;
  created_at: number;
  updated_at: number;
}

export const JOB_COLUMNS =
  'id, queue, key, payload, state, attempts, max_attempts, run_at, locked_by, locked_until, last_error, created_at, updated_at';

const iso = (milliseconds: number): string => new Date(milliseconds).toISOString();

/** A stored job row as the MemoryStore interface returns it. */
export function rowToJob(row: JobRow): Job {
  return {
    id: row.id,
    queue: row.queue,
    key: row.key,
    payload: JSON.parse(row.payload) as unknown,
    state: row.state,
    attempts: row.attempts,
    maxAttempts: row.max_attempts,
    runAt: iso(row.run_at),
    lockedBy: row.locked_by,
    lockedUntil: row.locked_until === null ? null : iso(row.locked_until),
    lastError: row.last_error,
    createdAt: iso(row.created_at),
    updatedAt: iso(row.updated_at),
  };
}

export function jobNotFound(id: string): EngramError {
  return new EngramError(
    'NOT_FOUND',
    `No job with id ${JSON.stringify(id.slice(0, 140))}; "jobs.list" shows the jobs there are.`,
  );
}

/** A restored job's values in JOB_COLUMNS order (times as epoch milliseconds, the payload as its JSON text). */
export function restoredJobValues(job: RestoredJob): unknown[] {
  const time = (value: string | null): number | null => (value === null ? null : Date.parse(value));
  return [
    job.id,
    job.queue,
    job.key,
    job.payloadJson,
    job.state,
    job.attempts,
    job.maxAttempts,
    time(job.runAt),
    job.lockedBy,
    time(job.lockedUntil),
    job.lastError,
    time(job.createdAt),
    time(job.updatedAt),
  ];
}

/** One row of `checkpoints` as both backends store it. */
export interface CheckpointRow {
  name: string;
  value: string;
  updated_at: number;
}

export function rowToCheckpoint(row: CheckpointRow): CheckpointRecord {
  return { name: row.name, value: row.value, updatedAt: new Date(row.updated_at).toISOString() };
}
