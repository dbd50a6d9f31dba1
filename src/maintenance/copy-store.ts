import { EngramError } from '../kernel/errors.js';
import { DEFAULT_SETTINGS } from '../kernel/settings.js';
import { requireRole, type MemoryStore } from '../contracts/memory-store.js';
import type { StoreRecords } from '../contracts/memory-store-records.js';
import type { VectorSpace } from '../contracts/memory-store-vectors.js';
import { MAX_EXPORT_PAGE } from '../contracts/store-checks/record-copy-input.js';
import {
  canonicalRecord,
  compareKeys,
  holdsNoRecords,
  RECORD_KINDS,
  recordCopyOf,
  recordKey,
  recordPages,
  records,
  summarizeStore,
  zeroCounts,
  type RecordCounts,
  type RecordKind,
  type StoreSummary,
} from './store-checksum.js';

export type CopyPhase = 'checking' | RecordKind | 'verifying';

/** Where a copy is: `done` of about `total` records of the current phase. */
export interface CopyProgress {
  phase: CopyPhase;
  done: number;
  total: number;
}

export interface CopyStoreOptions {
  /** Records read and written per page, each page one transaction; default setting `migrate.pageSize`. */
  pageSize?: number;
  onProgress?: (progress: CopyProgress) => void;
  /** Stops the copy between two pages; what was written stays, and running it again resumes. */
  signal?: AbortSignal;
}

/** What a copy did and what both stores hold afterwards. */
export interface CopyStoreReport {
  /** The target already held part of this source (an interrupted copy) and the copy went on from there. */
  resumed: boolean;
  /** The target already held all of this source (a finished copy run again): nothing was written. */
  alreadyComplete: boolean;
  written: RecordCounts;
  /** Records the target already held, identical: skipped. */
  skipped: RecordCounts;
  vectorSpace: VectorSpace | null;
  /** Counts and checksums read back from each side after the copy: equal, or the copy failed. */
  source: StoreSummary;
  target: StoreSummary;
}

/**
 * Copies every memory, history entry, vector, job and checkpoint of one store into another, verbatim, then reads
 * both back and compares counts and checksums. The target must be empty or hold an interrupted
 * copy of the same source (then the copy resumes: what is there is skipped); a target holding
 * anything else is refused before anything is written. Writers of the source should be stopped.
 * Both stores need the record copy role (STORE_UNSUPPORTED otherwise), and the target the vectors
 * role when the source holds vectors.
 * @example
 * const report = await copyStore(sqliteStore, postgresStore, { onProgress: ({ phase, done, total }) => console.log(phase, done, total) });
 */
export async function copyStore(
  source: MemoryStore,
  target: MemoryStore,
  options: CopyStoreOptions = {},
): Promise<CopyStoreReport> {
  const pageSize = options.pageSize ?? DEFAULT_SETTINGS.migrate.pageSize;
  if (typeof pageSize !== 'number' || !Number.isInteger(pageSize) || pageSize < 1 || pageSize > MAX_EXPORT_PAGE) {
    throw new EngramError('INVALID_INPUT', `The page size must be a whole number from 1 to ${MAX_EXPORT_PAGE}.`);
  }
  assertDifferentStores(source, target);
  recordCopyOf(source);
  const targetRecords = recordCopyOf(target);
  const read = { pageSize, ...(options.signal && { signal: options.signal }) };
  const progress = options.onProgress ?? (() => undefined);

  const sourceSpace = await source.vectors?.space();
  const targetSpace = await target.vectors?.space();
  // The source's vectors need somewhere to go: checked before anything is written.
  const vectorCopy =
    sourceSpace === undefined
      ? undefined
      : { space: sourceSpace, into: requireRole(target, 'vectors', 'copying a store that holds vectors') };
  if (targetSpace !== undefined && !sameSpace(sourceSpace, targetSpace)) {
    throw notACopy(
      `its vectors are from ${describeSpace(targetSpace)}, the source's ${sourceSpace === undefined ? 'have no space set' : `from ${describeSpace(sourceSpace)}`}`,
    );
  }

  const heldRecords = !(await holdsNoRecords(target));
  if (heldRecords) await checkPartialCopy(source, target, read, progress);
  if (vectorCopy && targetSpace === undefined) await vectorCopy.into.setSpace(vectorCopy.space);

  const totals = await recordTotals(source);
  const written = zeroCounts();
  const skipped = zeroCounts();
  for (const kind of RECORD_KINDS) {
    progress({ phase: kind, done: 0, total: totals[kind] });
    let done = 0;
    for await (const page of recordPages(source, kind, read)) {
      const report = await targetRecords.restore({ [kind]: page } as StoreRecords);
      written[kind] += report.written[kind];
      skipped[kind] += report.skipped[kind];
      done += page.length;
      progress({ phase: kind, done, total: Math.max(done, totals[kind]) });
    }
  }

  const verifyTotal = 2 * sum(totals);
  progress({ phase: 'verifying', done: 0, total: verifyTotal });
  const sourceSummary = await summarizeStore(source, {
    ...read,
    onPage: (done) => progress({ phase: 'verifying', done, total: verifyTotal }),
  });
  const half = sum(sourceSummary.counts);
  const targetSummary = await summarizeStore(target, {
    ...read,
    onPage: (done) => progress({ phase: 'verifying', done: half + done, total: Math.max(verifyTotal, half + done) }),
  });
  assertSameSummary(sourceSummary, targetSummary);
  // A target that held records and got none is a finished copy run again, not a resumed one.
  const alreadyComplete = heldRecords && sum(written) === 0;
  const resumed = heldRecords && !alreadyComplete;
  return {
    resumed,
    alreadyComplete,
    written,
    skipped,
    vectorSpace: sourceSpace ?? null,
    source: sourceSummary,
    target: targetSummary,
  };
}

