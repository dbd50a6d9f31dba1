import { resolve } from 'node:path';
import { EngramError } from '../../kernel/errors.js';
import { DEFAULT_SETTINGS } from '../../kernel/settings.js';
import { assertScope, type Scope } from '../../memory/scope.js';
import type { Engram } from '../../engram.js';
import type { Conversation } from '../../contracts/conversation.js';
import type { LanguageModel } from '../../contracts/language-model.js';
import type { Extractor } from '../../extraction/extractor.js';
import type { JobOutcome } from '../../extraction/extraction-report.js';
import { MemoryTurn } from '../../agent/memory-turn.js';
import {
  MAX_RECALL_TIME_CAP_MS,
  settleWithin,
  turnError,
  type MemoryInjection,
  type MemoryTurnError,
  type MemoryTurnEvent,
} from '../../agent/memory-injection.js';
import { MAX_TOKENS } from '../../agent/memory-turn-input.js';
import { openEngram } from '../../node/open-engram.js';
import { ThreadLanguageModel } from '../../adapters/models/thread-language-model.js';
import { chooseExtractionModel, WRAPPER_MODEL_CHECKPOINT, type WrappedClientModel } from './extraction-model-choice.js';
import { createExtractor } from '../../node/create-extractor.js';

/** Options of `withMemory` and `engramMiddleware`: where memory lives, what the wrapper does, and who hears about it. */
export interface WithMemoryOptions {
  /** An open Engram (the caller closes it); default: opened on the first call as the CLI does (settings, store, project of `cwd`). */
  engram?: Engram;
  /** Store URL (a SQLite path, `sqlite:<path>` or `postgres://…`) instead of `store.url` / `ENGRAM_STORE`; not with `engram`. */
  store?: string;
  /** The project folder whose settings and project identity are used (default the current directory). */
  cwd?: string;
  /** Project id instead of the one found from `cwd` (as `ENGRAM_PROJECT`); not with `engram`. */
  project?: string;
  /** The scopes recall reads (default the Engram's read scopes: the project and global). */
  scopes?: readonly Scope[];
  /** Token budget of the `<memory_context>` block (default `injection.maxTokens`, 3,000). */
  maxTokens?: number;
  /** `false`: no recall and no injection; extraction still runs. Default true. */
  recall?: boolean;
  /** `false`: nothing is queued for extraction. Default true. */
  extract?: boolean;
  /** How long memory may hold a call before it goes on without memory (default `wrappers.recallTimeCapMs`, 300 ms). */
  recallTimeoutMs?: number;
  /** Names the conversation for extraction's cursor (default: a hash of the system prompt and the first user message). */
  sessionId?: string;
  /**
   * The model that extracts memories; `false`: explicit statements only. Default: the wrapped
   * client's own provider, endpoint and key (a provider named by `model.provider` wins), its cheap
   * model on the provider's own API, else the model its calls use (extraction-model-choice.ts); it
   * runs in a thread that never keeps the process alive. A model given here runs in this thread, so
   * its calls keep the process alive until they end: call `close()`.
   */
  extractionModel?: LanguageModel | false;
  /** An LLM retriever for recall (default none: ranked recall only, which keeps the added latency to milliseconds). */
  selectionModel?: LanguageModel | false;
  /** Environment for the settings when engram opens itself (default `process.env`). */
  env?: Record<string, string | undefined>;
  /** Told what memory did for each call; a throwing listener is ignored. */
  onEvent?: (event: WithMemoryEvent) => void;
}

/**
 * What the wrapper tells `onEvent`: the memory turn's events (recalled, injected, time cap, failures,
 * extraction queued) plus the wrapper's own. `extraction-model-chosen` / `extraction-model-missing`:
 * the model that extracts this client's turns, or why there is none (explicit statements only), told
 * once before the first extraction. `memory-unavailable`: the store could not be opened (the
 * call went on without memory). `memory-skipped`: the request could not be read, it was sent as it
 * was. `extraction-job-failed`: a queued extraction failed when it ran (kept in the queue when retrying).
 */
