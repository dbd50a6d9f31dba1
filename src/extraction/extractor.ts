import { describeWarning, type WarningCode } from '../kernel/warnings.js';
import { EngramError } from '../kernel/errors.js';
import { createPrivateContentFilter, type PrivateContentFilter } from '../privacy/private-content.js';
import { assertScope, type Scope } from '../memory/scope.js';
import { redactSecrets } from '../privacy/secret-redaction.js';
import type { Engram } from '../engram.js';
import type { LanguageModel } from '../contracts/language-model.js';
import {
  assertConversation,
  type Conversation,
  type ConversationMessage,
  type ConversationToolCall,
} from '../contracts/conversation.js';
import { messagesAfter } from './conversation-spans.js';
import { createAgentTools, type SandboxOpener } from './agent-tools.js';
import { applyExplicitOnce, applyExplicitStatements, type ExplicitMemoryHandler } from './explicit-statements.js';
import { prepareMessages } from './extraction-input.js';
import {
  EXTRACTION_PAYLOAD_VERSION,
  EXTRACTION_QUEUE,
  cursorCheckpointName,
  extractionJobKey,
  parseCursor,
  sessionLockName,
  splitForPayload,
  type ExtractionJobPayload,
} from './extraction-job-payload.js';
import type { ExtractionRunReport, JobOutcome, WrittenMemory } from './extraction-report.js';
import { ExtractionWorker } from './extraction-worker.js';
import { uniqueRecalled, type RecalledMemory } from './recalled-memories.js';
import { runExtractionJob } from './run-extraction-job.js';
import type { ExtractionProgress, ExtractionRunDependencies } from './extraction-run-dependencies.js';
import {
  describeUnavailable,
  EXTRACTION_UNAVAILABLE_WARNING,
  extractionStore,
  type ExtractionStore,
} from './extraction-store.js';

export interface ExtractorOptions {
  engram: Engram;
  /** The model that extracts (a cheap one: `createLanguageModel(settings, { purpose: 'side' })`); absent: offline, explicit statements only. */
  model?: LanguageModel;
  /** `cheap` (default): one call a turn, JSON out. `agent`: a helper with the memory tool and sandboxed tools. */
  mode?: 'cheap' | 'agent';
  /** The user's own scope, for memories true of the user everywhere; without it they go to global. */
  userScope?: Scope;
  /** The project folder the agent-mode helper may read and search (sandboxed); recorded with each job. */
  projectRoot?: string;
  /** The agent-mode helper's tools for a job; default the memory tool and the sandbox over `projectRoot` (createAgentTools). */
  agentTools?: ExtractionRunDependencies['agentTools'];
  /** Opens the sandbox over `projectRoot` for the default agent tools (`openSandbox` of engram/node; `createExtractor` passes it). */
  openSandbox?: SandboxOpener;
  /** Writes explicit statements ("remember that …"), with or without a model; default the explicit-memory rules; false turns them off. */
  explicit?: ExplicitMemoryHandler | false;
  /** Decides which tool calls of the main agent wrote memory (default: see memory-write-detection.ts). */
  isMemoryWrite?: (call: ConversationToolCall) => boolean;
  /** Start the background worker on the first `afterTurn` (default true); false leaves jobs to `drain()` or another process. */
  autoStart?: boolean;
  workerId?: string;
  now?: () => Date;
  onOutcome?: (outcome: JobOutcome) => void;
  /** Told as cheap mode reads a job's messages, group by group (`engram extract --progress`). */
  onProgress?: (progress: ExtractionProgress) => void;
  onWarning?: (warning: string) => void;
}

export interface AfterTurnOptions {
  /** Memories engram recalled into the prompt this turn (the `<memory_context>` block): known, never extracted again. */
  recalled?: readonly RecalledMemory[];
}

/** What `afterTurn` queued. */
export interface AfterTurnResult {
  /** `unavailable`: the store has no job queue, checkpoints or locks, so nothing was queued (see `warnings`). */
  status: 'queued' | 'nothing-new' | 'unavailable';
  jobs: Array<{ id: string; key: string; created: boolean }>;
  /** New messages found after what was already queued. */
  messages: number;
  /** The cursor's message was gone from the conversation (compacted away): every message was queued. */
  cursorFallback: boolean;
  /** `extraction-queue-unavailable` when the status is `unavailable`. */
  warnings?: WarningCode[];
}

