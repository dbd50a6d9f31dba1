import { EngramError } from '../kernel/errors.js';
import { estimateTextTokens } from '../kernel/token-estimate.js';
import type { Conversation } from '../contracts/conversation.js';
import type { LanguageModel } from '../contracts/language-model.js';
import type { Scope } from '../memory/scope.js';
import type { MemoryPlacement } from '../privacy/injected-markers.js';
import { buildStaticPart, type MemoryContext, type MemoryContextOptions } from '../recall/memory-context.js';
import type { Session } from '../session/session.js';
import { runAgentTurn, type AgentTurnResult } from './agent-turn.js';
import {
  MAX_RECALL_TIME_CAP_MS,
  emptyInjection,
  later,
  settleWithin,
  turnError,
  type ExtractionQueueResult,
  type MemoryInjection,
  type MemoryTurnEvent,
} from './memory-injection.js';
import { MAX_SURFACED, MAX_TOKENS, checkInteger, contentText, recallQuery } from './memory-turn-input.js';
import {
  checkMemoryTurnOptions,
  type AfterResponseOptions,
  type BeforeRequestOptions,
  type MemoryAgentTurnOptions,
  type MemoryAgentTurnResult,
  type MemoryTurnEngram,
  type MemoryTurnOptions,
} from './memory-turn-options.js';
import { MemoryTurnExtraction } from './memory-turn-extraction.js';
import { sessionConversation } from './session-conversation.js';

/**
 * SPEC's memory turn for one conversation, the same for every host: `beforeRequest` recalls for the user's
 * message and returns the memory context to inject (static part first, `<memory_context>` last, what
 * this conversation already surfaced left out), capped in time and failing open; `afterResponse`
 * queues extraction of the new messages without delaying the caller; `run` does both around an agent
 * turn on a Session. A class because a conversation has state: the surfaced set (restorable), the
 * static part kept byte-stable for the prompt cache, and the queueing still in flight (`flush`).
 *
 * A host that runs one process per prompt (a Claude Code hook) restores the surfaced set with
 * `surfaced`, saves `surfacedIds()`, awaits `flush()` before it exits, and builds its Extractor with
 * `autoStart: false`: else the extractor's polling worker keeps the process alive (the queued jobs
 * are durable in the store; a detached worker or `engram serve` runs them).
 * @example
 * // Chat style: the block goes into the conversation once (a context message before the user's) and
 * // stays there, so memories surfaced earlier are left out; the system prompt is built once.
 * const turn = new MemoryTurn({ engram, extractor });
 * const system = `${await turn.staticPart()}\n${basePrompt}`;
 * const injection = await turn.beforeRequest(userMessage, { staticPart: false });
 * if (injection.block !== '') messages.push({ role: 'user', content: injection.block });
 * messages.push({ role: 'user', content: userMessage });
 * // … the model answers with `system` and `messages` …
 * void turn.afterResponse({ sessionId, messages: conversationSoFar });
 * @example
 * // Client-wrapper style: the whole prompt is rebuilt on every request, so nothing injected before
 * // is still there: excludeSurfaced false gives earlier memories again when they still fit.
 * const turn = new MemoryTurn({ engram, extractor, excludeSurfaced: false, placement: 'system-end' });
 * const injection = await turn.beforeRequest(lastUserMessage);
 * const system = `${injection.staticPart}\n${basePrompt}\n${injection.block}`;
 * // … the model answers …
 * void turn.afterResponse({ sessionId, messages: conversationSoFar });
 */
export class MemoryTurn {
  readonly #engram: MemoryTurnEngram;
  readonly #selectionModel: LanguageModel | false | undefined;
  readonly #scopes: Scope[];
  readonly #maxTokens: number;
  readonly #timeoutMs: number;
  readonly #recall: boolean;
  readonly #excludeSurfaced: boolean;
  readonly #onEvent: ((event: MemoryTurnEvent) => void) | undefined;
  readonly #surfaced: Set<string>;
  /** The after-response step: extraction queued, told which memories the model was given. */
  readonly #extraction: MemoryTurnExtraction;
  readonly #placement: MemoryPlacement;
  #staticPart: { text: string; tokens: number } | undefined;
  #staticWork: Promise<{ text: string; tokens: number }> | undefined;
  readonly #pending = new Set<Promise<unknown>>();

