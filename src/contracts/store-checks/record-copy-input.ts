import { EngramError, isEngramError } from '../../kernel/errors.js';
import {
  assertMemoryId,
  assertTimestamp,
  MEMORY_FIELD_ORDER,
  normalizeNewMemory,
  type Memory,
  type MemoryLimits,
} from '../../memory/memory.js';
import {
  canonicalHistoryEntry,
  canonicalJson,
  canonicalMemory,
  canonicalVector,
} from '../../memory/record-canonical-form.js';
import { DEFAULT_SETTINGS } from '../../kernel/settings.js';
import { checkCheckpointName, checkCheckpointValue } from './checkpoint-input.js';
import { MAX_COORDINATION_NAME_LENGTH } from './input-primitives.js';
import { checkJobId, checkNewJob, checkWorker, MAX_JOB_ATTEMPTS, MAX_JOB_ERROR_LENGTH } from './job-input.js';
import { CHANGE_ACTIONS, type ChangeAction, type HistoryEntry } from '../../memory/memory-history.js';
import { JOB_STATES, type Job } from '../memory-store-jobs.js';
import type { CheckpointRecord, ExportPage, StoreRecords } from '../memory-store-records.js';
import type { VectorEntry, VectorSpace } from '../memory-store-vectors.js';
import { checkVectorEntries } from './vector-input.js';

// The checks every backend applies to the record copy role's export pages (`exportMemories`, …) and
// to `records.restore` input, and the one definition of "identical" a restore uses to skip a record.

/** Most records one export page returns. */
export const MAX_EXPORT_PAGE = 10_000;
/** Most records of each kind (memories, history entries, vectors) one `records.restore` call takes. */
export const MAX_RESTORE_RECORDS = 10_000;

const RECORD_ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;
const HISTORY_FIELDS = ['id', 'memoryId', 'action', 'actor', 'at', 'before', 'after', 'undoOf'] as const;
const JOB_FIELDS = [
  'id',
  'queue',
  'key',
  'payload',
  'state',
  'attempts',
  'maxAttempts',
  'runAt',
  'lockedBy',
  'lockedUntil',
  'lastError',
  'createdAt',
  'updatedAt',
] as const;
const CHECKPOINT_FIELDS = ['name', 'value', 'updatedAt'] as const;
const RECORD_KINDS = ['memories', 'history', 'vectors', 'jobs', 'checkpoints'] as const;
/** Longest `after` of an export page: an id, or a checkpoint name (up to 500 characters). */
const MAX_AFTER_LENGTH = { id: 200, name: MAX_COORDINATION_NAME_LENGTH } as const;

/** A vector ready to restore: checked against the space, with the memory version it belongs to. */
export type RestoredVector = VectorEntry & { updatedAt: string };

/** A job ready to restore: canonical times, and its payload as the JSON text to store. */
export type RestoredJob = Job & { payloadJson: string };

/** What a restore checks records against besides memory limits. */
export interface RecordCheckOptions {
  /** Largest job payload as JSON; default setting `jobs.maxPayloadBytes` (the store's own limit for enqueueing). */
  maxPayloadBytes?: number;
}

/**
 * Checks an export page: `limit` a whole number from 1 to MAX_EXPORT_PAGE, `after` an optional
 * string (an id, or for checkpoints a name: `keyed: 'name'` allows the longer names those have).
 */
export function checkExportPage(page: ExportPage, keyed: 'id' | 'name' = 'id'): { after: string; limit: number } {
  if (page === null || typeof page !== 'object' || Array.isArray(page))
    throw invalid('An export page is an object { limit, after? }.');
  const { after, limit } = page;
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > MAX_EXPORT_PAGE) {
    throw invalid(`An export page's limit must be a whole number from 1 to ${MAX_EXPORT_PAGE}.`);
  }
  if (
    after !== undefined &&
    (typeof after !== 'string' || after.length > MAX_AFTER_LENGTH[keyed] || after.includes('\u0000'))
  ) {
    throw invalid(`An export page's "after" must be the ${keyed} of the last record of the previous page.`);
  }
  return { after: after ?? '', limit };
}

/**
 * Checks records to restore and returns them in canonical form (timestamps as ISO-8601 with
 * milliseconds). Every field must be present; unknown fields, duplicates in one call and values a
 * store would refuse on create are refused, so a restore can never write what a store cannot read.
 * Vectors are checked separately (`checkRestoredVectors`) because they need the store's space.
 */
