import { isEngramError } from '../kernel/errors.js';
import type { Memory, MemorySource } from '../memory/memory.js';
import type { Engram } from '../engram.js';
import type { LanguageModel } from '../contracts/language-model.js';
import type { Checkpoints } from '../contracts/memory-store-checkpoints.js';
import type { Job } from '../contracts/memory-store-jobs.js';
import { extractWithAgent, type AgentTool } from './agent-extraction.js';
import { agentManifest } from './agent-tools.js';
import { extractCheap } from './cheap-extraction.js';
import type { KnownMemoryLine } from './cheap-extraction-prompt.js';
import type { ConversationMessage, ConversationToolCall } from '../contracts/conversation.js';
import { mergeMessageSpans, messagesAfter } from './conversation-spans.js';
import { applyExplicitOnce, type ExplicitMemoryHandler } from './explicit-statements.js';
import {
  EXTRACTION_QUEUE,
  cursorCheckpointName,
  extractionJobKey,
  formatCursor,
  parseCursor,
  parseTurnProgress,
  readExtractionPayload,
  sessionLockName,
  turnCheckpointName,
  type ExtractionCursor,
  type ExtractionJobPayload,
  type TurnProgress,
} from './extraction-job-payload.js';
import type { WriteScopes } from './extraction-output.js';
import { addUsage, emptyReport, type ExtractionRunReport, type WrittenMemory } from './extraction-report.js';
import { requireExtractionStore, type ExtractionStore } from './extraction-store.js';
import { isMemoryWriteCall, spanWroteMemory } from './memory-write-detection.js';
import { profileKnown, uniqueRecalled, type RecalledMemory } from './recalled-memories.js';

/** What running an extraction job needs. */
export interface ExtractionRunDependencies {
  engram: Engram;
  /** Told as cheap mode reads a job's span, group by group (a long transcript takes a while). */
  onProgress?: (progress: ExtractionProgress) => void;
  /** Absent: offline, explicit statements only. */
  model?: LanguageModel;
  mode: 'cheap' | 'agent';
  /** The helper's tools for a job (agent mode): the memory tool, writing with `source`, and the sandboxed tools. */
  agentTools?: (input: {
    engram: Engram;
    scopes: ExtractionJobPayload['scopes'];
    source: MemorySource;
    projectRoot?: string;
  }) => Promise<AgentTool[]> | AgentTool[];
  explicit?: ExplicitMemoryHandler;
  isMemoryWrite?: (call: ConversationToolCall) => boolean;
  now: () => Date;
  signal?: AbortSignal;
}

/** How far a job's run has read its span: messages read of all, in cheap mode. */
export interface ExtractionProgress {
  jobId: string;
  messagesRead: number;
  messages: number;
}

/** One job's run: its dependencies and the store with the roles extraction runs on. */
type JobRun = ExtractionRunDependencies & { store: ExtractionStore };

/** Recorded in history for memories the model extracted. */
export const EXTRACTION_ACTOR = 'extraction';
const PENDING_SCAN_LIMIT = 1_000;
const CURSOR_WRITE_ATTEMPTS = 5;

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

