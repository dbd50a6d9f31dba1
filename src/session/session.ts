import { contextWindowFor, estimateMessageTokens, type ContextUsage } from './context-budget.js';
import { autoCompactThreshold, compactionTripped, shouldAutoCompact } from './compaction/compaction-policy.js';
import { EngramError } from '../kernel/errors.js';
import { contextEditingFor } from './microcompaction.js';
import { DEFAULT_SETTINGS, type Settings } from '../kernel/settings.js';
import type {
  ContentBlock,
  LanguageModel,
  LanguageModelRequest,
  LanguageModelResponse,
  SystemBlock,
  ToolDefinition,
  ToolUseBlock,
} from '../contracts/language-model.js';
import { withLastMessageCached } from '../contracts/language-model-content.js';
import { Compactor } from './compaction/compaction.js';
import type { CompactionResult } from './compaction/compaction-result.js';
import { FileReadCache } from './file-read-cache.js';
import type { ForkPrefix } from './forked-helper.js';
import { SessionAccounting } from './session-accounting.js';
import { SessionEvents, type SessionEventListener, type SessionEventName } from './session-events.js';
import {
  checkMaxOutputTokens,
  checkPlan,
  checkResponse,
  checkToolResults,
  checkUserContent,
  newSessionId,
  overflow,
  storedAssistantContent,
  systemBlocks,
} from './session-input.js';
import type { SessionMessage, SessionMetadata, SessionTranscriptSink, TodoItem } from '../contracts/session-message.js';
import { pendingToolUses, wireMessage } from './session-message-helpers.js';
import { SessionMessageLog } from './session-message-log.js';
import {
  runSessionCompaction,
  runSessionMicrocompaction,
  type SessionCompactionParts,
} from './session-compaction-run.js';
import type { SessionNotes } from './notes/session-notes.js';
import { SessionNotesDriver, type NotesDriverContext } from './notes/session-notes-driver.js';
import { errorToolResults, sessionMetadata, sessionStartState } from './session-resume-state.js';
import type { SessionOptions, SessionStats, PrepareRequestOptions, ToolResultInput } from './session-options.js';
import type { SessionTool } from '../contracts/session-tool.js';
import { prepareToolResults } from './session-tool-results.js';
import type { ToolResultStore } from './tool-result-store.js';
import { readPersistedOutputTool } from './persisted-output-tool.js';
import type { WorkingMemory } from './working-memory.js';

export type { SessionNotesConfig } from './notes/session-notes-driver.js';
export type { PrepareRequestOptions, SessionOptions, SessionStats, ToolResultInput } from './session-options.js';

const RECENT_FILES_KEPT = 20;

/**
 * One conversation with a model, kept inside its context window by SPEC §2's layers: token
 * accounting (last reported usage + estimate since), tool-result storage, microcompaction, session
 * notes in the background, compaction at the threshold, a transcript of everything. The message list
 * only grows between compactions and its messages are frozen, so each request begins with the
 * previous one byte for byte and the provider's prompt cache serves it.
 * @example
 * const session = new Session({ model, system: 'You are terse.' });
 * session.addUserMessage('Hello');
 * const response = await model.generate(await session.prepareRequest({ maxOutputTokens: 1024 }));
 * session.recordResponse(response);
 */