export function checkStoreRecords(
  records: StoreRecords,
  limits: MemoryLimits,
  options: RecordCheckOptions = {},
): {
  memories: Memory[];
  history: HistoryEntry[];
  vectors: readonly VectorEntry[];
  jobs: RestoredJob[];
  checkpoints: CheckpointRecord[];
} {
  if (records === null || typeof records !== 'object' || Array.isArray(records)) {
    throw invalid('records.restore takes an object { memories?, history?, vectors?, jobs?, checkpoints? } of arrays.');
  }
  for (const key of Object.keys(records)) {
    if (!(RECORD_KINDS as readonly string[]).includes(key))
      throw invalid(`Unknown record kind ${JSON.stringify(key.slice(0, 40))}: use ${RECORD_KINDS.join(', ')}.`);
  }
  for (const kind of RECORD_KINDS) {
    const list = records[kind];
    if (list === undefined) continue;
    if (!Array.isArray(list)) throw invalid(`${kind} must be an array.`);
    if (list.length > MAX_RESTORE_RECORDS) {
      throw new EngramError(
        'PAYLOAD_TOO_LARGE',
        `records.restore takes at most ${MAX_RESTORE_RECORDS} ${kind} per call; got ${list.length}. Send smaller pages.`,
      );
    }
  }
  const memories = (records.memories ?? []).map((memory, index) =>
    checkMemoryRecord(memory, limits, `memory ${index}`),
  );
  refuseDuplicates(memories, 'Memory');
  const history = (records.history ?? []).map((entry, index) => checkHistoryRecord(entry, limits, index));
  refuseDuplicates(history, 'History entry');
  const maxPayloadBytes = options.maxPayloadBytes ?? DEFAULT_SETTINGS.jobs.maxPayloadBytes;
  const jobs = (records.jobs ?? []).map((job, index) => checkJobRecord(job, index, maxPayloadBytes));
  refuseDuplicates(jobs, 'Job');
  const jobKeys = new Set<string>();
  for (const job of jobs) {
    const key = JSON.stringify([job.queue, job.key]);
    if (jobKeys.has(key))
      throw new EngramError(
        'CONFLICT',
        `Two jobs of one records.restore call share queue ${JSON.stringify(job.queue.slice(0, 80))} and key ${JSON.stringify(job.key.slice(0, 80))}.`,
      );
    jobKeys.add(key);
  }
  const checkpoints = (records.checkpoints ?? []).map((checkpoint, index) => checkCheckpointRecord(checkpoint, index));
  refuseDuplicates(
    checkpoints.map((checkpoint) => ({ id: checkpoint.name })),
    'Checkpoint',
  );
  return { memories, history, vectors: records.vectors ?? [], jobs, checkpoints };
}

/** Checks vectors to restore against the store's space; each must name the memory version (`updatedAt`) it was computed from. */
export function checkRestoredVectors(
  vectors: readonly VectorEntry[],
  space: VectorSpace | undefined,
): RestoredVector[] {
  const checked = checkVectorEntries(vectors, space);
  return checked.map((entry) => {
    if (entry.updatedAt === undefined)
      throw invalid(`The vector of ${entry.id} must carry the updatedAt of the memory version it was computed from.`);
    return {
      id: entry.id,
      vector: entry.vector,
      updatedAt: assertTimestamp(entry.updatedAt, `updatedAt of the vector of ${entry.id}`),
    };
  });
}

/** Whether two memories are the same record, field for field. */
export function sameMemory(left: Memory, right: Memory): boolean {
  return canonicalMemory(left) === canonicalMemory(right);
}

/** Whether two history entries are the same record, snapshots included. */
export function sameHistoryEntry(left: HistoryEntry, right: HistoryEntry): boolean {
  return canonicalHistoryEntry(left) === canonicalHistoryEntry(right);
}

/** Whether two vectors are the same record: same memory version and the same float32 bits. */
export function sameVector(left: VectorEntry, right: VectorEntry): boolean {
  return canonicalVector(left) === canonicalVector(right);
}

/** A job's canonical text: every field, the payload as canonical JSON. */
export function canonicalJob(job: Job): string {
  return canonicalJson([
    job.id,
    job.queue,
    job.key,
    job.payload,
    job.state,
    job.attempts,
    job.maxAttempts,
    job.runAt,
    job.lockedBy,
    job.lockedUntil,
    job.lastError,
    job.createdAt,
    job.updatedAt,
  ]);
}

/** A checkpoint's canonical text: name, value and when it was set. */
export function canonicalCheckpoint(checkpoint: CheckpointRecord): string {
  return canonicalJson([checkpoint.name, checkpoint.value, checkpoint.updatedAt]);
}

