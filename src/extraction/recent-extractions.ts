import type { MemoryStore } from '../contracts/memory-store.js';
import { sanitizeText } from '../privacy/memory-privacy.js';
import type { ExtractionRunReport, JobOutcome } from './extraction-report.js';

/**
 * The latest extraction runs, kept in the store (a checkpoint) by whichever process ran them: the
 * service, a Claude Code hook's worker, `engram queue run`. The viewer's Activity shows them. Only
 * what the memories themselves hold is kept (ids, names, reasons); the conversation text a job
 * read and the excerpts of what it dropped are not, and every text passes the secret redaction.
 */
export interface RecentExtraction {
  at: string;
  job: { id: string; key: string; sessionId?: string };
  state: JobOutcome['state'];
  /** For a finished run: what it wrote and dropped. */
  report?: Pick<
    ExtractionRunReport,
    'status' | 'mode' | 'sessionId' | 'span' | 'modelCalls' | 'written' | 'warnings'
  > & { dropped: Array<{ reason: string; detail: string; name?: string }> };
  /** For a failed or retried run. */
  error?: string;
}

const RECENT = 'extraction-recent';
export const RECENT_EXTRACTIONS_KEPT = 50;
const TEXT_MAX = 500;

/** Adds one run to the store's recent list (newest first, at most 50). A store without checkpoints keeps none. */
export async function recordRecentExtraction(store: MemoryStore, outcome: JobOutcome, at: Date): Promise<void> {
  const checkpoints = store.checkpoints;
  if (!checkpoints) return;
  const entry = recentEntry(outcome, at);
  for (let attempt = 0; attempt < 5; attempt += 1) {
    const text = await checkpoints.get(RECENT);
    const next = [entry, ...parseRecent(text)].slice(0, RECENT_EXTRACTIONS_KEPT);
    if (await checkpoints.set(RECENT, JSON.stringify(next), { expected: text ?? null })) return;
  }
}

/** The recent runs the store holds, newest first. */
export async function readRecentExtractions(store: MemoryStore): Promise<RecentExtraction[]> {
  return store.checkpoints ? parseRecent(await store.checkpoints.get(RECENT)) : [];
}

function recentEntry(outcome: JobOutcome, at: Date): RecentExtraction {
  const sessionId =
    typeof outcome.job.payload === 'object' && outcome.job.payload !== null
      ? sessionOf(outcome.job.payload)
      : undefined;
  const job = { id: outcome.job.id, key: clean(outcome.job.key), ...(sessionId !== undefined && { sessionId }) };
  if (outcome.state !== 'done') return { at: at.toISOString(), job, state: outcome.state, error: clean(outcome.error) };
  const { report } = outcome;
  return {
    at: at.toISOString(),
    job,
    state: 'done',
    report: {
      status: report.status,
      mode: report.mode,
      sessionId: clean(report.sessionId),
      span: report.span,
      modelCalls: report.modelCalls,
      written: report.written.map((memory) => ({ ...memory, name: clean(memory.name) })),
      dropped: report.dropped.map((item) => ({
        reason: item.reason,
        detail: clean(item.detail),
        ...(item.name !== undefined && { name: clean(item.name) }),
      })),
      warnings: report.warnings.map(clean),
    },
  };
}

function sessionOf(payload: object): string | undefined {
  const value = (payload as { sessionId?: unknown }).sessionId;
  return typeof value === 'string' ? clean(value) : undefined;
}

function clean(text: string): string {
  return sanitizeText(text.slice(0, TEXT_MAX)).text;
}

function parseRecent(text: string | undefined): RecentExtraction[] {
  if (text === undefined) return [];
  try {
    const value: unknown = JSON.parse(text);
    return Array.isArray(value)
      ? value.filter(
          (entry): entry is RecentExtraction =>
            typeof entry === 'object' &&
            entry !== null &&
            typeof entry.at === 'string' &&
            typeof entry.job === 'object',
        )
      : [];
  } catch {
    return [];
  }
}