export type WithMemoryEvent =
  | MemoryTurnEvent
  | { type: 'extraction-model-chosen'; provider: string; model: string; endpoint: string; chosenBy: string }
  | { type: 'extraction-model-missing'; reason: string }
  | { type: 'memory-unavailable'; error: MemoryTurnError }
  | { type: 'memory-skipped'; error: MemoryTurnError }
  | { type: 'extraction-job-failed'; jobId: string; state: 'retrying' | 'failed'; code?: string; message: string };

/** The handle of a wrapped client (`client.memory`): waits for what was queued, and closes what engram opened. */
export interface ClientMemoryHandle {
  /** Waits until queued extraction is written to the store's queue and run. Never rejects. */
  flush(): Promise<void>;
  /** Flushes, then closes the store engram opened itself (an Engram given in the options stays open). */
  close(): Promise<void>;
}

/** One recall for a request: what to inject (undefined: send the request as it was). */
export type PreparedMemory = MemoryInjection | undefined;

interface Runtime {
  engram: Engram;
  turn: MemoryTurn;
  /** Queues turns (no model: queueing never calls one). */
  extractor: Extractor | undefined;
  close: () => Promise<void>;
}

/** What runs the queued jobs in this process: an extractor with the chosen model. */
interface Runner {
  extractor: Extractor;
  /** The model the wrapper built itself (in its thread), closed with the wrapper. */
  thread?: ThreadLanguageModel;
}

/** A failed open is tried again after this long, not on every call (a corrupt file stays corrupt). */
const REOPEN_AFTER_MS = 10_000;
const MAX_SESSION_ID_LENGTH = 200;

/**
 * The memory of one wrapped client: opens engram on the first call, runs the memory turn for each
 * request (recall within the time cap, fail open) and queues extraction after each answer, then runs
 * the queued jobs in the background. Shared by the SDK wrappers and the AI SDK middleware.
 */
export class ClientMemory implements ClientMemoryHandle {
  readonly #options: WithMemoryOptions;
  readonly #scopes: Scope[] | undefined;
  #runtime: Promise<Runtime> | undefined;
  #failedAt = -Infinity;
  #closed = false;
  #drainTail: Promise<unknown> = Promise.resolve();
  readonly #pending = new Set<Promise<unknown>>();
  /** The wrapped client's provider (withMemory knows it at once; the AI SDK middleware from the first call). */
  #client: WrappedClientModel | undefined;
  /** The model the first queued call asked for: extraction's model on a server whose models engram cannot guess. */
  #callModel: string | undefined;
  #runner: Runner | undefined;
  #flushing = 0;
  #threadHold: (() => void) | undefined;

  /** Checks the options now, so a bad one throws where the client is wrapped, not on its first call. */
  constructor(options: WithMemoryOptions | undefined, client?: WrappedClientModel) {
    this.#options = checkOptions(options ?? {});
    this.#scopes = this.#options.scopes?.map((scope) => assertScope(scope));
    this.#client = client;
  }

