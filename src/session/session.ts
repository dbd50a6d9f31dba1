import { contextUsage, contextWindowFor, estimateMessageTokens, type ContextUsage } from '../core/context-budget.js';
import { autoCompactThreshold, compactionTripped, shouldAutoCompact } from '../core/compaction-policy.js';
import { EngramError } from '../core/errors.js';
import { contextEditingFor, microcompact } from '../core/microcompaction.js';
import { DEFAULT_SETTINGS, type Settings } from '../core/settings.js';
import { estimateJsonTokens, estimateTextTokens } from '../core/token-estimate.js';
import type { ContentBlock, LanguageModel, LanguageModelMessage, LanguageModelRequest, LanguageModelResponse, SystemBlock, ToolDefinition, ToolResultBlock, ToolUseBlock } from '../models/language-model.js';
import { totalInputTokens, withLastMessageCached } from '../models/language-model-content.js';
import { Compactor, type CompactionResult, type PreCompactHook } from './compaction.js';
import { FileReadCache } from './file-read-cache.js';
import type { ForkPrefix } from './forked-helper.js';
import { SessionEvents, type SessionEventListener, type SessionEventName } from './session-events.js';
import type { CompactBoundary, SessionMessage, SessionMetadata, SessionTranscriptSink, TodoItem } from './session-message.js';
import { SessionNotes, type SessionNotesEvent, type SessionNotesOptions } from './session-notes.js';
import type { SessionTool, SessionToolOutput } from './session-tool.js';
import { checkMaxOutputTokens, checkResponse, checkTodos, checkToolResults, checkUserContent, freezeMessage, newSessionId, storedAssistantContent } from './session-input.js';
import type { OpenSessionOptions } from './session-open.js';
import { readPersistedOutputTool, type ToolResultStorage } from './tool-result-storage.js';

/** What a Session is built from. Nothing here does I/O; `openSession` (session-open.ts) builds the disk-backed parts. */
export interface SessionOptions {
  /** The model the session's turns go to (its id picks the context window). */
  model: LanguageModel;
  /** Default: DEFAULT_SETTINGS. */
  settings?: Settings;
  /** Default: a new random id. */
  sessionId?: string;
  /**
   * The static, cache-stable system prompt (instructions, then the MEMORY.md index). A string is one
   * block marked for caching. Never changes for the life of the session: per-turn recalled memory goes
   * in the turn's user message (`addUserMessage(..., { context })`), so every request keeps its prefix.
   */
  system?: string | readonly SystemBlock[];
  /** The tools offered in every request, unchanged (definitions sent in this order). `read_persisted_output` is added when tool results are stored. */
  tools?: readonly SessionTool[];
  /** Where every message, boundary and todo list is appended; none: nothing is written. */
  transcript?: SessionTranscriptSink;
  /** Layer 1; none: oversized results are cut at the threshold instead. */
  toolResultStorage?: ToolResultStorage;
  /**
   * Layer 3: where the session notes live (the Session builds them over its model and settings and
   * relays their events), or a SessionNotes built elsewhere (then only start/finish are reported, from
   * the outside). None: compaction always takes the summary path.
   */
  notes?: SessionNotes | SessionNotesConfig;
  /** Layer 4; default: a Compactor over `model` and the settings (with `preCompactHooks`). */
  compactor?: Compactor;
  /** User hooks run before a summary compaction; text they return joins the summarizer's instructions. */
  preCompactHooks?: PreCompactHook[];
  /** Named in a compaction summary so the model can look up details from before the boundary. */
  transcriptPath?: string;
  /** File-read dedupe shared with the host's read tool; default: one sized by the settings. */
  fileReadCache?: FileReadCache;
  /** Tokens of context; default `contextWindowFor(model.modelId, settings)`. */
  contextWindow?: number;
  cwd?: string;
  /** `''` outside git. */
  gitBranch?: string;
  title?: string;
  /** A session read back from its transcript (`readSessionTranscript`): its live messages, todos and metadata. */
  resumed?: { sessionId: string; messages: SessionMessage[]; boundary?: CompactBoundary; todos: TodoItem[]; metadata: SessionMetadata; leafUuid?: string };
  now?: () => Date;
  generateId?: () => string;
}