const MAX_REMEMBERED_SESSIONS = 1_000;
const MAX_RECALLED = 50;
const MAX_RECALLED_CHARS = 2_000;
// Room in a job payload for everything but the messages.
const PAYLOAD_SLACK = 0.85;
const PRIVATE_WORD = /private/i;

/**
 * Long-term extraction (SPEC §3, layer 5). `afterTurn` only queues the turn in the store's durable
 * queue and returns (the user's turn never waits for a model); a worker, in this process or another,
 * runs the queue. Jobs survive crashes: a job accepted before one runs after the restart. The queue
 * is the store's: a store without jobs, checkpoints or locks queues nothing, and says so.
 * @example
 * const extractor = new Extractor({ engram, model });
 * await extractor.afterTurn({ sessionId, messages }, { recalled: context.included.map((entry) => ({ id: entry.memory.id })) });
 * // … at exit:
 * await extractor.stop();
 */
export class Extractor {
  readonly worker: ExtractionWorker;
  readonly #engram: Engram;
  readonly #options: ExtractorOptions;
  /** The store with the roles extraction runs on; undefined when it lacks one. */
  readonly #store: ExtractionStore | undefined;
  #warnedUnavailable = false;
  readonly #now: () => Date;
  // Per session: the last message queued, and the private-text filter carried from turn to turn.
  readonly #sessions = new Map<string, { mark: string; filter: PrivateContentFilter }>();
  #sequence = { at: 0, count: 0 };

  constructor(options: ExtractorOptions) {
    if (options === null || typeof options !== 'object' || !options.engram)
      throw new EngramError('INVALID_INPUT', 'An Extractor needs { engram }.');
    if (options.mode !== undefined && options.mode !== 'cheap' && options.mode !== 'agent') {
      throw new EngramError(
        'INVALID_INPUT',
        `Unknown extraction mode ${JSON.stringify(String(options.mode))}: cheap or agent.`,
      );
    }
    if (options.userScope !== undefined) assertScope(options.userScope);
    this.#engram = options.engram;
    this.#options = options;
    this.#store = extractionStore(options.engram.store);
    this.#now = options.now ?? (() => new Date());
    const dependencies: Omit<ExtractionRunDependencies, 'signal'> = {
      engram: options.engram,
      mode: options.mode ?? 'cheap',
      now: this.#now,
      ...(options.model && { model: options.model }),
      agentTools:
        options.agentTools ??
        ((input) =>
          createAgentTools({
            ...input,
            ...(options.openSandbox && { openSandbox: options.openSandbox }),
          })),
      ...(options.explicit !== false && { explicit: options.explicit ?? applyExplicitStatements }),
      ...(options.isMemoryWrite && { isMemoryWrite: options.isMemoryWrite }),
      ...(options.onProgress && { onProgress: options.onProgress }),
    };
    this.worker = new ExtractionWorker({
      store: options.engram.store,
      settings: options.engram.settings,
      run: (job, signal) => runExtractionJob({ ...dependencies, signal }, job),
      now: this.#now,
      ...(options.workerId && { workerId: options.workerId }),
      ...(options.onOutcome && { onOutcome: options.onOutcome }),
      ...(options.onWarning && { onWarning: options.onWarning }),
    });
  }