  /** The memory for a request's last user message; never rejects (a failure is an event and undefined). */
  async prepare(query: string, signal?: AbortSignal): Promise<PreparedMemory> {
    if (this.#closed) return undefined;
    const cap = this.#options.recallTimeoutMs ?? DEFAULT_SETTINGS.wrappers.recallTimeCapMs;
    const started = Date.now();
    const runtime = this.#open();
    if (!runtime) return undefined;
    // Opening counts against the cap too: the first call never waits for a slow store longer than a recall would.
    const opened = await settleWithin(runtime, cap, signal);
    if (opened.state !== 'done') {
      if (opened.state === 'cut' && opened.by === 'time-cap')
        this.#emit({ type: 'recall-timed-out', timeoutMs: cap, kept: 0 });
      return undefined;
    }
    const { turn, engram } = opened.value;
    const total = this.#options.recallTimeoutMs ?? engram.settings.wrappers?.recallTimeCapMs ?? cap;
    const left = Math.max(1, total - (Date.now() - started));
    try {
      return await turn.beforeRequest(query, { recallTimeoutMs: left, ...(signal && { signal }) });
    } catch (error) {
      this.#emit({ type: 'recall-failed', error: turnError(error) });
      return undefined;
    }
  }

  /**
   * Queues extraction of the conversation with its answer; returns at once and never throws. `call`
   * names the model the call asked for and, for the AI SDK, the provider it went to.
   */
  finish(conversation: Conversation, call: { model?: unknown; client?: WrappedClientModel } = {}): void {
    if (this.#closed || this.#options.extract === false) return;
    if (typeof call.model === 'string' && call.model !== '') this.#callModel ??= call.model.slice(0, 200);
    this.#client ??= call.client;
    const runtime = this.#open();
    if (!runtime) return;
    const task = runtime.then(async (opened) => {
      const result = await opened.turn.afterResponse(conversation);
      if (result.status === 'queued' && opened.extractor) this.#drain(opened);
    });
    this.#track(task.catch(() => undefined));
  }

  /** The conversation id to queue under: the option, else `sdk-` and a hash of what starts the conversation. */
  sessionId(derived: () => string): string {
    return this.#options.sessionId ?? derived().slice(0, MAX_SESSION_ID_LENGTH);
  }

  /** Tells the listener; a listener that throws is ignored. */
  emit(event: WithMemoryEvent): void {
    this.#emit(event);
  }

  async flush(): Promise<void> {
    // The caller waits: the model thread keeps the process alive until the queued jobs ran.
    this.#flushing += 1;
    this.#holdThread();
    try {
      for (;;) {
        const runtime = this.#runtime ? await this.#runtime.catch(() => undefined) : undefined;
        await runtime?.turn.flush();
        if (this.#pending.size === 0) return;
        await Promise.allSettled([...this.#pending]);
      }
    } finally {
      this.#flushing -= 1;
      if (this.#flushing === 0) {
        this.#threadHold?.();
        this.#threadHold = undefined;
      }
    }
  }

  /** While someone waits in flush(), the model thread keeps the process alive (made later, it is held when made). */
  #holdThread(): void {
    if (this.#flushing > 0 && !this.#threadHold) this.#threadHold = this.#runner?.thread?.keepAlive();
  }

  async close(): Promise<void> {
    await this.flush();
    this.#closed = true;
    const runtime = this.#runtime ? await this.#runtime.catch(() => undefined) : undefined;
    this.#runtime = undefined;
    const runner = this.#runner;
    this.#runner = undefined;
    await runner?.extractor.stop().catch(() => undefined);
    await runner?.thread?.close().catch(() => undefined);
    await runtime?.close().catch(() => undefined);
  }

  /** The opened runtime, opening it on the first call; undefined while a failed open waits to be tried again. */
  #open(): Promise<Runtime> | undefined {
    if (this.#runtime) return this.#runtime;
    if (Date.now() - this.#failedAt < REOPEN_AFTER_MS) return undefined;
    const work = this.#start();
    work.catch((error: unknown) => {
      if (this.#runtime !== work) return;
      this.#runtime = undefined;
      this.#failedAt = Date.now();
      this.#emit({ type: 'memory-unavailable', error: turnError(error) });
    });
    this.#runtime = work;
    return work;
  }

  async #start(): Promise<Runtime> {
    const options = this.#options;
    let engram: Engram;
    let closeStore: () => Promise<void> = () => Promise.resolve();
    if (options.engram) {
      engram = options.engram;
    } else {
      const opened = await openEngram({
        cwd: resolve(options.cwd ?? process.cwd()),
        ...(options.env && { env: options.env }),
        flags: {
          ...(options.store !== undefined && { 'store.url': options.store }),
          ...(options.project !== undefined && { 'project.id': options.project }),
        },
        actor: 'with-memory',
      });
      engram = opened.engram;
      closeStore = opened.close;
    }
    // Queueing only: the jobs are run by this object's runner (#runnerFor) after each queued turn,
    // with the model chosen once the first call shows it, so flush() can wait for them.
    const extractor =
      options.extract === false
        ? undefined
        : createExtractor({ engram, projectRoot: resolve(options.cwd ?? process.cwd()), autoStart: false });
    const turn = new MemoryTurn({
      engram,
      ...(extractor && { extractor }),
      selectionModel: options.selectionModel ?? false,
      ...(this.#scopes && { scopes: this.#scopes }),
      ...(options.maxTokens !== undefined && { maxTokens: options.maxTokens }),
      recallTimeoutMs: options.recallTimeoutMs ?? engram.settings.wrappers?.recallTimeCapMs ?? 300,
      ...(options.recall !== undefined && { recall: options.recall }),
      // The wrapper rebuilds the whole prompt on every request: nothing injected earlier is still there.
      excludeSurfaced: false,
      // The wrappers put the block at the end of the system prompt (SPEC §3), and the static part says so.
      placement: 'system-end',
      onEvent: (event) => this.#emit(event),
    });
    return {
      engram,
      turn,
      extractor,
      close: async () => {
        await extractor?.stop();
        await closeStore();
      },
    };
  }

  /** Runs the queued jobs in this process after the answer, one drain after another. */
  #drain(runtime: Runtime): void {
    const task = this.#drainTail.then(async () => {
      try {
        if (this.#closed) return;
        for (const outcome of await this.#runnerFor(runtime).extractor.drain()) this.#outcome(outcome);
      } catch (error) {
        this.#emit({ type: 'extraction-failed', sessionId: '', error: turnError(error) });
      }
    });
    this.#drainTail = task;
    this.#track(task);
  }

  /** The extractor that runs jobs, built on the first drain with the model chosen for this client (and told). */
  #runnerFor(runtime: Runtime): Runner {
    if (this.#runner) return this.#runner;
    const { engram } = runtime;
    const base = { engram, projectRoot: resolve(this.#options.cwd ?? process.cwd()), autoStart: false };
    const given = this.#options.extractionModel;
    if (given !== undefined) {
      this.#runner = { extractor: createExtractor({ ...base, ...(given && { model: given }) }) };
      if (given)
        this.#chosen(
          { provider: given.provider, model: given.modelId, endpoint: '', chosenBy: 'the extractionModel option' },
          engram,
        );
      else this.#emit({ type: 'extraction-model-missing', reason: 'the extractionModel option is false' });
      return this.#runner;
    }
    // An Engram given with no provider known for the client: its own model, as the caller built it.
    if (!this.#client && this.#options.engram && engram.model) {
      this.#runner = { extractor: createExtractor({ ...base, model: engram.model }) };
      this.#chosen(
        { provider: engram.model.provider, model: engram.model.modelId, endpoint: '', chosenBy: 'the given Engram' },
        engram,
      );
      return this.#runner;
    }
    const choice = chooseExtractionModel({
      settings: engram.settings.model,
      ...(this.#client && { client: this.#client }),
      ...(this.#callModel !== undefined && { callModel: this.#callModel }),
    });
    let thread: ThreadLanguageModel | undefined;
    let missing = choice.provider === 'none' ? choice.reason : undefined;
    if (choice.provider !== 'none') {
      try {
        thread = new ThreadLanguageModel({ settings: choice.settings, purpose: 'side' });
      } catch (error) {
        missing = (error as Error).message;
      }
    }
    this.#runner = {
      extractor: createExtractor({ ...base, ...(thread && { model: thread }) }),
      ...(thread && { thread }),
    };
    this.#holdThread();
    if (choice.provider !== 'none' && thread) {
      const { provider, model, endpoint, chosenBy } = choice;
      this.#chosen({ provider, model, endpoint, chosenBy }, engram);
    } else {
      const reason = `${missing ?? 'no model'}; only explicit "remember that …" statements are extracted`;
      this.#emit({ type: 'extraction-model-missing', reason });
      this.#record(engram, { provider: 'none', reason });
    }
    return this.#runner;
  }

  #chosen(choice: { provider: string; model: string; endpoint: string; chosenBy: string }, engram: Engram): void {
    this.#emit({ type: 'extraction-model-chosen', ...choice });
    this.#record(engram, choice);
  }

  /** Notes the choice in the store for `engram status` (another process); a busy store only loses the note. */
  #record(engram: Engram, choice: Record<string, string>): void {
    if (!engram.storage.keepsCheckpoints) return;
    const value = JSON.stringify({ ...choice, at: new Date().toISOString(), pid: process.pid });
    this.#track(engram.storage.writeNote(WRAPPER_MODEL_CHECKPOINT, value).catch(() => undefined));
  }

  #outcome(outcome: JobOutcome): void {
    if (outcome.state === 'done') return;
    this.#emit({
      type: 'extraction-job-failed',
      jobId: outcome.job.id,
      state: outcome.state,
      ...(outcome.code && { code: outcome.code }),
      message: outcome.error.slice(0, 500),
    });
  }

  #track(task: Promise<unknown>): void {
    this.#pending.add(task);
    void task.finally(() => this.#pending.delete(task)).catch(() => undefined);
  }

  #emit(event: WithMemoryEvent): void {
    try {
      this.#options.onEvent?.(event);
    } catch {
      // A broken listener must not break the user's call.
    }
  }
}

const OPTION_NAMES = new Set([
  'engram',
  'store',
  'cwd',
  'project',
  'scopes',
  'maxTokens',
  'recall',
  'extract',
  'recallTimeoutMs',
  'sessionId',
  'extractionModel',
  'selectionModel',
  'env',
  'onEvent',
]);

/** Refuses what cannot work with INVALID_INPUT or INVALID_SCOPE, before any call is made. */
function checkOptions(options: WithMemoryOptions): WithMemoryOptions {
  if (options === null || typeof options !== 'object' || Array.isArray(options))
    throw new EngramError('INVALID_INPUT', 'withMemory options are an object: { store?, scopes?, maxTokens?, ... }.');
  for (const name of Object.keys(options)) {
    if (!OPTION_NAMES.has(name))
      throw new EngramError(
        'INVALID_INPUT',
        `Unknown withMemory option ${JSON.stringify(name.slice(0, 60))}: one of ${[...OPTION_NAMES].join(', ')}.`,
      );
  }
  const { engram } = options;
  if (
    engram !== undefined &&
    (engram === null || typeof engram !== 'object' || typeof engram.buildMemoryContext !== 'function')
  )
    throw new EngramError('INVALID_INPUT', 'engram must be an open Engram.');
  if (engram !== undefined && (options.store !== undefined || options.project !== undefined))
    throw new EngramError(
      'INVALID_INPUT',
      'Give either engram or store/project, not both: an open Engram has its store.',
    );
  for (const name of ['store', 'cwd', 'project', 'sessionId'] as const) {
    const value = options[name];
    if (value !== undefined && (typeof value !== 'string' || value.trim() === '' || value.length > 4_096))
      throw new EngramError('INVALID_INPUT', `${name} must be a non-empty string.`);
  }
  if (
    options.sessionId !== undefined &&
    (options.sessionId.length > MAX_SESSION_ID_LENGTH || /[\u0000-\u001F\u007F-\u009F]/.test(options.sessionId))
  )
    throw new EngramError(
      'INVALID_INPUT',
      `sessionId is 1-${MAX_SESSION_ID_LENGTH} characters without control characters.`,
    );
  if (options.scopes !== undefined) {
    if (!Array.isArray(options.scopes) || options.scopes.length === 0)
      throw new EngramError(
        'INVALID_SCOPE',
        'scopes is a non-empty list of scopes, e.g. ["project:github.com/acme/app", "global"].',
      );
    for (const scope of options.scopes) assertScope(scope);
  }
  checkWhole(options.maxTokens, 'maxTokens', 0, MAX_TOKENS);
  checkWhole(options.recallTimeoutMs, 'recallTimeoutMs', 1, MAX_RECALL_TIME_CAP_MS);
  for (const name of ['recall', 'extract'] as const) {
    if (options[name] !== undefined && typeof options[name] !== 'boolean')
      throw new EngramError('INVALID_INPUT', `${name} is true or false.`);
  }
  for (const name of ['extractionModel', 'selectionModel'] as const) {
    const model = options[name];
    if (
      model !== undefined &&
      model !== false &&
      typeof (model as Partial<LanguageModel> | null)?.generate !== 'function'
    )
      throw new EngramError('INVALID_INPUT', `${name} must be a LanguageModel (with generate()) or false.`);
  }
  if (options.onEvent !== undefined && typeof options.onEvent !== 'function')
    throw new EngramError('INVALID_INPUT', 'onEvent must be a function.');
  if (options.env !== undefined && (options.env === null || typeof options.env !== 'object'))
    throw new EngramError('INVALID_INPUT', 'env is an object of environment variables.');
  return { ...options };
}

function checkWhole(value: unknown, name: string, minimum: number, maximum: number): void {
  if (value === undefined) return;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < minimum || value > maximum)
    throw new EngramError(
      'INVALID_INPUT',
      `Invalid ${name} ${JSON.stringify(value) ?? String(value)}: a whole number from ${minimum} to ${maximum}.`,
    );
}