/** Session notes the Session builds: the file, and optionally a helper model, template, prompt and sidechain transcripts. */
export type SessionNotesConfig = Omit<SessionNotesOptions, 'settings' | 'onEvent' | 'model' | 'now' | 'generateId' | 'sessionId'> & { model?: LanguageModel };

/** One prepared request's options. */
export interface PrepareRequestOptions {
  /** The request's output cap; input + this never exceeds the window. */
  maxOutputTokens: number;
  signal?: AbortSignal;
}

/** A tool result to add: the tool_use it answers and what the tool returned. */
export interface ToolResultInput extends SessionToolOutput {
  toolUseId: string;
}

/** Counters a host or benchmark reads. */
export interface SessionStats {
  requests: number;
  compactions: number;
  microcompactions: number;
  notesUpdates: number;
  persistedToolResults: number;
}

const RECENT_FILES_KEPT = 20;
const INTERRUPTED_TOOL_RESULT = 'Interrupted: the session ended before this tool call was answered.';

/**
 * One conversation with a model, kept inside its context window by SPEC §2's layers: token
 * accounting (last reported input + estimate since), tool-result storage, microcompaction, session
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
  readonly notes: SessionNotes | undefined;
  readonly cwd: string | undefined;
  readonly gitBranch: string;
  readonly #definitions: readonly ToolDefinition[];
  readonly #transcript: SessionTranscriptSink | undefined;
  readonly #storage: ToolResultStorage | undefined;
  readonly #compactor: Compactor;
  readonly #events = new SessionEvents();
  readonly #now: () => Date;
  readonly #generateId: () => string;
  readonly #baseTokens: number;
  readonly #estimates = new WeakMap<SessionMessage, number>();
  readonly #stats: SessionStats = { requests: 0, compactions: 0, microcompactions: 0, notesUpdates: 0, persistedToolResults: 0 };
  #messages: SessionMessage[] = [];
  #lastUuid: string | null = null;
  /** Total input tokens the provider reported for the last request, and how many messages that request had. */
  #reported: { tokens: number; messageCount: number } | undefined;
  #sentMessageCount = 0;
  #warnedLevel = 0;
  #todos: TodoItem[] = [];
  #plan: string | undefined;
  #title: string | undefined;
  #createdAt: string | undefined;
  readonly #filesEdited = new Set<string>();
  #recentFiles: Array<{ path: string; content: string }> = [];
  #notesPending = false;
  #notesTask: Promise<void> | undefined;
  readonly #notesOwned: boolean;
  readonly #transcriptPath: string | undefined;
  #busy = false;
  #closed = false;
  /** A resumed transcript ended on tool calls the previous process never answered. */
  #interruptedToolUses = false;

  /** Builds a session in memory (no I/O); see `openSession` for one backed by files under ENGRAM_HOME. */
  constructor(options: SessionOptions) {
    if (options === null || typeof options !== 'object' || !options.model || typeof options.model.generate !== 'function') {
      throw new EngramError('INVALID_INPUT', 'A Session needs options with a model (a LanguageModel).');
    }
    this.model = options.model;
    this.settings = options.settings ?? DEFAULT_SETTINGS;
    this.#now = options.now ?? (() => new Date());
    this.#generateId = options.generateId ?? newSessionId;
    this.sessionId = options.resumed?.sessionId ?? options.sessionId ?? newSessionId();
    this.contextWindow = options.contextWindow ?? contextWindowFor(this.model.modelId, this.settings);
    if (!Number.isInteger(this.contextWindow) || this.contextWindow < 1_000) {
      throw new EngramError('CONFIG_INVALID', `The context window must be a whole number of tokens from 1000, got ${this.contextWindow}.`);
    }
    this.system = systemBlocks(options.system);
    this.#storage = options.toolResultStorage;
    const tools = [...(options.tools ?? [])];
    if (this.#storage && !tools.some((tool) => tool.definition.name === 'read_persisted_output')) tools.push(readPersistedOutputTool(this.#storage));
    this.tools = Object.freeze(tools);
    this.#definitions = Object.freeze(tools.map((tool) => tool.definition));
    this.#transcript = options.transcript;
    this.#notesOwned = options.notes !== undefined && !(options.notes instanceof SessionNotes);
    this.notes = options.notes === undefined || options.notes instanceof SessionNotes ? options.notes : this.#buildNotes(options.notes);
    this.#compactor = options.compactor ?? new Compactor({ settings: this.settings, model: this.model, generateId: this.#generateId, now: this.#now, ...(options.preCompactHooks && { preCompactHooks: options.preCompactHooks }) });
    this.#transcriptPath = options.transcriptPath;
    this.fileReadCache = options.fileReadCache ?? new FileReadCache({ maxEntries: this.settings.session.fileCacheEntries, maxBytes: this.settings.session.fileCacheBytes });
    this.cwd = options.cwd ?? options.resumed?.metadata.cwd;
    this.gitBranch = options.gitBranch ?? options.resumed?.metadata.gitBranch ?? '';
    this.#title = options.title ?? options.resumed?.metadata.title;
    this.#baseTokens = estimateTextTokens(this.system.map((block) => block.text).join('\n\n')) + estimateJsonTokens(JSON.stringify(this.#definitions));
    if (options.resumed) {
      this.#messages = options.resumed.messages.map(freezeMessage);
      this.#lastUuid = options.resumed.leafUuid ?? this.#messages.at(-1)?.uuid ?? options.resumed.boundary?.uuid ?? null;
      this.#todos = checkTodos(options.resumed.todos);
      // The boundary keeps the plan with the todo list rendered after it; the todos come back on their own.
      this.#plan = options.resumed.boundary?.plan?.replace(/(?:^|\n\n)Todo list:\n[\s\S]*$/, '') || undefined;
      for (const path of options.resumed.boundary?.filesEdited ?? []) this.#filesEdited.add(path);
      this.#createdAt = options.resumed.metadata.createdAt;
      this.#interruptedToolUses = this.#pendingToolUses().length > 0;
    }
  }

  /** A Session backed by files under `<home>/projects/<slug>/` (transcript, tool results, notes); see `openSession`. */
  static async open(options: OpenSessionOptions): Promise<Session> {
    const { openSession } = await import('./session-open.js');
    return openSession(options).session;
  }

  /** Continues a session from its transcript (`--resume <id>`); NOT_FOUND when there is none. */
  static async resume(options: OpenSessionOptions & { sessionId: string }): Promise<Session> {
    const { resumeSession } = await import('./session-open.js');
    return (await resumeSession(options)).session;
  }

  /** Adds a listener for one of the session's events; returns a function that removes it. */
  on<Name extends SessionEventName>(name: Name, listener: SessionEventListener<Name>): () => void {
    return this.#events.on(name, listener);
  }

  /** The live message list (frozen messages; a compaction replaces the list). */
  get messages(): readonly SessionMessage[] {
    return this.#messages;
  }

  /** The todo list (working memory: restored from the transcript, never written to long-term memory). */
  get todos(): readonly TodoItem[] {
    return this.#todos;
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
    return { ...this.#stats };
  }

  /** Failed compactions in a row and whether the circuit breaker stopped auto-compaction. */
  get compactionState(): { failuresInARow: number; tripped: boolean } {
    return { failuresInARow: this.#compactor.failuresInARow, tripped: compactionTripped({ failuresInARow: this.#compactor.failuresInARow }, this.settings) };
  }

  /**
   * Adds a user message (text, or text blocks). `context` (e.g. the recalled-memory block of this
   * turn) goes before it as a separate meta message: sent once, never in the system prompt, and the
   * first thing microcompaction drops.
   */
  addUserMessage(content: string | readonly ContentBlock[], options: { context?: string; meta?: boolean } = {}): SessionMessage {
    this.#checkOpen();
    if (this.#interruptedToolUses) this.#answerInterrupted();
    this.#checkNoPendingToolUse('addUserMessage');
    const checked = checkUserContent(content, 'content');
    const context = options.context === undefined || options.context === '' ? undefined : checkUserContent(options.context, 'context');
    const tokens = estimateMessageTokens({ content: checked }, this.settings) + (context === undefined ? 0 : estimateMessageTokens({ content: context }, this.settings));
    const room = autoCompactThreshold(this.contextWindow, this.settings) - this.#baseTokens;
    if (tokens > room) {
      throw new EngramError('PAYLOAD_TOO_LARGE', `The message is about ${tokens} tokens; at most ${room} fit in this session's context window. Attach large content as a file or tool result instead.`);
    }
    if (context !== undefined) this.#append({ role: 'user', content: context, meta: true });
    return this.#append({ role: 'user', content: checked, ...(options.meta === true && { meta: true }) });
  }

  /**
   * Answers the tool calls of the last assistant message, one result per tool_use (any order; sent in
   * the tool_use order). A result over `session.toolResultThresholdBytes` is written whole to disk and
   * replaced by a frozen preview. Files read/edited feed re-injection and the compact boundary.
   */
  async addToolResults(results: readonly ToolResultInput[]): Promise<SessionMessage> {
    this.#checkOpen();
    const pending = this.#pendingToolUses();
    if (pending.length === 0) throw new EngramError('INVALID_INPUT', 'There are no tool calls to answer: the last message is not an assistant message with tool_use blocks.');
    const byId = checkToolResults(results, pending.map((use) => use.id));
    const blocks: ToolResultBlock[] = [];
    const persisted: Array<{ toolUseId: string; path: string; bytes: number }> = [];
    // Everything is stored before the message is added, so a failing disk changes nothing.
    for (const use of pending) {
      const result = byId.get(use.id)!;
      let content = result.content;
      if (this.#storage) {
        const stored = await this.#storage.store(use.id, result.content);
        content = stored.content;
        if (stored.persisted) persisted.push({ toolUseId: use.id, ...stored.persisted });
      } else if (Buffer.byteLength(content) > this.settings.session.toolResultThresholdBytes) {
        content = cutToBytes(content, this.settings.session.toolResultThresholdBytes);
      }
      blocks.push({ type: 'tool_result', toolUseId: use.id, content, ...(result.isError === true && { isError: true }) });
    }
    this.#checkOpen();
    for (const result of results) {
      for (const file of result.filesRead ?? []) this.#noteFileRead(file);
      for (const path of result.filesEdited ?? []) this.#filesEdited.add(path);
    }
    const message = this.#append({ role: 'user', content: blocks });
    for (const item of persisted) {
      this.#stats.persistedToolResults += 1;
      this.#events.emit('tool-result-persisted', item);
    }
    if (this.#notesPending) this.#startNotesUpdate();
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
    if (this.#messages.length === 0 || this.#messages.at(-1)!.role !== 'user') {
      throw new EngramError('INVALID_INPUT', 'A request needs a user message or tool results last: call addUserMessage or addToolResults first.');
    }
    if (this.#busy) throw new EngramError('CONFLICT', 'The session is already preparing a request or compacting; await it first.');
    this.#busy = true;
    try {
      this.#microcompact();
      let tokens = this.#tokens();
      const overWindow = (): boolean => tokens + maxOutputTokens > this.contextWindow;
      const breaker = { failuresInARow: this.#compactor.failuresInARow };
      if (shouldAutoCompact(tokens, this.contextWindow, this.settings, breaker) || (overWindow() && !compactionTripped(breaker, this.settings))) {
        let failure: unknown;
        try {
          await this.#compact({ trigger: 'auto', signal: options.signal });
        } catch (error) {
          failure = error;
        }
        tokens = this.#tokens();
        if (failure !== undefined && overWindow()) throw overflow(tokens, maxOutputTokens, this.contextWindow, failure);
      }
      if (overWindow()) throw overflow(tokens, maxOutputTokens, this.contextWindow, this.compactionState.tripped ? 'the compaction circuit breaker is open' : undefined);
      this.#warn(tokens);
      const contextEditing = contextEditingFor(this.settings);
      this.#sentMessageCount = this.#messages.length;
      this.#stats.requests += 1;
      return {
        system: this.system,
        tools: this.#definitions,
        // The latest message ends the cached prefix: the next request and forked helpers read it back.
        messages: withLastMessageCached(this.#wireMessages()),
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
    if (this.#messages.at(-1)?.role !== 'user') throw new EngramError('INVALID_INPUT', 'recordResponse answers a prepared request: the last message must be the user message or tool results that were sent.');
    const content = storedAssistantContent(response);
    const messageCount = Math.min(this.#sentMessageCount, this.#messages.length);
    const message = this.#append({ role: 'assistant', content, usage: { ...response.usage }, model: this.model.modelId });
    this.#reported = { tokens: totalInputTokens(response.usage), messageCount };
    const uses = content.filter((block): block is ToolUseBlock => block.type === 'tool_use');
    const tokens = this.#tokens();
    this.#warn(tokens);
    if (this.notes) {
      this.notes.noteTurn({ contextTokens: tokens, toolCalls: uses.length, hadToolCall: uses.length > 0 });
      if (this.notes.shouldUpdate()) {
        // A fork after an unanswered tool_use would be refused by the API: wait for the results.
        if (uses.length === 0) this.#startNotesUpdate();
        else this.#notesPending = true;
      }
    }
    return message;
  }

  /** Compacts now (`/compact [instructions]`): the fast path from the session notes, else a summary. */
  async compact(options: { trigger?: 'auto' | 'manual'; instructions?: string; signal?: AbortSignal } = {}): Promise<CompactionResult> {
    this.#checkOpen();
    if (this.#busy) throw new EngramError('CONFLICT', 'The session is already preparing a request or compacting; await it first.');
    this.#busy = true;
    try {
      return await this.#compact({ trigger: options.trigger ?? 'manual', instructions: options.instructions, signal: options.signal });
    } finally {
      this.#busy = false;
    }
  }

  /** Context usage now: the last reported input tokens plus an estimate of what was added since. */
  usage(): ContextUsage {
    return contextUsage({ reportedInputTokens: this.#reported?.tokens, estimatedSinceReport: this.#sinceReport(), window: this.contextWindow }, this.settings);
  }

  /** The prefix a forked helper shares (system, tools, messages as the next request sends them). */
  forkPrefix(): ForkPrefix {
    return { system: this.system, tools: this.#definitions, messages: this.#wireMessages() };
  }

  /** Replaces the todo list (the `todo_write` tool calls this); appended to the transcript. */
  setTodos(todos: readonly TodoItem[]): void {
    this.#checkOpen();
    this.#todos = checkTodos(todos);
    this.#transcript?.append({ kind: 'todos', todos: this.#todos.map((todo) => ({ ...todo })), timestamp: this.#now().toISOString() });
  }

  /** Sets the plan kept in the compact boundary and re-injected after compaction. */
  setPlan(plan: string | undefined): void {
    if (plan !== undefined && typeof plan !== 'string') throw new EngramError('INVALID_INPUT', 'A plan is text.');
    this.#plan = plan === '' ? undefined : plan;
  }

  /** Sets the title recorded in the transcript's metadata (shown by session listings). */
  setTitle(title: string): void {
    if (typeof title !== 'string' || title.length > 200) throw new EngramError('INVALID_INPUT', 'A session title is text of at most 200 characters.');
    this.#title = title;
  }

  /** Waits for a running session-notes update (the host calls this before showing /notes, or tests). */
  async waitForBackground(): Promise<void> {
    await this.#notesTask;
  }

  /**
   * Ends the session: waits for a running notes update (or aborts it with `abortBackground`),
   * re-appends the metadata and closes the transcript. Idempotent.
   */
  async close(options: { abortBackground?: boolean } = {}): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (options.abortBackground) this.notes?.abort();
    await this.#notesTask;
    if (this.#transcript) {
      if (this.#lastUuid !== null) this.#transcript.append({ kind: 'metadata', metadata: this.metadata(), timestamp: this.#now().toISOString() });
      await this.#transcript.close();
    }
  }

  /** Title, place and counts of the session, as the transcript's metadata line records them. */
  metadata(): SessionMetadata {
    const first = this.#messages[0];
    return {
      sessionId: this.sessionId,
      ...(this.#title !== undefined && { title: this.#title }),
      ...(this.cwd !== undefined && { cwd: this.cwd }),
      gitBranch: this.gitBranch,
      model: this.model.modelId,
      ...((this.#createdAt ?? first?.timestamp) !== undefined && { createdAt: this.#createdAt ?? first!.timestamp }),
      ...(this.#messages.length > 0 && { updatedAt: this.#messages.at(-1)!.timestamp }),
      messageCount: this.#messages.length,
    };
  }

  async #compact(input: { trigger: 'auto' | 'manual'; instructions?: string; signal?: AbortSignal }): Promise<CompactionResult> {
    if (this.#messages.length === 0) throw new EngramError('INVALID_INPUT', 'There is nothing to compact yet.');
    if (this.#pendingToolUses().length > 0) throw new EngramError('INVALID_INPUT', 'Answer the pending tool calls (addToolResults) before compacting.');
    const preTokens = this.#tokens();
    this.#events.emit('compaction-started', { trigger: input.trigger, preTokens });
    let result: CompactionResult;
    try {
      result = await this.#compactor.compact({
        trigger: input.trigger,
        messages: this.#messages,
        prefix: this.forkPrefix(),
        preTokens,
        ...(this.notes && { notes: this.notes }),
        reinject: { recentFiles: this.#recentFiles.slice(-5).reverse(), ...(this.#plan !== undefined && { plan: this.#plan }), todos: this.#todos.map((todo) => ({ ...todo })) },
        metadata: { filesEdited: [...this.#filesEdited], gitBranch: this.gitBranch },
        ...(input.instructions !== undefined && { customInstructions: input.instructions }),
        ...(input.signal && { signal: input.signal }),
        window: this.contextWindow,
        ...(this.#transcriptPath !== undefined && { transcriptPath: this.#transcriptPath }),
      });
    } catch (error) {
      const failuresInARow = this.#compactor.failuresInARow;
      this.#events.emit('compaction-failed', { trigger: input.trigger, error, failuresInARow, tripped: compactionTripped({ failuresInARow }, this.settings) });
      throw error;
    }
    this.#messages = [];
    this.#transcript?.append({ kind: 'compact-boundary', boundary: { ...result.boundary }, parentUuid: null });
    this.#lastUuid = result.boundary.uuid;
    for (const message of result.messages) this.#push(freezeMessage(message));
    // The cleared content is no longer in context: a re-read must return the file, not "unchanged".
    this.fileReadCache.clear();
    this.#reported = undefined;
    this.#sentMessageCount = 0;
    this.#warnedLevel = 0;
    this.#stats.compactions += 1;
    const postTokens = this.#tokens();
    this.notes?.noteCompaction({ contextTokens: postTokens });
    this.#events.emit('compaction-finished', { trigger: input.trigger, boundary: result.boundary, modelCalls: result.modelCalls, preTokens, postTokens, warnings: result.warnings });
    return result;
  }

  #microcompact(): void {
    const lastAssistant = this.#messages.findLastIndex((message) => message.role === 'assistant');
    if (lastAssistant < 0) return;
    const result = microcompact(this.#messages, {
      now: this.#now(),
      lastAssistantAt: new Date(this.#messages[lastAssistant]!.timestamp),
      idleMinutes: this.settings.session.microcompactIdleMinutes,
      keepRecent: this.settings.session.microcompactKeepRecent,
      protectFrom: lastAssistant + 1,
      // With server-side context editing the provider clears old results; locally only meta messages go.
      clearToolResults: this.settings.session.serverContextEditing !== true,
    });
    if (!result.changed) return;
    const tokensBefore = this.#tokens();
    this.#messages = result.messages.map(freezeMessage);
    this.fileReadCache.clear();
    this.#reported = undefined;
    this.#stats.microcompactions += 1;
    this.#events.emit('microcompaction-applied', { clearedToolResults: result.clearedToolResults, droppedMeta: result.droppedMeta, tokensBefore, tokensAfter: this.#tokens() });
  }

  #startNotesUpdate(): void {
    const notes = this.notes;
    const last = this.#messages.at(-1);
    if (!notes || !last || this.#closed) return;
    this.#notesPending = false;
    const lastMessageUuid = last.uuid;
    // update() returns at once: the helper runs in the background and never blocks the turn.
    void notes.update(this.forkPrefix(), lastMessageUuid);
    if (!notes.running) return;
    this.#stats.notesUpdates += 1;
    if (!this.#notesOwned) this.#events.emit('notes-update-started', { lastMessageUuid });
    this.#notesTask = notes.waitForIdle().then(() => {
      if (!this.#notesOwned) this.#events.emit('notes-update-finished', { lastMessageUuid });
    });
  }

  #buildNotes(config: SessionNotesConfig): SessionNotes {
    const relay = (event: SessionNotesEvent): void => {
      if (event.type === 'notes-update-failed') this.#events.emit('notes-update-failed', { lastMessageUuid: event.lastMessageUuid, error: event.error });
      else this.#events.emit(event.type, { lastMessageUuid: event.lastMessageUuid });
    };
    if (config === null || typeof config !== 'object') throw new EngramError('INVALID_INPUT', 'notes is a SessionNotes or { path, model?, template?, prompt? }.');
    return new SessionNotes({ ...config, model: config.model ?? this.model, settings: this.settings, onEvent: relay, now: this.#now, generateId: this.#generateId, sessionId: this.sessionId });
  }

  #warn(tokens: number): void {
    const usage = contextUsage({ reportedInputTokens: tokens, estimatedSinceReport: 0, window: this.contextWindow }, this.settings);
    if (usage.level > this.#warnedLevel) {
      this.#warnedLevel = usage.level;
      this.#events.emit('context-warning', { level: usage.level as 1 | 2 | 3, usage });
    }
  }

  /** Estimated tokens of the next request's input (without output). */
  #tokens(): number {
    return (this.#reported?.tokens ?? 0) + this.#sinceReport();
  }

  /** Estimated tokens added since the last report (everything, system and tools included, when there is none). */
  #sinceReport(): number {
    let total = 0;
    for (let index = this.#reported?.messageCount ?? 0; index < this.#messages.length; index += 1) total += this.#estimate(this.#messages[index]!);
    return total + (this.#reported === undefined ? this.#baseTokens : 0);
  }

  #estimate(message: SessionMessage): number {
    let tokens = this.#estimates.get(message);
    if (tokens === undefined) this.#estimates.set(message, (tokens = estimateMessageTokens(message, this.settings)));
    return tokens;
  }

  #wireMessages(): LanguageModelMessage[] {
    return this.#messages.map((message) => ({ role: message.role, content: message.content }));
  }

  #append(fields: Pick<SessionMessage, 'role' | 'content'> & Partial<SessionMessage>): SessionMessage {
    const message = freezeMessage({ uuid: this.#generateId(), timestamp: this.#now().toISOString(), ...fields });
    this.#push(message);
    return message;
  }

  #push(message: SessionMessage): void {
    this.#messages.push(message);
    this.#transcript?.append({ kind: 'message', message, parentUuid: this.#lastUuid });
    this.#lastUuid = message.uuid;
    this.#createdAt ??= message.timestamp;
    this.#events.emit('message-added', { message });
  }

  #noteFileRead(file: { path: string; content: string }): void {
    if (typeof file?.path !== 'string' || typeof file.content !== 'string') return;
    this.#recentFiles = this.#recentFiles.filter((entry) => entry.path !== file.path);
    this.#recentFiles.push({ path: file.path, content: file.content });
    if (this.#recentFiles.length > RECENT_FILES_KEPT) this.#recentFiles.shift();
  }

  /** Answers tool calls a killed process left open, so the resumed conversation is valid again. */
  #answerInterrupted(): void {
    this.#interruptedToolUses = false;
    const pending = this.#pendingToolUses();
    if (pending.length === 0) return;
    this.#append({ role: 'user', content: pending.map((use): ToolResultBlock => ({ type: 'tool_result', toolUseId: use.id, content: INTERRUPTED_TOOL_RESULT, isError: true })) });
  }

  #pendingToolUses(): ToolUseBlock[] {
    const last = this.#messages.at(-1);
    if (!last || last.role !== 'assistant' || typeof last.content === 'string') return [];
    return last.content.filter((block): block is ToolUseBlock => block.type === 'tool_use');
  }

  #checkNoPendingToolUse(what: string): void {
    if (this.#pendingToolUses().length > 0) throw new EngramError('INVALID_INPUT', `${what}: the last assistant message called tools; answer them with addToolResults first.`);
  }

  #checkOpen(): void {
    if (this.#closed) throw new EngramError('INVALID_INPUT', 'This session is closed; open or resume a session to continue.');
  }
}

function systemBlocks(system: SessionOptions['system']): readonly SystemBlock[] {
  if (system === undefined || system === '') return Object.freeze([]);
  if (typeof system === 'string') return Object.freeze([Object.freeze({ text: system, cache: true })]);
  if (!Array.isArray(system) || system.some((block) => block === null || typeof block !== 'object' || typeof block.text !== 'string')) {
    throw new EngramError('INVALID_INPUT', 'system is a string or an array of { text, cache? } blocks.');
  }
  return Object.freeze(system.map((block) => Object.freeze({ ...block })));
}

function overflow(tokens: number, maxOutputTokens: number, window: number, cause: unknown): EngramError {
  const reason = cause === undefined ? '' : ` (auto-compaction: ${cause instanceof Error ? cause.message : String(cause)})`;
  return new EngramError(
    'CONTEXT_WINDOW_EXCEEDED',
    `The next request would need about ${tokens} input + ${maxOutputTokens} output tokens, over the ${window}-token context window${reason}. Run a manual compaction (/compact), lower maxOutputTokens, or start a new session.`,
    cause instanceof Error ? { cause } : undefined,
  );
}

/** A deterministic cut (same input → same bytes) at a UTF-8 boundary, with a note of what was left out. */
function cutToBytes(text: string, limit: number): string {
  const buffer = Buffer.from(text, 'utf8');
  const kept = buffer.subarray(0, limit).toString('utf8').replace(/\uFFFD$/, '');
  return `${kept}\n[Output cut at ${limit} of ${buffer.length} bytes: no tool-result storage is configured.]`;
}