/**
 * Refuses a non-empty target unless every record it holds is in the source, identical: the state
 * an interrupted copy leaves (pages are transactions, so there are no half-written records).
 */
async function checkPartialCopy(
  source: MemoryStore,
  target: MemoryStore,
  read: { pageSize: number; signal?: AbortSignal },
  progress: (progress: CopyProgress) => void,
): Promise<void> {
  const total = sum(await recordTotals(target));
  let checked = 0;
  for (const kind of RECORD_KINDS) {
    const sourceRecords = records(source, kind, read);
    let next = await sourceRecords.next();
    try {
      for await (const record of records(target, kind, read)) {
        const key = recordKey(kind, record);
        while (!next.done && compareKeys(recordKey(kind, next.value), key) < 0) next = await sourceRecords.next();
        if (next.done || recordKey(kind, next.value) !== key)
          throw notACopy(`it holds ${describeRecord(kind, key)}, which the source does not have`);
        if (canonicalRecord(kind, next.value) !== canonicalRecord(kind, record)) {
          throw notACopy(
            `its ${describeRecord(kind, key)} differs from the source's (if the source changed since an interrupted copy, start again into an empty store)`,
          );
        }
        checked += 1;
        progress({ phase: 'checking', done: checked, total: Math.max(checked, total) });
      }
    } finally {
      await sourceRecords.return(undefined);
    }
  }
}

/** About how many records of each kind a store holds, for progress (checkpoints are not counted ahead: 0; a role the store lacks holds none). */
async function recordTotals(store: MemoryStore): Promise<RecordCounts> {
  const stats = await store.stats();
  const jobs = Object.values((await store.jobs?.counts()) ?? {}).reduce((total, count) => total + count, 0);
  return {
    ...zeroCounts(),
    memories: stats.total,
    history: stats.historyEntries,
    vectors: (await store.vectors?.counts())?.stored ?? 0,
    jobs,
  };
}

function sum(counts: RecordCounts): number {
  return RECORD_KINDS.reduce((total, kind) => total + counts[kind], 0);
}

function assertDifferentStores(source: MemoryStore, target: MemoryStore): void {
  const from = source.info();
  const to = target.info();
  if (source === target || (from.backend === to.backend && from.location === to.location)) {
    throw new EngramError(
      'INVALID_INPUT',
      `The source and the target are the same store (${from.backend} ${from.location}): copy into another one.`,
    );
  }
}

function assertSameSummary(source: StoreSummary, target: StoreSummary): void {
  const differences: string[] = [];
  for (const kind of RECORD_KINDS) {
    if (source.counts[kind] !== target.counts[kind])
      differences.push(`${kind}: ${source.counts[kind]} in the source, ${target.counts[kind]} in the target`);
    else if (source.checksums[kind] !== target.checksums[kind])
      differences.push(`${kind}: same count, different checksums`);
  }
  if (!sameSpace(source.vectorSpace ?? undefined, target.vectorSpace ?? undefined))
    differences.push('the vector spaces differ');
  if (differences.length > 0) {
    throw new EngramError(
      'STORE_ERROR',
      `The copy does not match its source (${differences.join('; ')}). Was the source written to during the copy? Stop every writer of the source and run the copy again.`,
      { details: { source, target } },
    );
  }
}

function notACopy(reason: string): EngramError {
  return new EngramError(
    'CONFLICT',
    `The target store holds different data: ${reason}. Nothing was written. Copy into an empty store, or into the one an interrupted copy of this source left.`,
  );
}

function describeRecord(kind: RecordKind, id: string): string {
  const what = {
    memories: 'memory',
    history: 'history entry',
    vectors: 'a vector of memory',
    jobs: 'job',
    checkpoints: 'checkpoint',
  }[kind];
  return `${what} ${JSON.stringify(id.slice(0, 140))}`;
}

function sameSpace(left: VectorSpace | undefined, right: VectorSpace | undefined): boolean {
  return left?.model === right?.model && left?.dimensions === right?.dimensions;
}

function describeSpace(space: VectorSpace): string {
  return `model ${JSON.stringify(space.model)} (${space.dimensions} dimensions)`;
}
