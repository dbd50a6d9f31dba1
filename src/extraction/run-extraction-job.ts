import type { Engram } from '../engram.js';
import type { Job } from '../contracts/memory-store-jobs.js';
import type { ConversationMessage } from '../contracts/conversation.js';
import { mergeMessageSpans, messagesAfter } from './conversation-spans.js';
import { applyExplicitOnce } from './explicit-statements.js';
import {
  cursorCheckpointName,
  parseCursor,
  parseTurnProgress,
  readExtractionPayload,
  sessionLockName,
  turnCheckpointName,
  type ExtractionJobPayload,
  type TurnProgress,
} from './extraction-job-payload.js';
import type { WriteScopes } from './extraction-output.js';
import { emptyReport, type ExtractionRunReport } from './extraction-report.js';
import type { ExtractionRunDependencies, JobRun } from './extraction-run-dependencies.js';
import { requireExtractionStore } from './extraction-store.js';
import { advanceCursor, jobsToCover, passedBy, saveProgress, type CoveredJob } from './job-coverage.js';
import { spanWroteMemory } from './memory-write-detection.js';
import { uniqueRecalled, type RecalledMemory } from './recalled-memories.js';
import { runAgent, runCheap } from './run-model-extraction.js';

/**
 * Runs one extraction job (SPEC §3, extraction policy), holding the session's lock so two workers
 * never extract the same session at once (a second one waits, at most a lease, for the first):
 * - a job an earlier run already covered is done at once (`already-done`), and so is a span the
 *   cursor has passed (another run extracted it and stopped before marking this job);
 * - otherwise the job takes every queued job of its session with it: ONE trailing run over all
 *   their messages, and those jobs are marked covered;
 * - messages up to the cursor are skipped; if the main agent wrote memory in the span, only the
 *   cursor moves; else explicit statements in the user's messages are written first, with or
 *   without a model, each message once (its explicit checkpoint);
 * - what the model did is kept with the job before it counts, so a retry never does it again: the
 *   cheap-mode answers (reused, and saving goes through dedupe on write) and the fact that the
 *   agent-mode helper wrote memory (the retry then only moves the cursor).
 */
export async function runExtractionJob(
  dependencies: ExtractionRunDependencies,
  job: Job,
): Promise<ExtractionRunReport> {
  const payload = readExtractionPayload(job.payload);
  const { engram } = dependencies;
  const store = requireExtractionStore(engram.store);
  const run: JobRun = { ...dependencies, store };
  const mode = dependencies.model ? dependencies.mode : 'offline';
  const report = emptyReport(job, payload.sessionId, mode);
  return store.locks.hold(
    sessionLockName(payload.sessionId),
    async () => {
      const progress = parseTurnProgress(await store.checkpoints.get(turnCheckpointName(job.key)));
      if (progress?.state === 'done') {
        report.status = 'already-done';
        if (progress.coveredBy && progress.coveredBy !== job.key)
          report.warnings.push(`covered by the run of ${progress.coveredBy}`);
        return report;
      }
      const jobs = await jobsToCover(store, job, payload, progress);
      report.coalesced = jobs.filter((entry) => entry.job.id !== job.id).map((entry) => entry.job.key);
      const cursor = parseCursor(await store.checkpoints.get(cursorCheckpointName(payload.sessionId)));
      const live = jobs.filter((entry) => !passedBy(cursor, entry));
      const messages = mergeMessageSpans(live.map((entry) => entry.payload.messages));
      const after = messagesAfter(messages, cursor?.messageId);
      const span = after.found ? after.messages : messages;
      report.span = {
        messages: span.length,
        ...(span.length > 0 && { firstId: span[0]!.id, lastId: span.at(-1)!.id }),
        cursorFallback: live.some((entry) => entry.payload.cursorFallback),
      };
      if (live.length === 0) {
        report.status = 'already-done';
        report.warnings.push('the cursor is past these turns: another run extracted them');
      } else {
        if (span.length > 0) await extractSpan(run, { job, payload, jobs, progress, span }, report);
        const last = live.reduce((latest, entry) =>
          entry.payload.sequence > latest.payload.sequence ? entry : latest,
        );
        await advanceCursor(
          store.checkpoints,
          payload.sessionId,
          last.payload,
          last.payload.messages.at(-1)!.id,
          report,
        );
      }
      for (const entry of jobs) {
        await store.checkpoints.set(
          turnCheckpointName(entry.job.key),
          JSON.stringify({ state: 'done', coveredBy: job.key } satisfies TurnProgress),
        );
      }
      return report;
    },
    { waitMs: engram.settings.extraction.runTimeoutMs },
  );
}