/** Whether two jobs are the same record, field for field (the payload compared as JSON). */
export function sameJob(left: Job, right: Job): boolean {
  return canonicalJob(left) === canonicalJob(right);
}

/** Whether two checkpoints are the same record: same value, set at the same instant. */
export function sameCheckpoint(left: CheckpointRecord, right: CheckpointRecord): boolean {
  return canonicalCheckpoint(left) === canonicalCheckpoint(right);
}

/** The CONFLICT a restore raises for an id that holds different data. */
export function differentRecord(
  kind: 'memory' | 'history entry' | 'vector' | 'job' | 'checkpoint',
  id: string,
): EngramError {
  return new EngramError(
    'CONFLICT',
    `The store already holds a different ${kind} ${JSON.stringify(id.slice(0, 140))}: it is not a copy of the same store. Nothing was written; restore into an empty store.`,
  );
}

/** The CONFLICT a restore raises for a vector whose memory version is not in the store. */
export function vectorWithoutMemory(id: string): EngramError {
  return new EngramError(
    'CONFLICT',
    `The vector of ${JSON.stringify(id.slice(0, 140))} was computed from a version of that memory the store does not hold: restore the memory (same updatedAt) before its vector. Nothing was written.`,
  );
}

function checkMemoryRecord(value: unknown, limits: MemoryLimits, what: string): Memory {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw invalid(`${what} is not an object.`);
  const record = value as Record<string, unknown>;
  const missing = MEMORY_FIELD_ORDER.filter((field) => record[field] === undefined);
  if (missing.length > 0) throw invalid(`${what} lacks ${missing.join(', ')}: a restored memory carries every field.`);
  const unknown = Object.keys(record).filter((key) => !(MEMORY_FIELD_ORDER as readonly string[]).includes(key));
  if (unknown.length > 0) throw invalid(`${what} has unknown fields ${unknown.slice(0, 5).join(', ')}.`);
  if (typeof record.id !== 'string') throw invalid(`${what} has no id.`);
  try {
    return normalizeNewMemory(record as unknown as Memory, { now: String(record.createdAt), id: record.id, limits });
  } catch (error) {
    // Name the record: in a copy of thousands, "invalid name" alone does not say which one.
    if (!isEngramError(error)) throw error;
    throw new EngramError(error.code, `${what} (${JSON.stringify(record.id.slice(0, 140))}): ${error.message}`, {
      cause: error,
    });
  }
}

function checkHistoryRecord(value: unknown, limits: MemoryLimits, index: number): HistoryEntry {
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw invalid(`History entry ${index} is not an object.`);
  const record = value as Record<string, unknown>;
  const missing = HISTORY_FIELDS.filter((field) => record[field] === undefined);
  if (missing.length > 0) throw invalid(`History entry ${index} lacks ${missing.join(', ')}.`);
  const unknown = Object.keys(record).filter((key) => !(HISTORY_FIELDS as readonly string[]).includes(key));
  if (unknown.length > 0) throw invalid(`History entry ${index} has unknown fields ${unknown.slice(0, 5).join(', ')}.`);
  const id = checkRecordId(record.id, `the id of history entry ${index}`);
  const memoryId = assertMemoryId(record.memoryId);
  if (!(CHANGE_ACTIONS as readonly unknown[]).includes(record.action))
    throw invalid(
      `History entry ${id} has action ${JSON.stringify(record.action)}: use one of ${CHANGE_ACTIONS.join(', ')}.`,
    );
  if (typeof record.actor !== 'string' || record.actor.length === 0 || record.actor.length > 200)
    throw invalid(`History entry ${id} must name its actor (1-200 characters).`);
  const snapshot = (field: 'before' | 'after'): Memory | null => {
    if (record[field] === null) return null;
    const memory = checkMemoryRecord(record[field], limits, `the "${field}" of history entry ${id}`);
    if (memory.id !== memoryId)
      throw invalid(`The "${field}" of history entry ${id} is memory ${memory.id}, not ${memoryId}.`);
    return memory;
  };
  return {
    id,
    memoryId,
    action: record.action as ChangeAction,
    actor: record.actor,
    at: assertTimestamp(record.at, `at of history entry ${id}`),
    before: snapshot('before'),
    after: snapshot('after'),
    undoOf: record.undoOf === null ? null : checkRecordId(record.undoOf, `undoOf of history entry ${id}`),
  };
}

