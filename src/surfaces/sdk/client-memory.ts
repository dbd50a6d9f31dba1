import { resolve } from 'node:path';
import { DEFAULT_SETTINGS } from '../../kernel/settings.js';
import { assertScope, type Scope } from '../../memory/scope.js';
import type { Engram } from '../../engram.js';
import type { Conversation } from '../../contracts/conversation.js';
import type { Extractor } from '../../extraction/extractor.js';
import type { JobOutcome } from '../../extraction/extraction-report.js';
import { MemoryTurn } from '../../agent/memory-turn.js';
import { settleWithin, turnError, type MemoryInjection } from '../../agent/memory-injection.js';
import { openEngram } from '../../node/open-engram.js';
import { ThreadLanguageModel } from '../../adapters/models/thread-language-model.js';
import { chooseExtractionModel, WRAPPER_MODEL_CHECKPOINT, type WrappedClientModel } from './extraction-model-choice.js';
import { createExtractor } from '../../node/create-extractor.js';
import {
  MAX_SESSION_ID_LENGTH,
  checkWithMemoryOptions,
  type ClientMemoryHandle,
  type WithMemoryEvent,
  type WithMemoryOptions,
} from './client-memory-options.js';

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
    this.#options = checkWithMemoryOptions(options ?? {});
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