export class Session {
  readonly sessionId: string;
  readonly model: LanguageModel;
  readonly settings: Settings;
  /** Tokens of context the model accepts. */
  readonly contextWindow: number;
  readonly system: readonly SystemBlock[];
  readonly tools: readonly SessionTool[];
  readonly fileReadCache: FileReadCache;
  /** The todo list and task states (in memory only; the todo list is restored from the transcript). */
  readonly workingMemory: WorkingMemory;
  readonly cwd: string | undefined;
  readonly gitBranch: string;
  readonly #definitions: readonly ToolDefinition[];
  readonly #transcript: SessionTranscriptSink | undefined;
  readonly #transcriptPath: string | undefined;
  readonly #storage: ToolResultStore | undefined;
  readonly #compactor: Compactor;
  readonly #events = new SessionEvents();
  readonly #accounting: SessionAccounting;
  readonly #notes: SessionNotesDriver;
  readonly #now: () => Date;
  readonly #generateId: () => string;
  readonly #stats: SessionStats = {
    requests: 0,
    compactions: 0,
    microcompactions: 0,
    notesUpdates: 0,
    persistedToolResults: 0,
  };
  readonly #filesEdited: Set<string>;
  readonly #log: SessionMessageLog;
  readonly #compaction: SessionCompactionParts;
  #plan: string | undefined;
  #title: string | undefined;
  #recentFiles: Array<{ path: string; content: string }> = [];
  #busy = false;
  #closed = false;

  /** Builds a session in memory (no I/O); see `openSession` for one backed by files under ENGRAM_HOME. */
  constructor(options: SessionOptions) {
    if (
      options === null ||
      typeof options !== 'object' ||
      !options.model ||
      typeof options.model.generate !== 'function'
    ) {
      throw new EngramError('INVALID_INPUT', 'A Session needs options with a model (a LanguageModel).');
    }
    this.model = options.model;
    this.settings = options.settings ?? DEFAULT_SETTINGS;
    this.#now = options.now ?? (() => new Date());
    this.#generateId = options.generateId ?? newSessionId;
    this.sessionId = options.resumed?.sessionId ?? options.sessionId ?? newSessionId();
    this.contextWindow = options.contextWindow ?? contextWindowFor(this.model.modelId, this.settings);
    if (!Number.isInteger(this.contextWindow) || this.contextWindow < 1_000) {
      throw new EngramError(
        'CONFIG_INVALID',
        `The context window must be a whole number of tokens from 1000, got ${this.contextWindow}.`,
      );
    }
    this.system = systemBlocks(options.system);
    this.#storage = options.toolResultStorage;
    const tools = [...(options.tools ?? [])];
    if (this.#storage && !tools.some((tool) => tool.definition.name === 'read_persisted_output'))
      tools.push(readPersistedOutputTool(this.#storage));
    this.tools = Object.freeze(tools);
    this.#definitions = Object.freeze(tools.map((tool) => tool.definition));
    this.#accounting = new SessionAccounting({
      settings: this.settings,
      window: this.contextWindow,
      prefix: { system: this.system, tools: this.#definitions },
    });
    this.#transcript = options.transcript;
    this.#transcriptPath = options.transcriptPath;
    this.#transcript?.onWriteError?.((error) =>
      this.#events.emit('transcript-error', {
        error,
        ...(this.#transcriptPath !== undefined && { path: this.#transcriptPath }),
      }),
    );
    this.#notes = new SessionNotesDriver({
      notes: options.notes,
      events: this.#events,
      settings: this.settings,
      window: this.contextWindow,
      model: this.model,
      sessionId: this.sessionId,
      now: this.#now,
      generateId: this.#generateId,
    });
    this.#compactor =
      options.compactor ??
      new Compactor({
        settings: this.settings,
        model: this.model,
        generateId: this.#generateId,
        now: this.#now,
        ...(options.preCompactHooks && { preCompactHooks: options.preCompactHooks }),
      });
    this.fileReadCache =
      options.fileReadCache ??
      new FileReadCache({
        maxEntries: this.settings.session.fileCacheEntries,
        maxBytes: this.settings.session.fileCacheBytes,
      });
    this.cwd = options.cwd ?? options.resumed?.metadata.cwd;
    this.gitBranch = options.gitBranch ?? options.resumed?.metadata.gitBranch ?? '';
    this.#title = options.title ?? options.resumed?.metadata.title;
    const start = sessionStartState(options.resumed, this.settings, this.#now);
    this.#log = new SessionMessageLog({
      transcript: this.#transcript,
      events: this.#events,
      now: this.#now,
      generateId: this.#generateId,
      start,
    });
    this.#compaction = {
      log: this.#log,
      compactor: this.#compactor,
      events: this.#events,
      accounting: this.#accounting,
      notes: this.#notes,
      fileReadCache: this.fileReadCache,
      settings: this.settings,
      stats: this.#stats,
    };
    this.workingMemory = start.workingMemory;
    this.#plan = start.plan;
    this.#filesEdited = new Set(start.filesEdited);
    // Usage read back from a transcript may predate a compaction whose kept messages carry it: estimate instead.
    this.#accounting.forgetReports(this.#log.messages.length);
  }

  /** Adds a listener for one of the session's events; returns a function that removes it. */
  on<Name extends SessionEventName>(name: Name, listener: SessionEventListener<Name>): () => void {
    return this.#events.on(name, listener);
  }

  /** The live message list (frozen messages; a compaction replaces the list). */
  get messages(): readonly SessionMessage[] {
    return this.#log.messages;
  }

  /** Layer 3's notes, when the session has them. */
  get notes(): SessionNotes | undefined {
    return this.#notes.notes;
  }

  /** The todo list (working memory: restored from the transcript, never written to long-term memory). */
  get todos(): readonly TodoItem[] {
    return this.workingMemory.todos;
  }

  /** The plan in force (kept in the compact boundary and re-injected after a compaction). */
  get plan(): string | undefined {
    return this.#plan;
  }

  /** Files the session's tools edited (the compact boundary records them). */
  get filesEdited(): readonly string[] {
    return [...this.#filesEdited];
  }

  get stats(): Readonly<SessionStats> {
    return { ...this.#stats, notesUpdates: this.#notes.updates };
  }

  /** Failed compactions in a row and whether the circuit breaker stopped auto-compaction. */
  get compactionState(): { failuresInARow: number; tripped: boolean } {
    return {
      failuresInARow: this.#compactor.failuresInARow,
      tripped: compactionTripped({ failuresInARow: this.#compactor.failuresInARow }, this.settings),
    };
  }

  /**
   * Adds a user message (text, or text blocks). `context` (e.g. the recalled-memory block of this
   * turn) goes before it as a separate meta message: sent once, never in the system prompt, and the
   * first thing microcompaction drops. Tool calls still open (a killed process, a failed turn, a user
   * who moved on) are first answered as interrupted, so the conversation stays valid.
   */
  addUserMessage(
    content: string | readonly ContentBlock[],
    options: { context?: string; meta?: boolean } = {},
  ): SessionMessage {
    this.#checkOpen();
    const checked = checkUserContent(content, 'content');
    const context =
      options.context === undefined || options.context === ''
        ? undefined
        : checkUserContent(options.context, 'context');
    const tokens =
      estimateMessageTokens({ content: checked }, this.settings) +
      (context === undefined ? 0 : estimateMessageTokens({ content: context }, this.settings));
    const room = autoCompactThreshold(this.contextWindow, this.settings) - this.#accounting.prefixTokens;
    if (tokens > room) {
      throw new EngramError(
        'PAYLOAD_TOO_LARGE',
        `The message is about ${tokens} tokens; at most ${room} fit in this session's context window. Attach large content as a file or tool result instead.`,
      );
    }
    const pending = pendingToolUses(this.#log.messages);
    if (pending.length > 0) this.#log.append({ role: 'user', content: errorToolResults(pending) });
    if (context !== undefined) this.#log.append({ role: 'user', content: context, meta: true });
    return this.#log.append({ role: 'user', content: checked, ...(options.meta === true && { meta: true }) });
  }

  /**
   * Answers the tool calls of the last assistant message, one result per tool_use (any order; sent in
   * the tool_use order). A result over `session.toolResultThresholdBytes` is written whole to disk and
   * replaced by a frozen preview. Files read/edited feed re-injection and the compact boundary. When
   * storage or the transcript refuses (STORE_ERROR, CONFLICT, PAYLOAD_TOO_LARGE) nothing changes and
   * the calls stay open: answer them again (runAgentTurn answers with short error results).
   */
  async addToolResults(results: readonly ToolResultInput[]): Promise<SessionMessage> {
    this.#checkOpen();
    const pending = pendingToolUses(this.#log.messages);
    if (pending.length === 0)
      throw new EngramError(
        'INVALID_INPUT',
        'There are no tool calls to answer: the last message is not an assistant message with tool_use blocks.',
      );
    const byId = checkToolResults(
      results,
      pending.map((use) => use.id),
    );
    const { blocks, persisted } = await prepareToolResults({
      pending,
      results: byId,
      storage: this.#storage,
      thresholdBytes: this.settings.session.toolResultThresholdBytes,
    });
    this.#checkOpen();
    const message = this.#log.append({ role: 'user', content: blocks });
    for (const result of results) {
      for (const file of result.filesRead ?? []) this.#noteFileRead(file);
      for (const path of result.filesEdited ?? []) this.#filesEdited.add(path);
    }
    for (const item of persisted) {
      this.#stats.persistedToolResults += 1;
      this.#events.emit('tool-result-persisted', item);
    }
    if (!this.#closed) this.#notes.afterToolResults(this.#notesContext());
    return message;
  }

  /**
   * The next request: microcompaction first (after an idle gap), then auto-compaction when the
   * context passed the threshold; then system + tools + messages. Input + `maxOutputTokens` never
   * exceeds the window: when compaction cannot bring it under (failed, or the breaker is open), this
   * throws CONTEXT_WINDOW_EXCEEDED instead of sending. Auto-compaction failing while the request still
   * fits emits `compaction-failed` and goes on (a warning, not an error).
   */
  async prepareRequest(options: PrepareRequestOptions): Promise<LanguageModelRequest> {
    this.#checkOpen();
    const maxOutputTokens = checkMaxOutputTokens(options?.maxOutputTokens, this.contextWindow);
    if (this.#log.messages.length === 0 || this.#log.messages.at(-1)!.role !== 'user') {
      throw new EngramError(
        'INVALID_INPUT',
        'A request needs a user message or tool results last: call addUserMessage or addToolResults first.',
      );
    }
    if (this.#busy)
      throw new EngramError('CONFLICT', 'The session is already preparing a request or compacting; await it first.');
    this.#busy = true;
    try {
      runSessionMicrocompaction(this.#compaction, this.#now());
      let tokens = this.#tokens();
      const overWindow = (): boolean => tokens + maxOutputTokens > this.contextWindow;
      const breaker = { failuresInARow: this.#compactor.failuresInARow };
      if (
        shouldAutoCompact(tokens, this.contextWindow, this.settings, breaker) ||
        (overWindow() && !compactionTripped(breaker, this.settings))
      ) {
        let failure: unknown;
        try {
          await this.#compact({ trigger: 'auto', signal: options.signal });
        } catch (error) {
          failure = error;
        }
        tokens = this.#tokens();
        if (failure !== undefined && overWindow()) throw overflow(tokens, maxOutputTokens, this.contextWindow, failure);
      }
      if (overWindow())
        throw overflow(
          tokens,
          maxOutputTokens,
          this.contextWindow,
          this.compactionState.tripped ? 'the compaction circuit breaker is open' : undefined,
        );
      this.#warn(tokens);
      const contextEditing = contextEditingFor(this.settings);
      this.#stats.requests += 1;
      return {
        system: this.system,
        tools: this.#definitions,
        // The latest message ends the cached prefix: the next request and forked helpers read it back.
        messages: withLastMessageCached(this.#log.messages.map(wireMessage)),
        maxOutputTokens,
        ...(options.signal && { signal: options.signal }),
        ...(contextEditing && { contextEditing }),
      };
    } finally {
      this.#busy = false;
    }
  }

  /**
   * Records the model's answer to the last prepared request: the assistant message joins the list,
   * its reported usage becomes the base of token accounting, and the session-notes trigger is
   * evaluated (an update runs in the background, never blocking the turn).
   */
  recordResponse(response: LanguageModelResponse): SessionMessage {
    this.#checkOpen();
    checkResponse(response);
    if (this.#log.messages.at(-1)?.role !== 'user')
      throw new EngramError(
        'INVALID_INPUT',
        'recordResponse answers a prepared request: the last message must be the user message or tool results that were sent.',
      );
    const content = storedAssistantContent(response);
    const message = this.#log.append({
      role: 'assistant',
      content,
      usage: { ...response.usage },
      model: this.model.modelId,
    });
    const tokens = this.#tokens();
    this.#warn(tokens);
    this.#notes.afterResponse(
      { toolCalls: content.filter((block): block is ToolUseBlock => block.type === 'tool_use').length },
      this.#notesContext(tokens),
    );
    return message;
  }

  /** Compacts now (`/compact [instructions]`): the fast path from the session notes, else a summary. */
  async compact(
    options: { trigger?: 'auto' | 'manual'; instructions?: string; signal?: AbortSignal } = {},
  ): Promise<CompactionResult> {
    this.#checkOpen();
    if (this.#busy)
      throw new EngramError('CONFLICT', 'The session is already preparing a request or compacting; await it first.');
    this.#busy = true;
    try {
      return await this.#compact({
        trigger: options.trigger ?? 'manual',
        instructions: options.instructions,
        signal: options.signal,
      });
    } finally {
      this.#busy = false;
    }
  }

  /** Context usage now: the last reported usage plus an estimate of what was added since. */
  usage(): ContextUsage {
    return this.#accounting.usage(this.#log.messages);
  }

  /** The prefix a forked helper shares (system, tools, messages as the next request sends them). */
  forkPrefix(): ForkPrefix {
    return { system: this.system, tools: this.#definitions, messages: this.#log.messages.map(wireMessage) };
  }

  /** Replaces the todo list (the `todo_write` tool calls this); checked against `session.todoMaxItems`/`todoItemMaxChars`, appended to the transcript. */
  setTodos(todos: readonly TodoItem[]): void {
    this.#checkOpen();
    const change = this.workingMemory.setTodos(todos);
    try {
      this.#transcript?.append({ kind: 'todos', todos: change.newTodos, timestamp: this.#now().toISOString() });
    } catch (error) {
      this.workingMemory.setTodos(change.oldTodos);
      throw error;
    }
  }

  /** Sets the plan kept in the compact boundary and re-injected after compaction (at most `session.planMaxChars`). */
  setPlan(plan: string | undefined): void {
    this.#plan = checkPlan(plan, this.settings.session.planMaxChars);
  }

  /** Sets the title recorded in the transcript's metadata (shown by session listings). */
  setTitle(title: string): void {
    if (typeof title !== 'string' || title.length > 200)
      throw new EngramError('INVALID_INPUT', 'A session title is text of at most 200 characters.');
    this.#title = title;
  }

  /** Waits for a running session-notes update (the host calls this before showing /notes, or tests). */
  async waitForBackground(): Promise<void> {
    await this.#notes.waitForBackground();
  }

  /**
   * Ends the session: waits for a running notes update (or aborts it with `abortBackground`),
   * re-appends the metadata and closes the transcript. Idempotent.
   */
  async close(options: { abortBackground?: boolean } = {}): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (options.abortBackground) this.#notes.abort();
    await this.#notes.waitForBackground();
    if (this.#transcript) {
      if (this.#log.lastUuid !== null)
        this.#transcript.append({ kind: 'metadata', metadata: this.metadata(), timestamp: this.#now().toISOString() });
      await this.#transcript.close();
    }
  }

  /** Title, place and counts of the session, as the transcript's metadata line records them. */
  metadata(): SessionMetadata {
    return sessionMetadata({
      sessionId: this.sessionId,
      title: this.#title,
      cwd: this.cwd,
      gitBranch: this.gitBranch,
      model: this.model.modelId,
      createdAt: this.#log.createdAt,
      messages: this.#log.messages,
    });
  }

  async #compact(input: {
    trigger: 'auto' | 'manual';
    instructions?: string;
    signal?: AbortSignal;
  }): Promise<CompactionResult> {
    if (this.#log.messages.length === 0) throw new EngramError('INVALID_INPUT', 'There is nothing to compact yet.');
    if (pendingToolUses(this.#log.messages).length > 0)
      throw new EngramError('INVALID_INPUT', 'Answer the pending tool calls (addToolResults) before compacting.');
    return runSessionCompaction(this.#compaction, input.trigger, () => ({
      prefix: this.forkPrefix(),
      ...(this.notes && { notes: this.notes }),
      reinject: {
        recentFiles: this.#recentFiles.slice(-5).reverse(),
        ...(this.#plan !== undefined && { plan: this.#plan }),
        todos: this.todos.map((todo) => ({ ...todo })),
      },
      metadata: { filesEdited: [...this.#filesEdited], gitBranch: this.gitBranch },
      ...(input.instructions !== undefined && { customInstructions: input.instructions }),
      ...(input.signal && { signal: input.signal }),
      window: this.contextWindow,
      ...(this.#transcriptPath !== undefined && { transcriptPath: this.#transcriptPath }),
    }));
  }

  #notesContext(tokens?: number): NotesDriverContext {
    return {
      prefix: () => this.forkPrefix(),
      tokens: tokens ?? this.#tokens(),
      lastMessageUuid: this.#log.messages.at(-1)!.uuid,
      breaker: { failuresInARow: this.#compactor.failuresInARow },
    };
  }

  #warn(tokens: number): void {
    const warning = this.#accounting.newWarning(tokens);
    if (warning) this.#events.emit('context-warning', warning);
  }

  /** Estimated tokens of the next request's input (without output). */
  #tokens(): number {
    return this.#accounting.tokens(this.#log.messages);
  }

  #noteFileRead(file: { path: string; content: string }): void {
    if (typeof file?.path !== 'string' || typeof file.content !== 'string') return;
    this.#recentFiles = this.#recentFiles.filter((entry) => entry.path !== file.path);
    this.#recentFiles.push({ path: file.path, content: file.content });
    if (this.#recentFiles.length > RECENT_FILES_KEPT) this.#recentFiles.shift();
  }

  #checkOpen(): void {
    if (this.#closed)
      throw new EngramError('INVALID_INPUT', 'This session is closed; open or resume a session to continue.');
  }
}