  /**
   * Queues the messages of a conversation that are new since the last call (or since the cursor,
   * for a session this process has not seen): prepared for storage (private text stripped, secrets
   * redacted, long texts cut) and written to the store's queue. Returns once they are queued.
   */
  async afterTurn(conversation: Conversation, options: AfterTurnOptions = {}): Promise<AfterTurnResult> {
    const { sessionId, messages } = assertConversation(conversation);
    const store = this.#store;
    if (!store)
      return { status: 'unavailable', jobs: [], messages: 0, cursorFallback: false, warnings: [this.#unavailable()] };
    const known = this.#sessions.get(sessionId);
    const mark = known?.mark ?? parseCursor(await store.checkpoints.get(cursorCheckpointName(sessionId)))?.messageId;
    const after = messagesAfter(messages, mark);
    const cursorFallback = mark !== undefined && !after.found;
    if (after.messages.length === 0) return { status: 'nothing-new', jobs: [], messages: 0, cursorFallback };
    const { settings } = this.#engram;
    // A <private> block opened before the mark hides what follows it: the filter carries that state
    // from turn to turn, and a process new to the session rebuilds it from the messages up to the
    // mark. After a fallback the conversation is read from its start again, so is the state.
    const filter = known && !cursorFallback ? known.filter : this.#privateFilter(messages, after);
    const prepared = prepareMessages(after.messages, {
      limits: settings.extraction,
      filter: (text) => redactSecrets(filter(text)).text,
    });
    const state = { mark: after.messages.at(-1)!.id, filter };
    if (prepared.messages.length === 0) {
      this.#remember(sessionId, state);
      return { status: 'nothing-new', jobs: [], messages: 0, cursorFallback };
    }
    const recalled = checkRecalled([...(options.recalled ?? []), ...prepared.recalled]);
    const scopes = this.#scopes();
    const room =
      Math.floor(settings.jobs.maxPayloadBytes * PAYLOAD_SLACK) -
      Buffer.byteLength(JSON.stringify({ recalled, scopes }), 'utf8');
    const jobs: AfterTurnResult['jobs'] = [];
    // Until every part is queued the session is forgotten: a failed call is re-read from the cursor next time, never skipped.
    this.#sessions.delete(sessionId);
    for (const part of splitForPayload(prepared.messages, Math.max(1_024, room))) {
      const payload: ExtractionJobPayload = {
        version: EXTRACTION_PAYLOAD_VERSION,
        sessionId,
        sequence: this.#nextSequence(),
        messages: part,
        recalled,
        scopes,
        cursorFallback,
        ...(this.#options.projectRoot !== undefined && { projectRoot: this.#options.projectRoot }),
      };
      const { job, created } = await store.jobs.enqueue({
        queue: EXTRACTION_QUEUE,
        key: extractionJobKey(sessionId, part.at(-1)!.id),
        payload,
      });
      jobs.push({ id: job.id, key: job.key, created });
    }
    this.#remember(sessionId, state);
    if (this.#options.autoStart !== false) this.worker.start();
    this.worker.nudge();
    return { status: 'queued', jobs, messages: prepared.messages.length, cursorFallback };
  }

  /**
   * Applies only the explicit-memory rules ("remember that …", "forget that …") to the user's
   * messages after the cursor, now, queueing nothing: what offline use (no model) can do. The cursor
   * stays, so a later run with a model still reads these turns; each message's statements are
   * applied once whatever reads them (`appliedBefore` counts those skipped for that). A store without
   * the roles extraction runs on applies nothing (warning `extraction-queue-unavailable`).
   */
  async applyExplicitOnly(conversation: Conversation): Promise<{
    written: WrittenMemory[];
    warnings: string[];
    messages: number;
    appliedBefore: number;
    cursorFallback: boolean;
  }> {
    const { sessionId, messages } = assertConversation(conversation);
    const store = this.#store;
    if (!store)
      return { written: [], warnings: [this.#unavailable()], messages: 0, appliedBefore: 0, cursorFallback: false };
    const cursor = parseCursor(await store.checkpoints.get(cursorCheckpointName(sessionId)));
    const after = messagesAfter(messages, cursor?.messageId);
    const filter = this.#privateFilter(messages, after);
    const prepared = prepareMessages(after.messages, {
      limits: this.#engram.settings.extraction,
      filter: (text) => redactSecrets(filter(text)).text,
    });
    const cursorFallback = cursor !== undefined && !after.found;
    if (this.#options.explicit === false)
      return { written: [], warnings: [], messages: prepared.messages.length, appliedBefore: 0, cursorFallback };
    const handler: ExplicitMemoryHandler = this.#options.explicit ?? applyExplicitStatements;
    const scopes = this.#scopes();
    const run = await store.locks.hold(
      sessionLockName(sessionId),
      () =>
        applyExplicitOnce({
          engram: this.#engram,
          checkpoints: store.checkpoints,
          handler,
          sessionId,
          messages: prepared.messages,
          scopes: { project: scopes.project, ...(scopes.user && { user: scopes.user }) },
        }),
      { waitMs: this.#engram.settings.extraction.runTimeoutMs },
    );
    return {
      written: run.written,
      warnings: run.warnings,
      messages: prepared.messages.length,
      appliedBefore: run.appliedBefore,
      cursorFallback,
    };
  }

  /** Runs every due job now (in this process) and returns the reports; jobs that failed are in the outcomes too. */
  async drain(options: { maxJobs?: number } = {}): Promise<JobOutcome[]> {
    return this.worker.drain(options);
  }

  /** The reports of a drain's finished jobs. */
  static reports(outcomes: readonly JobOutcome[]): ExtractionRunReport[] {
    return outcomes.flatMap((outcome) => (outcome.state === 'done' ? [outcome.report] : []));
  }

  /** Starts the background worker. */
  start(): void {
    this.worker.start();
  }

  /** Stops the background worker (a running job goes back to the queue). */
  async stop(): Promise<void> {
    await this.worker.stop();
  }

  /** The warning of a store that cannot queue, told to `onWarning` once with the roles it lacks. */
  #unavailable(): WarningCode {
    if (!this.#warnedUnavailable) {
      this.#warnedUnavailable = true;
      this.#options.onWarning?.(
        describeWarning({
          code: EXTRACTION_UNAVAILABLE_WARNING,
          details: { message: describeUnavailable(this.#engram.store) },
        }),
      );
    }
    return EXTRACTION_UNAVAILABLE_WARNING;
  }

  #scopes(): ExtractionJobPayload['scopes'] {
    const user = this.#options.userScope;
    const read = [...new Set([...this.#engram.readScopes, ...(user ? [user] : [])])];
    return { project: this.#engram.defaultScope, ...(user && { user }), read };
  }

  /** A private-text filter in the state it has after the messages before `after`: they are run through it again, output discarded. */
  #privateFilter(
    messages: readonly ConversationMessage[],
    after: { messages: readonly ConversationMessage[]; found: boolean },
  ): PrivateContentFilter {
    const filter = createPrivateContentFilter();
    if (!after.found) return filter;
    const before = messages.slice(0, messages.length - after.messages.length);
    // Only a text that mentions a private tag changes the state: replay from the first such message.
    const first = before.findIndex(mentionsPrivate);
    if (first !== -1) prepareMessages(before.slice(first), { limits: this.#engram.settings.extraction, filter });
    return filter;
  }

  #remember(sessionId: string, state: { mark: string; filter: PrivateContentFilter }): void {
    this.#sessions.delete(sessionId);
    this.#sessions.set(sessionId, state);
    if (this.#sessions.size > MAX_REMEMBERED_SESSIONS) this.#sessions.delete(this.#sessions.keys().next().value!);
  }

  /** Orders spans: queueing time in microsecond-like steps, unique within this process. */
  #nextSequence(): number {
    const at = this.#now().getTime();
    if (at === this.#sequence.at) this.#sequence.count += 1;
    else
      this.#sequence = {
        at: Math.max(at, this.#sequence.at),
        count: at > this.#sequence.at ? 0 : this.#sequence.count + 1,
      };
    return this.#sequence.at * 1_000 + Math.min(this.#sequence.count, 999);
  }
}

/** Whether any text of a message could hold a `<private>` tag (the filter passes the others by unchanged). */
function mentionsPrivate(message: ConversationMessage): boolean {
  return (
    PRIVATE_WORD.test(message.text) ||
    (message.toolResults ?? []).some((result) => PRIVATE_WORD.test(String(result?.content))) ||
    (message.toolCalls ?? []).some((call) => PRIVATE_WORD.test(JSON.stringify(call?.input ?? {}) ?? ''))
  );
}

/** Checks recalled memories passed in: ids, short texts, a bounded number. */
function checkRecalled(recalled: readonly RecalledMemory[]): RecalledMemory[] {
  if (!Array.isArray(recalled)) throw new EngramError('INVALID_INPUT', 'recalled is an array of { id, content? }.');
  for (const memory of recalled) {
    if (
      memory === null ||
      typeof memory !== 'object' ||
      typeof memory.id !== 'string' ||
      memory.id === '' ||
      memory.id.length > 200
    ) {
      throw new EngramError(
        'INVALID_INPUT',
        'Each recalled memory is { id, content? } with an id of 1-200 characters.',
      );
    }
    if (memory.content !== undefined && typeof memory.content !== 'string')
      throw new EngramError(
        'INVALID_INPUT',
        `The content of recalled memory ${memory.id.slice(0, 60)} is not a string.`,
      );
  }
  return uniqueRecalled(recalled)
    .slice(0, MAX_RECALLED)
    .map((memory) => ({
      id: memory.id,
      ...(memory.content !== undefined && { content: memory.content.slice(0, MAX_RECALLED_CHARS) }),
      ...(typeof memory.name === 'string' && { name: memory.name.slice(0, 100) }),
      ...(typeof memory.type === 'string' && { type: memory.type.slice(0, 20) }),
    }));
}
