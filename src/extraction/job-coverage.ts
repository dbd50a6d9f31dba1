import { isEngramError } from '../kernel/errors.js';
import type { Checkpoints } from '../contracts/memory-store-checkpoints.js';
import type { Job } from '../contracts/memory-store-jobs.js';
import {
  EXTRACTION_QUEUE,
  cursorCheckpointName,
  extractionJobKey,
  formatCursor,
  parseCursor,
  parseTurnProgress,
  readExtractionPayload,
  turnCheckpointName,
  type ExtractionCursor,
  type ExtractionJobPayload,
  type TurnProgress,
} from './extraction-job-payload.js';
import type { ExtractionRunReport } from './extraction-report.js';
import type { ExtractionStore } from './extraction-store.js';

// What one run of a session's jobs covers (the jobs it takes with it, the cursor it moves) and what
// it keeps with its job as it goes, so a retry or another worker never does the work twice.

const PENDING_SCAN_LIMIT = 1_000;
const CURSOR_WRITE_ATTEMPTS = 5;

/** A job one run covers, with its payload and what an earlier attempt kept. */
export interface CoveredJob {
  job: Job;
  payload: ExtractionJobPayload;
  progress: TurnProgress | undefined;
}

/**
 * Whether the cursor has passed a job's span: it was set by a later span (higher sequence) and its
 * message is not in this one, so another run extracted these turns (not a compaction: that is a
 * cursor whose message vanished from a later span). A job whose own earlier attempt left work
 * unfinished is not passed: its retry finishes it, reusing what that attempt kept.
 */
export function passedBy(cursor: ExtractionCursor | undefined, entry: CoveredJob): boolean {
  if (!cursor || cursor.sequence <= entry.payload.sequence || entry.progress?.state === 'extracting') return false;
  return !entry.payload.messages.some(
    (message) => message.id === cursor.messageId || message.partIds?.includes(cursor.messageId),
  );
}

/** This job and the queued jobs of its session that no run covered yet, in the order their spans were queued (by sequence). */
export async function jobsToCover(
  store: ExtractionStore,
  job: Job,
  payload: ExtractionJobPayload,
  progress: TurnProgress | undefined,
): Promise<CoveredJob[]> {
  const others: Job[] = [];
  if (progress?.jobIds) {
    // A retry covers exactly what its first attempt covered, so it reuses that attempt's answers.
    for (const id of progress.jobIds.slice(1)) {
      const other = await store.jobs.get(id);
      if (other) others.push(other);
    }
  } else {
    // Pending jobs of every session (JobFilter has no key prefix yet): bounded, and only this session's payloads are read below.
    others.push(
      ...(await store.jobs.list({ queue: EXTRACTION_QUEUE, states: ['pending'], limit: PENDING_SCAN_LIMIT })),
    );
  }
  // Job keys start with the session id (extractionJobKey): other sessions' payloads are never read.
  const keyPrefix = extractionJobKey(payload.sessionId, '');
  const covered: CoveredJob[] = [{ job, payload, progress }];
  for (const other of others) {
    if (other.id === job.id || !other.key.startsWith(keyPrefix)) continue;
    let otherPayload: ExtractionJobPayload;
    try {
      otherPayload = readExtractionPayload(other.payload);
    } catch {
      continue; // Its own run reports it.
    }
    // A session whose id extends this one ("chat:1" for "chat") shares the key prefix.
    if (otherPayload.sessionId !== payload.sessionId) continue;
    const otherProgress = parseTurnProgress(await store.checkpoints.get(turnCheckpointName(other.key)));
    if (otherProgress?.state === 'done') continue;
    covered.push({ job: other, payload: otherPayload, progress: otherProgress });
  }
  return covered.sort((a, b) => a.payload.sequence - b.payload.sequence);
}

/** Moves the cursor to the end of the newest span this run covered; never backwards (a retried old job leaves it). */
export async function advanceCursor(
  checkpoints: Checkpoints,
  sessionId: string,
  payload: ExtractionJobPayload,
  messageId: string,
  report: ExtractionRunReport,
): Promise<void> {
  const name = cursorCheckpointName(sessionId);
  for (let attempt = 0; attempt < CURSOR_WRITE_ATTEMPTS; attempt += 1) {
    const raw = await checkpoints.get(name);
    const current = parseCursor(raw);
    if (current && current.sequence > payload.sequence) return;
    if (await checkpoints.set(name, formatCursor({ messageId, sequence: payload.sequence }), { expected: raw ?? null }))
      return;
  }
  report.warnings.push('the cursor could not be moved: another process kept changing it');
}

/** Keeps a run's progress with its job, so a retry reuses what it did; too large to keep is a warning. */
export async function saveProgress(
  checkpoints: Checkpoints,
  key: string,
  state: TurnProgress,
  report: ExtractionRunReport,
): Promise<void> {
  try {
    await checkpoints.set(turnCheckpointName(key), JSON.stringify(state));
  } catch (error) {
    // Too large to keep (a huge span): the run goes on; a retry would ask the model again.
    if (!isEngramError(error) || error.code !== 'INVALID_INPUT') throw error;
    report.warnings.push(`progress not kept: ${error.message}`);
  }
}