interface CoveredJob {
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
function passedBy(cursor: ExtractionCursor | undefined, entry: CoveredJob): boolean {
  if (!cursor || cursor.sequence <= entry.payload.sequence || entry.progress?.state === 'extracting') return false;
  return !entry.payload.messages.some(
    (message) => message.id === cursor.messageId || message.partIds?.includes(cursor.messageId),
  );
}

/** This job and the queued jobs of its session that no run covered yet, in the order their spans were queued (by sequence). */
async function jobsToCover(
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

async function runCheap(
  dependencies: JobRun,
  payload: ExtractionJobPayload,
  span: readonly ConversationMessage[],
  known: ReadonlyArray<{ id: string; content?: string; name?: string; type?: string }>,
  scopes: WriteScopes,
  state: TurnProgress,
  report: ExtractionRunReport,
): Promise<void> {
  const { engram } = dependencies;
  const result = await extractCheap({
    model: dependencies.model!,
    settings: engram.settings,
    limits: engram.settings.memory,
    messages: span,
    knownLines: knownLines(known),
    known: profileKnown(known),
    scopes,
    today: dependencies.now().toISOString().slice(0, 10),
    answers: state.answers ?? {},
    ...(dependencies.onProgress && {
      onRead: (progress: { messagesRead: number; messages: number }) =>
        dependencies.onProgress!({ jobId: report.jobId, ...progress }),
    }),
    onAnswer: async (groupLastId, answer) => {
      state.answers = { ...state.answers, [groupLastId]: answer };
      await saveProgress(dependencies.store.checkpoints, report.key, state, report);
    },
    ...(dependencies.signal && { signal: dependencies.signal }),
  });
  report.modelCalls += result.modelCalls;
  report.reusedAnswers += result.reusedAnswers;
  addUsage(report.usage, result.usage);
  report.sentBytes.system += result.sentBytes.system;
  report.sentBytes.total += result.sentBytes.total;
  report.dropped.push(...result.dropped);
  report.repairs.push(
    ...result.repairs,
    ...result.candidates.flatMap((candidate) => candidate.repairs.map((repair) => `${candidate.name}: ${repair}`)),
  );
  for (const candidate of result.candidates) {
    try {
      const saved = await engram.save(
        {
          scope: candidate.scope,
          type: candidate.type,
          name: candidate.name,
          description: candidate.description,
          content: candidate.content,
          importance: candidate.importance,
          source: { sessionId: payload.sessionId, turnId: candidate.turnId, origin: EXTRACTION_ACTOR },
        },
        { actor: EXTRACTION_ACTOR },
      );
      report.written.push(describe(saved.memory, saved.action, candidate.turnId, 'extraction'));
    } catch (error) {
      // The store refused this one memory (its checks): drop it, keep the others.
      if (!isEngramError(error) || !['INVALID_INPUT', 'PAYLOAD_TOO_LARGE', 'INVALID_SCOPE'].includes(error.code))
        throw error;
      report.dropped.push({
        reason: 'invalid',
        detail: error.message,
        name: candidate.name,
        excerpt: candidate.content.slice(0, 160),
      });
    }
  }
}

async function runAgent(
  dependencies: JobRun,
  payload: ExtractionJobPayload,
  span: readonly ConversationMessage[],
  known: ReadonlyArray<{ id: string; content?: string; name?: string; type?: string }>,
  state: TurnProgress,
  report: ExtractionRunReport,
): Promise<void> {
  const { engram } = dependencies;
  if (!dependencies.agentTools)
    throw new Error('Agent-mode extraction needs agentTools (the memory tool and the sandboxed tools).');
  const source = { sessionId: payload.sessionId, turnId: span.at(-1)!.id, origin: 'extraction-agent' };
  const given = await dependencies.agentTools({
    engram,
    scopes: payload.scopes,
    source,
    ...(payload.projectRoot !== undefined && { projectRoot: payload.projectRoot }),
  });
  // The helper's first successful memory write is kept with the job before the helper goes on: a
  // retry after a later failure must not write again what it wrote.
  const tools = given.map((tool): AgentTool => ({
    definition: tool.definition,
    run: async (input, signal) => {
      const outcome = await tool.run(input, signal);
      if (!outcome.isError && !state.agentWrote && isMemoryWriteCall({ id: '', name: tool.definition.name, input })) {
        state.agentWrote = true;
        await saveProgress(dependencies.store.checkpoints, report.key, state, report);
      }
      return outcome;
    },
  }));
  const manifest = await agentManifest({ engram, scopes: payload.scopes, max: engram.settings.extraction.manifestMax });
  const result = await extractWithAgent({
    model: dependencies.model!,
    settings: engram.settings,
    tools,
    manifest,
    messages: span,
    knownLines: knownLines(known),
    today: dependencies.now().toISOString().slice(0, 10),
    ...(dependencies.signal && { signal: dependencies.signal }),
  });
  report.modelCalls += result.modelCalls;
  addUsage(report.usage, result.usage);
  report.agent = { toolCalls: result.toolCalls, stoppedBy: result.stoppedBy };
  if (result.stoppedBy === 'turn-cap')
    report.warnings.push(
      `the helper was stopped after ${engram.settings.extraction.agentMaxTurns} turns (extraction.agentMaxTurns)`,
    );
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

function knownLines(known: ReadonlyArray<{ content?: string; name?: string; type?: string }>): KnownMemoryLine[] {
  return known
    .filter((memory) => typeof memory.content === 'string')
    .map((memory) => ({
      content: memory.content!,
      ...(memory.name && { name: memory.name }),
      ...(memory.type && { type: memory.type }),
    }));
}

/** Moves the cursor to the end of the newest span this run covered; never backwards (a retried old job leaves it). */
async function advanceCursor(
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

async function saveProgress(
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

function describe(
  memory: Memory,
  action: WrittenMemory['action'],
  turnId: string,
  origin: WrittenMemory['origin'],
): WrittenMemory {
  return { id: memory.id, name: memory.name, type: memory.type, scope: memory.scope, action, turnId, origin };
}