  constructor(options: MemoryTurnOptions) {
    const checked = checkMemoryTurnOptions(options);
    this.#engram = checked.engram;
    this.#extraction = new MemoryTurnExtraction(checked.extractor, {
      emit: (event) => this.#emit(event),
      track: (task) => this.#track(task),
    });
    this.#selectionModel = checked.selectionModel;
    this.#scopes = checked.scopes;
    this.#maxTokens = checked.maxTokens;
    this.#timeoutMs = checked.timeoutMs;
    this.#recall = checked.recall;
    this.#excludeSurfaced = checked.excludeSurfaced;
    this.#onEvent = checked.onEvent;
    this.#surfaced = checked.surfaced;
    this.#placement = checked.placement;
  }

  /**
   * The before-request step: recalls for the user's message within the scopes and returns what to
   * inject. Never throws for a memory failure (store locked, closed or corrupt; a model down): the
   * injection is empty and a warning and an event say why. Past the time cap the LLM retriever is
   * cut and ranked recall kept if it is done; else the request goes on without memory. A message
   * that is not a string is refused with INVALID_INPUT.
   */
  async beforeRequest(message: string, options: BeforeRequestOptions = {}): Promise<MemoryInjection> {
    const query = recallQuery(message);
    if (options === null || typeof options !== 'object')
      throw new EngramError('INVALID_INPUT', 'beforeRequest() options are an object.');
    const budget = checkInteger(options.maxTokens ?? this.#maxTokens, 'maxTokens', 0, MAX_TOKENS);
    const timeoutMs = checkInteger(
      options.recallTimeoutMs ?? this.#timeoutMs,
      'recallTimeoutMs',
      1,
      MAX_RECALL_TIME_CAP_MS,
    );
    const noStatic = { text: '', tokens: 0 };
    if (!this.#recall) return emptyInjection('recall-off', noStatic, budget);
    const wantStatic = options.staticPart !== false;
    if (options.signal?.aborted) return this.#cut('signal', timeoutMs, budget, wantStatic);
    // What cannot be aborted (a store read) is left to finish on its own; its result is dropped.
    const controller = new AbortController();
    const work = Promise.all([
      wantStatic ? this.#staticPartWork() : Promise.resolve(noStatic),
      query === '' ? Promise.resolve(undefined) : this.#context(query, budget, controller.signal, options),
    ]);
    work.catch(() => undefined);
    let settled = await settleWithin(work, timeoutMs, options.signal);
    if (settled.state === 'cut' && settled.by === 'signal') {
      controller.abort(new EngramError('MODEL_ABORTED', 'The turn was abandoned.'));
      return this.#cut('signal', timeoutMs, budget, wantStatic);
    }
    if (settled.state === 'cut') {
      // The abort ends the LLM retriever at once, and what is left of the build is computation: when
      // ranked recall is done, its memories come before the next timer tick and are still worth giving.
      controller.abort(new EngramError('MODEL_ABORTED', `Recall passed its ${timeoutMs} ms cap.`));
      settled = await settleWithin(work, 0);
      if (settled.state === 'cut') return this.#cut('time-cap', timeoutMs, budget, wantStatic);
      if (settled.state === 'done')
        this.#emit({ type: 'recall-timed-out', timeoutMs, kept: settled.value[1]?.included.length ?? 0 });
    }
    if (settled.state === 'failed') {
      const error = turnError(settled.error);
      this.#emit({ type: 'recall-failed', error });
      return emptyInjection('failed', wantStatic ? this.#knownStaticPart() : noStatic, budget, {
        warnings: ['recall-failed'],
        error,
      });
    }
    const [staticPart, context] = settled.value;
    return this.#injected(staticPart, context, budget, controller.signal.aborted);
  }

  /** The static part alone (a session's start, a system prompt built once): fails open to '', and is '' with `recall: false`. */
  async staticPart(options: { signal?: AbortSignal } = {}): Promise<string> {
    return (await this.beforeRequest('', { ...(options.signal && { signal: options.signal }) })).staticPart;
  }

  /** Builds the static part again on the next request (memories changed and a cache miss is fine: a compaction, a new session). */
  refreshStaticPart(): void {
    this.#staticPart = undefined;
    this.#staticWork = undefined;
  }

  /**
   * The after-response step: queues extraction of the conversation's messages that are new since the
   * last queued turn (Extractor.afterTurn, which only enqueues). Returns at once: the work starts on a
   * later turn of the event loop, so the caller's response or stream end is never delayed, and the
   * promise never rejects (a failure is an event and `status: 'failed'`). A turn that ends in a tool
   * call is deferred; the final answer's call queues it with the rest.
   */
  afterResponse(conversation: Conversation, options: AfterResponseOptions = {}): Promise<ExtractionQueueResult> {
    return this.#extraction.queue(conversation, options);
  }

  /**
   * One agent turn on a Session with memory: `beforeRequest` for the message, its block (then the host's
   * `context`) as the turn's context, runAgentTurn, then `afterResponse`. The user's turn is over
   * when it returns (an answer, or the tool-round cap), so it is queued as final. When runAgentTurn
   * throws before the block reached the session, what this turn surfaced is taken back.
   */
  async run(session: Session, options: MemoryAgentTurnOptions): Promise<MemoryAgentTurnResult> {
    if (options === null || typeof options !== 'object')
      throw new EngramError('INVALID_INPUT', 'run() takes { content, ... }.');
    const surfacedBefore = new Set(this.#surfaced);
    const injection = await this.beforeRequest(contentText(options.content), {
      staticPart: false,
      ...(options.signal && { signal: options.signal }),
    });
    const context = [injection.block, options.context ?? ''].filter((part) => part !== '').join('\n\n');
    const { context: _hostContext, ...turn } = options;
    const start = session.messages.length;
    let result: AgentTurnResult;
    try {
      result = await runAgentTurn(session, { ...turn, ...(context !== '' && { context }) });
    } catch (error) {
      // Refused before the block reached the session (an abort, PAYLOAD_TOO_LARGE): the model never saw
      // these memories, so they are not surfaced and the next message may recall them again.
      const added = session.messages
        .slice(start)
        .some((message) => message.meta === true && message.content === context);
      if (!added) {
        // A memory surfaced by an earlier turn (excludeSurfaced false) is still in the context from then.
        this.#unsurface(injection.memories.map((entry) => entry.memory.id).filter((id) => !surfacedBefore.has(id)));
      }
      throw error;
    }
    const extraction = this.afterResponse(sessionConversation(session.sessionId, session.messages), { final: true });
    return { ...result, injection, extraction };
  }

  /** Ids surfaced in this conversation, oldest first: what a caller persists between processes. */
  surfacedIds(): string[] {
    return [...this.#surfaced];
  }

  /** Whether a memory was surfaced in this conversation. */
  hasSurfaced(id: string): boolean {
    return this.#surfaced.has(id);
  }

  /** The injected text left the context (a compaction dropped it): these memories, or all, may be surfaced again. */
  forgetSurfaced(ids?: Iterable<string>): void {
    if (ids === undefined) this.#surfaced.clear();
    else for (const id of ids) this.#surfaced.delete(id);
  }

  /** Waits for the queueing and hit recording still in flight (before a process exits, or a close). Never rejects. */
  async flush(): Promise<void> {
    while (this.#pending.size > 0) await Promise.allSettled([...this.#pending]);
  }

  /** Takes back what one injection newly surfaced, when it never reached the model. */
  #unsurface(ids: readonly string[]): void {
    for (const id of ids) {
      this.#surfaced.delete(id);
      this.#extraction.takenBack(id);
    }
  }

  async #context(
    query: string,
    budget: number,
    signal: AbortSignal,
    options: BeforeRequestOptions,
  ): Promise<MemoryContext> {
    const exclude = this.#excludeSurfaced && this.#surfaced.size > 0 ? new Set(this.#surfaced) : undefined;
    const chosen: MemoryContextOptions = {
      scopes: this.#scopes,
      maxTokens: budget,
      includeStaticPart: false,
      // Hits are recorded once the memories are given, never for a recall that came too late.
      recordAccess: false,
      signal,
      ...(this.#selectionModel !== undefined && {
        model: this.#selectionModel === false ? undefined : this.#selectionModel,
      }),
      ...(exclude && { surfaced: exclude, exclude }),
      ...(Array.isArray(options.recentTools) && { recentTools: options.recentTools }),
    };
    return this.#engram.buildMemoryContext(query, chosen);
  }

  /** The static part, built once per memory turn so the prompt's prefix stays byte-stable; a failure is not kept. */
  #staticPartWork(): Promise<{ text: string; tokens: number }> {
    if (this.#staticPart) return Promise.resolve(this.#staticPart);
    if (!this.#staticWork) {
      const { store, settings } = this.#engram;
      const work = buildStaticPart({ store, settings }, this.#scopes, this.#placement).then((text) => {
        const part = { text, tokens: estimateTextTokens(text, { bytesPerToken: settings.tokens.bytesPerTextToken }) };
        if (this.#staticWork === work) this.#staticPart = part;
        return part;
      });
      work.catch(() => {
        if (this.#staticWork === work) this.#staticWork = undefined;
      });
      this.#staticWork = work;
    }
    return this.#staticWork;
  }

  /** The static part if it was built before: a late or failed recall keeps the prompt's prefix as it was. */
  #knownStaticPart(): { text: string; tokens: number } {
    return this.#staticPart ?? { text: '', tokens: 0 };
  }

  #cut(by: 'time-cap' | 'signal', timeoutMs: number, budget: number, wantStatic: boolean): MemoryInjection {
    const staticPart = wantStatic ? this.#knownStaticPart() : { text: '', tokens: 0 };
    if (by === 'signal') {
      this.#emit({ type: 'recall-aborted' });
      return emptyInjection('aborted', staticPart, budget, { warnings: ['recall-aborted'] });
    }
    this.#emit({ type: 'recall-timed-out', timeoutMs, kept: 0 });
    return emptyInjection('timed-out', staticPart, budget, { warnings: ['recall-timed-out'] });
  }

  #injected(
    staticPart: { text: string; tokens: number },
    context: MemoryContext | undefined,
    budget: number,
    cut: boolean,
  ): MemoryInjection {
    if (!context) return emptyInjection('nothing-recalled', staticPart, budget);
    // The cap aborted the LLM retriever: say so as a timeout, not as a model failure.
    const warnings = cut
      ? [
          ...new Set(
            context.warnings.map((warning) => (warning === 'llm-selection-failed' ? 'llm-selection-timeout' : warning)),
          ),
        ]
      : context.warnings;
    const memories = context.included;
    this.#emit({
      type: 'memory-recalled',
      recalled: memories.length + context.omitted.length,
      omitted: context.omitted.length,
      warnings,
    });
    for (const entry of memories) {
      this.#surfaced.delete(entry.memory.id);
      this.#surfaced.add(entry.memory.id);
      this.#extraction.given({
        id: entry.memory.id,
        name: entry.memory.name,
        type: entry.memory.type,
        content: entry.memory.content,
      });
    }
    while (this.#surfaced.size > MAX_SURFACED) this.#surfaced.delete(this.#surfaced.values().next().value!);
    const tokens = { staticPart: staticPart.tokens, block: context.tokens.block, budget };
    if (memories.length > 0) {
      this.#emit({ type: 'memory-injected', ids: memories.map((entry) => entry.memory.id), tokens });
      this.#recordHits(
        memories.map((entry) => entry.memory.id),
        context.at,
      );
    }
    return {
      status: context.block === '' ? 'nothing-recalled' : 'injected',
      staticPart: staticPart.text,
      block: context.block,
      memories,
      omitted: context.omitted.length,
      tokens,
      warnings,
    };
  }

  /**
   * Hits are a write: done after the injection is returned, so a busy store costs the counts, never
   * the request's time (a write lock another process holds is waited for off the event loop, up to
   * store.busyTimeoutMs; then the counts are dropped and the event says why).
   */
  #recordHits(ids: string[], at: string): void {
    const store = this.#engram.store;
    const task = later(() => store.recordAccess([...new Set(ids)], at)).catch((error: unknown) => {
      const { code, message } = turnError(error);
      this.#emit({
        type: 'hits-failed',
        error: { code, message: `Hits of ${ids.length} memories were not recorded: ${message}` },
      });
    });
    this.#track(task);
  }

  #track<T>(task: Promise<T>): Promise<T> {
    this.#pending.add(task);
    void task.finally(() => this.#pending.delete(task)).catch(() => undefined);
    return task;
  }

  #emit(event: MemoryTurnEvent): void {
    try {
      this.#onEvent?.(event);
    } catch {
      // A broken listener must not break the turn.
    }
  }
}