/** What one run covers: its job, the jobs it takes with it, and the span of messages after the cursor. */
interface RunSpan {
  job: Job;
  payload: ExtractionJobPayload;
  jobs: CoveredJob[];
  progress: TurnProgress | undefined;
  span: ConversationMessage[];
}

async function extractSpan(dependencies: JobRun, run: RunSpan, report: ExtractionRunReport): Promise<void> {
  const { engram, store } = dependencies;
  const { payload, jobs, span } = run;
  const scopes: WriteScopes = {
    project: payload.scopes.project,
    ...(payload.scopes.user !== undefined && { user: payload.scopes.user }),
  };
  const state: TurnProgress = {
    state: 'extracting',
    jobIds: [run.job.id, ...jobs.filter((entry) => entry.job.id !== run.job.id).map((entry) => entry.job.id)],
    answers: Object.assign({}, ...jobs.map((entry) => entry.progress?.answers ?? {})) as Record<string, string>,
    ...(run.progress?.agentWrote && { agentWrote: true }),
  };
  await saveProgress(store.checkpoints, run.job.key, state, report);
  if (spanWroteMemory(span, dependencies.isMemoryWrite)) {
    report.status = 'memory-written-in-span';
    return;
  }
  const explicit = dependencies.explicit
    ? await applyExplicitOnce({
        engram,
        checkpoints: store.checkpoints,
        handler: dependencies.explicit,
        sessionId: payload.sessionId,
        messages: span,
        scopes,
      })
    : { written: [], known: [], warnings: [], appliedBefore: 0 };
  report.written.push(...explicit.written);
  report.warnings.push(...explicit.warnings);
  if (!dependencies.model) {
    report.status = 'offline';
    return;
  }
  const recalled = await recalledWithText(
    engram,
    jobs.flatMap((entry) => entry.payload.recalled),
    payload.scopes.read,
  );
  const known = [
    ...recalled.map((memory) => ({
      id: memory.id,
      content: memory.content,
      ...(memory.name && { name: memory.name }),
      ...(memory.type && { type: memory.type }),
    })),
    ...explicit.known,
  ];
  report.status = 'extracted';
  if (dependencies.mode === 'cheap') {
    await runCheap(dependencies, payload, span, known, scopes, state, report);
    return;
  }
  // Turns a helper already wrote memory for (an earlier attempt of this run or of a job it covers) are not given to it again.
  const wrote = new Set(
    jobs.flatMap((entry) => (entry.progress?.agentWrote ? (entry.progress.jobIds ?? [entry.job.id]) : [])),
  );
  const written = new Set(
    jobs
      .filter((entry) => wrote.has(entry.job.id))
      .flatMap((entry) => entry.payload.messages.map((message) => message.id)),
  );
  const unwritten = span.filter((message) => !written.has(message.id));
  if (unwritten.length === 0) {
    report.warnings.push(
      'the helper already wrote memory for these turns in an earlier attempt: only the cursor moved',
    );
    return;
  }
  await runAgent(dependencies, payload, unwritten, known, state, report);
}

/** Recalled memories with their text: the text the host passed, else the stored memory's (in the read scopes). */
async function recalledWithText(
  engram: Engram,
  recalled: readonly RecalledMemory[],
  scopes: readonly string[],
): Promise<RecalledMemory[]> {
  const unique = uniqueRecalled(recalled);
  for (const memory of unique) {
    if (memory.content !== undefined) continue;
    const stored = await engram.store.get(memory.id, scopes);
    if (stored) Object.assign(memory, { content: stored.content, name: stored.name, type: stored.type });
  }
  return unique;
}
