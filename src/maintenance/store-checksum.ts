import { createHash } from 'node:crypto';
import { EngramError } from '../kernel/errors.js';
import type { Memory } from '../memory/memory.js';
import { canonicalHistoryEntry, canonicalMemory, canonicalVector } from '../memory/record-canonical-form.js';
import { requireRole, type MemoryStore } from '../contracts/memory-store.js';
import type { Job } from '../contracts/memory-store-jobs.js';
import type { CheckpointRecord, RecordCopy } from '../contracts/memory-store-records.js';
import type { VectorEntry, VectorSpace } from '../contracts/memory-store-vectors.js';
import type { HistoryEntry } from '../memory/memory-history.js';
import { canonicalCheckpoint, canonicalJob } from '../contracts/store-checks/record-copy-input.js';

// Reading a store whole, kind by kind in key order, and the checksums `engram migrate` compares:
// SHA-256 over the canonical text of every record in key order, so two stores that hold the same
// records have the same checksums whatever their backend.

/** The kinds of record a store copy moves, in the order they must be written. */
export const RECORD_KINDS = ['memories', 'history', 'vectors', 'jobs', 'checkpoints'] as const;
export type RecordKind = (typeof RECORD_KINDS)[number];
export type RecordCounts = Record<RecordKind, number>;

/** A record of one kind, as the export pages return it. */
export type StoreRecord = Memory | HistoryEntry | VectorEntry | Job | CheckpointRecord;

/** No records of any kind: the start of every count. */
export function zeroCounts(): RecordCounts {
  return { memories: 0, history: 0, vectors: 0, jobs: 0, checkpoints: 0 };
}

/** What a record is paged and matched by: its name for a checkpoint, else its id. */
export function recordKey(kind: RecordKind, record: StoreRecord): string {
  return kind === 'checkpoints' ? (record as CheckpointRecord).name : (record as { id: string }).id;
}

/**
 * Orders keys as both backends do (bytes of UTF-8: SQLite's BINARY, Postgres' COLLATE "C"). For
 * ASCII, as every id is, that is JavaScript's order; a checkpoint name may hold characters beyond
 * U+FFFF, where UTF-16 order differs.
 */
export function compareKeys(left: string, right: string): number {
  // eslint-disable-next-line no-control-regex
  if (/^[\u0000-\u007f]*$/.test(left) && /^[\u0000-\u007f]*$/.test(right))
    return left < right ? -1 : left > right ? 1 : 0;
  return Buffer.compare(Buffer.from(left, 'utf8'), Buffer.from(right, 'utf8'));
}

/** What a store holds, in numbers and checksums: equal summaries mean equal records. */
export interface StoreSummary {
  counts: RecordCounts;
  /** `sha256:<hex>` per kind, over the canonical records in key order. */
  checksums: Record<RecordKind, string>;
  vectorSpace: VectorSpace | null;
}

export interface ReadOptions {
  pageSize: number;
  signal?: AbortSignal;
  /** Called after each page with the records read so far (of every kind). */
  onPage?: (read: number) => void;
}

/** The canonical text of one record of a kind: what checksums hash and comparisons compare. */
export function canonicalRecord(kind: RecordKind, record: StoreRecord): string {
  if (kind === 'memories') return canonicalMemory(record as Memory);
  if (kind === 'history') return canonicalHistoryEntry(record as HistoryEntry);
  if (kind === 'jobs') return canonicalJob(record as Job);
  if (kind === 'checkpoints') return canonicalCheckpoint(record as CheckpointRecord);
  return canonicalVector(record as VectorEntry);
}

/** The store's record copy role, or STORE_UNSUPPORTED: a store that cannot list its records cannot be copied or checked. */
export function recordCopyOf(store: MemoryStore): RecordCopy {
  return requireRole(store, 'records', 'copying a store (engram migrate)');
}

/** Reads one page of a kind after `after`. */
export function readPage(
  store: MemoryStore,
  kind: RecordKind,
  page: { after?: string; limit: number },
): Promise<StoreRecord[]> {
  const records = recordCopyOf(store);
  if (kind === 'memories') return records.exportMemories(page);
  if (kind === 'history') return records.exportHistory(page);
  if (kind === 'jobs') return records.exportJobs(page);
  if (kind === 'checkpoints') return records.exportCheckpoints(page);
  return records.exportVectors(page);
}

/**
 * Every record of a kind, page by page. Refuses a store whose pages are not in strictly rising
 * key order: a copy that resumes by key would otherwise skip or repeat records.
 */
export async function* recordPages(
  store: MemoryStore,
  kind: RecordKind,
  options: ReadOptions,
): AsyncGenerator<StoreRecord[]> {
  let after: string | undefined;
  for (;;) {
    options.signal?.throwIfAborted();
    const page = await readPage(store, kind, { limit: options.pageSize, ...(after !== undefined && { after }) });
    for (const record of page) {
      const key = recordKey(kind, record);
      if (after !== undefined && compareKeys(key, after) <= 0) {
        throw new EngramError(
          'STORE_ERROR',
          `The ${store.info().backend} store exports ${kind} out of order (${JSON.stringify(key.slice(0, 80))} after ${JSON.stringify(after.slice(0, 80))}); it cannot be copied safely.`,
        );
      }
      after = key;
    }
    if (page.length > 0) yield page;
    if (page.length < options.pageSize) return;
  }
}

/** Every record of a kind, one at a time. */
export async function* records(
  store: MemoryStore,
  kind: RecordKind,
  options: ReadOptions,
): AsyncGenerator<StoreRecord> {
  for await (const page of recordPages(store, kind, options)) yield* page;
}

/** Counts and checksums every record of a store by reading it whole. */
export async function summarizeStore(store: MemoryStore, options: ReadOptions): Promise<StoreSummary> {
  const counts = zeroCounts();
  const checksums: Record<RecordKind, string> = { memories: '', history: '', vectors: '', jobs: '', checkpoints: '' };
  let read = 0;
  for (const kind of RECORD_KINDS) {
    const hash = createHash('sha256');
    for await (const page of recordPages(store, kind, options)) {
      for (const record of page) hash.update(`${canonicalRecord(kind, record)}\n`);
      counts[kind] += page.length;
      read += page.length;
      options.onPage?.(read);
    }
    checksums[kind] = `sha256:${hash.digest('hex')}`;
  }
  return { counts, checksums, vectorSpace: (await store.vectors?.space()) ?? null };
}

/** Whether a store holds no record of any kind. */
export async function holdsNoRecords(store: MemoryStore): Promise<boolean> {
  for (const kind of RECORD_KINDS) if ((await readPage(store, kind, { limit: 1 })).length > 0) return false;
  return true;
}