function checkJobRecord(value: unknown, index: number, maxPayloadBytes: number): RestoredJob {
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw invalid(`Job ${index} is not an object.`);
  const record = value as Record<string, unknown>;
  // A payload of null is a payload; only a missing one is missing.
  const missing = JOB_FIELDS.filter((field) => record[field] === undefined);
  if (missing.length > 0)
    throw invalid(`Job ${index} lacks ${missing.join(', ')}: a restored job carries every field.`);
  const unknown = Object.keys(record).filter((key) => !(JOB_FIELDS as readonly string[]).includes(key));
  if (unknown.length > 0) throw invalid(`Job ${index} has unknown fields ${unknown.slice(0, 5).join(', ')}.`);
  const id = checkJobId(record.id);
  const what = `job ${JSON.stringify(id.slice(0, 140))}`;
  try {
    const checked = checkNewJob(
      {
        queue: record.queue as string,
        key: record.key as string,
        payload: record.payload,
        maxAttempts: record.maxAttempts as number,
        runAt: record.runAt as string,
      },
      { maxAttempts: 1, maxPayloadBytes, now: 0 },
    );
    if (!(JOB_STATES as readonly unknown[]).includes(record.state))
      throw invalid(
        `state ${JSON.stringify(String(record.state).slice(0, 40))} is not one of ${JOB_STATES.join(', ')}.`,
      );
    const attempts = record.attempts;
    if (typeof attempts !== 'number' || !Number.isInteger(attempts) || attempts < 0 || attempts > MAX_JOB_ATTEMPTS) {
      throw invalid(`attempts must be a whole number from 0 to ${MAX_JOB_ATTEMPTS}.`);
    }
    const lastError = record.lastError;
    if (
      lastError !== null &&
      (typeof lastError !== 'string' || lastError.length > MAX_JOB_ERROR_LENGTH || lastError.includes('\u0000'))
    ) {
      throw invalid(`lastError is null or a text of at most ${MAX_JOB_ERROR_LENGTH} characters without NUL.`);
    }
    return {
      id,
      queue: checked.queue,
      key: checked.key,
      payload: JSON.parse(checked.payloadJson) as unknown,
      payloadJson: checked.payloadJson,
      state: record.state as Job['state'],
      attempts,
      maxAttempts: checked.maxAttempts,
      runAt: new Date(checked.runAt).toISOString(),
      lockedBy: record.lockedBy === null ? null : checkWorker(record.lockedBy),
      lockedUntil: record.lockedUntil === null ? null : assertTimestamp(record.lockedUntil, 'lockedUntil'),
      lastError,
      createdAt: assertTimestamp(record.createdAt, 'createdAt'),
      updatedAt: assertTimestamp(record.updatedAt, 'updatedAt'),
    };
  } catch (error) {
    if (!isEngramError(error)) throw error;
    throw new EngramError(error.code, `Invalid records: ${what}: ${error.message.replace(/^Invalid records: /, '')}`, {
      cause: error,
    });
  }
}

function checkCheckpointRecord(value: unknown, index: number): CheckpointRecord {
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw invalid(`Checkpoint ${index} is not an object.`);
  const record = value as Record<string, unknown>;
  const missing = CHECKPOINT_FIELDS.filter((field) => record[field] === undefined);
  if (missing.length > 0) throw invalid(`Checkpoint ${index} lacks ${missing.join(', ')}.`);
  const unknown = Object.keys(record).filter((key) => !(CHECKPOINT_FIELDS as readonly string[]).includes(key));
  if (unknown.length > 0) throw invalid(`Checkpoint ${index} has unknown fields ${unknown.slice(0, 5).join(', ')}.`);
  try {
    return {
      name: checkCheckpointName(record.name),
      value: checkCheckpointValue(record.value),
      updatedAt: assertTimestamp(record.updatedAt, 'updatedAt'),
    };
  } catch (error) {
    if (!isEngramError(error)) throw error;
    throw new EngramError(error.code, `Invalid records: checkpoint ${index}: ${error.message}`, { cause: error });
  }
}

function checkRecordId(value: unknown, what: string): string {
  if (typeof value !== 'string' || !RECORD_ID.test(value)) {
    throw invalid(`${what} must be 1-128 characters of letters, digits, ".", "_", ":" or "-".`);
  }
  return value;
}

function refuseDuplicates(records: ReadonlyArray<{ id: string }>, what: string): void {
  const seen = new Set<string>();
  for (const record of records) {
    if (seen.has(record.id))
      throw new EngramError('CONFLICT', `${what} ${record.id} appears twice in one records.restore call.`);
    seen.add(record.id);
  }
}

function invalid(message: string): EngramError {
  return new EngramError('INVALID_INPUT', `Invalid records: ${message}`);
}
