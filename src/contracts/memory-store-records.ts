import type { Memory } from '../memory/memory.js';
import type { HistoryEntry } from '../memory/memory-history.js';
import type { Job } from './memory-store-jobs.js';
import type { VectorEntry } from './memory-store-vectors.js';

/** A page of records for copying a store whole, ordered by id, starting after `after`. */
export interface ExportPage {
  after?: string;
  limit: number;
}

/** A checkpoint as stored, with when it was last set: what `exportCheckpoints` returns and `restore` takes. */
export interface CheckpointRecord {
  name: string;
  value: string;
  updatedAt: string;
}

/** Records copied verbatim into a store (no new history): what `RecordCopy.restore` writes. */
export interface StoreRecords {
  memories?: readonly Memory[];
  history?: readonly HistoryEntry[];
  /** Vectors with the `updatedAt` of the memory version they were computed from. */
  vectors?: readonly VectorEntry[];
  /** Jobs in any state, with their attempts, leases and errors. */
  jobs?: readonly Job[];
  checkpoints?: readonly CheckpointRecord[];
}

/** How many records of each kind one `restore` call handled. */
export interface RestoreCounts {
  memories: number;
  history: number;
  vectors: number;
  jobs: number;
  checkpoints: number;
}

/** How many records `restore` wrote, and how many it skipped because an identical id was there. */
export interface RestoreReport {
  written: RestoreCounts;
  skipped: RestoreCounts;
}

/**
 * The record copy role (`store.records`): every record of the store read out by key and written
 * back verbatim, for copying a store whole (`engram migrate`), never for recall. Optional: without
 * it `engram migrate` refuses the store with STORE_UNSUPPORTED before anything is written.
 */
export interface RecordCopy {
  /** Every memory in any state and scope, by id. */
  exportMemories(page: ExportPage): Promise<Memory[]>;
  /** Every history entry, by id, including those of deleted memories. */
  exportHistory(page: ExportPage): Promise<HistoryEntry[]>;
  /** Every stored vector of the current space, by memory id, with that memory's updatedAt. */
  exportVectors(page: ExportPage): Promise<VectorEntry[]>;
  /** Every job in any state, by id (byte order). */
  exportJobs(page: ExportPage): Promise<Job[]>;
  /** Every checkpoint, by name (byte order of its UTF-8); `after` is the last name of the previous page. */
  exportCheckpoints(page: ExportPage): Promise<CheckpointRecord[]>;
  /**
   * Writes records exactly as given (ids, timestamps, counters, history, jobs, checkpoints), in one
   * transaction, with no new history: the receiving end of `engram migrate`. An id already present
   * is skipped when identical and refused with CONFLICT when it differs (so a resumed copy is
   * idempotent). Vectors need the vector space set first.
   */
  restore(records: StoreRecords): Promise<RestoreReport>;
}
