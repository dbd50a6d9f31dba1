import { activeInstructions, formatInstructions, loadInstructions, type InstructionFile, type InstructionSet } from '../../instructions/node/instruction-files.js';
import { findGitRoot } from '../../node/project-identity.js';
import { listSessions, type SessionSummary } from '../../session/node/session-listing.js';
import type { ContextUsage } from '../../session/context-budget.js';
import { EngramError, isEngramError } from '../../kernel/errors.js';
import type { Engram } from '../../engram.js';
import type { Extractor } from '../../extraction/extractor.js';
import type { WrittenMemory } from '../../extraction/extraction-report.js';
import { findForgetTarget, type ForgetCandidate } from '../../remember/explicit-memory-writes.js';
import type { LanguageModel, SystemBlock, ToolUseBlock } from '../../contracts/language-model.js';
import { runAgentTurn, type AgentTurnResult } from '../../agent/agent-turn.js';
import type { CompactionResult } from '../../session/compaction/compaction.js';
import type { OpenedSession } from '../../node/session-open.js';
import type { Session } from '../../session/session.js';
import { sessionConversation } from './chat-conversation.js';
import { CHAT_SYSTEM_PROMPT, openChatSession, systemPrompt } from './chat-session-setup.js';
import { createExtractor } from '../../node/create-extractor.js';

export { CHAT_SYSTEM_PROMPT };

/** What the reference chat agent is built from; `ChatAgent.open` does the I/O. */
export interface ChatAgentOptions {
  /** Long-term memory (opened by the caller: `openEngram`). */
  engram: Engram;
  /** The model the conversation goes to. */
  model: LanguageModel;
  /** The cheap model for recall selection and extraction; default `engram.model`; none: ranked recall and explicit statements only. */
  sideModel?: LanguageModel;
  /** The working directory: the project root is its git root, else itself. */
  cwd: string;
  /** Sessions live under `<engramHome>/projects/<slug>/`. */
  engramHome: string;
  /** The user's home (for `~/.claude/CLAUDE.md` and rules). */
  userHome: string;
  /** Continue a session: its id, or the project's latest. */
  resume?: { sessionId: string } | { latest: true };
  /** Asks the user before a file is written. */
  confirm: (question: string) => Promise<boolean>;
  /** Told of what happens in the background: compactions, warnings, notes updates, extraction. */
  onNotice?: (notice: ChatNotice) => void;
  /** Queue extraction after each turn (default true). */
  extraction?: boolean;
  /** The managed instruction file (default the setting). */
  managedInstructionsPath?: string;
  now?: () => Date;
}

/** Something the terminal may show between turns. */
export interface ChatNotice {
  kind: 'compaction' | 'context-warning' | 'notes' | 'tool-result' | 'extraction' | 'transcript' | 'warning';
  text: string;
}

/** What one turn did, for the terminal. */
export interface ChatTurnResult extends AgentTurnResult {
  /** Memories injected this turn. */
  recalled: Array<{ id: string; name: string }>;
}

/** What /memory shows. */
export interface ChatMemoryReport {
  instructions: Array<{ path: string; scope: string; lines: number; bytes: number; paths?: string[]; active: boolean }>;
  instructionWarnings: string[];
  recalled: Array<{ id: string; name: string; turns: number }>;
  stored: WrittenMemory[];
  scopes: readonly string[];
}

/** How /forget ended. */
export type ChatForgetResult = { status: 'archived'; id: string; name: string } | { status: 'no-match' | 'ambiguous'; candidates: ForgetCandidate[] };

/**
 * The reference agent of SPEC §6: one chat over a Session that uses every layer. Per turn it
 * recalls memories for the message and injects them as the turn's context (never the system
 * prompt, which stays byte-stable: chat rules, instruction files, the MEMORY.md index), runs the
 * agent loop with the project tools, and queues extraction. Tool-result storage,
 * microcompaction, session notes, compaction and the transcript come with the Session.
 */
export class ChatAgent {
  readonly engram: Engram;
  readonly projectRoot: string;
  readonly #options: ChatAgentOptions;
  readonly #instructions: InstructionSet;
  readonly #system: SystemBlock[];
  readonly #extractor: Extractor | undefined;
  readonly #recalled = new Map<string, { id: string; name: string; turns: number }>();
  /** Memories whose text is in the context now: not recalled again until a compaction drops them. */
  readonly #surfaced = new Set<string>();
  readonly #stored: WrittenMemory[] = [];
  readonly #activeRules = new Set<string>();
  /** Path-scoped rules whose text is in the context now (in a meta message), by file path. */
  readonly #injectedRules = new Set<string>();
  readonly #warned = new Set<string>();
  #opened: OpenedSession;
  #detach: Array<() => void> = [];
  #closed = false;

  private constructor(options: ChatAgentOptions, projectRoot: string, instructions: InstructionSet, system: SystemBlock[], opened: OpenedSession) {
    this.#options = options;
    this.engram = options.engram;
    this.projectRoot = projectRoot;
    this.#instructions = instructions;
    this.#system = system;
    this.#opened = opened;
    const sideModel = options.sideModel ?? options.engram.model;
    this.#extractor =
      options.extraction === false
        ? undefined
        : createExtractor({
            engram: options.engram,
            ...(sideModel && { model: sideModel }),
            projectRoot,
            ...(options.now && { now: options.now }),
            onOutcome: (outcome) => this.#noteOutcome(outcome),
            onWarning: (warning) => this.#notice('extraction', warning),
          });
    this.#attach();
  }

  /** Loads the instructions and the memory index, and opens (or resumes) the session. */
  static async open(options: ChatAgentOptions): Promise<ChatAgent> {
    if (options === null || typeof options !== 'object' || !options.engram || !options.model) throw new EngramError('INVALID_INPUT', 'ChatAgent.open takes { engram, model, cwd, engramHome, userHome, confirm }.');
    const projectRoot = findGitRoot(options.cwd) ?? options.cwd;
    const settings = options.engram.settings;
    const instructions = await loadInstructions({
      cwd: options.cwd,
      home: options.userHome,
      projectRoot,
      settings,
      ...(options.managedInstructionsPath !== undefined && { managedPath: options.managedInstructionsPath }),
    });
    const system = await systemPrompt(options.engram, instructions);
    const opened = await openChatSession(options, projectRoot, system);
    const agent = new ChatAgent(options, projectRoot, instructions, system, opened);
    // A refused import (a secret, a file outside the project) must not go unnoticed.
    const problems = instructions.warnings.length;
    if (problems > 0) agent.#notice('warning', `instruction files: ${problems} problem${problems === 1 ? '' : 's'} (refused imports, skipped files); /memory lists them`);
    return agent;
  }

  get session(): Session {
    return this.#opened.session;
  }

  get sessionId(): string {
    return this.#opened.session.sessionId;
  }

  /** The transcript file of the current session. */
  get transcriptPath(): string {
    return this.#opened.paths.transcript;
  }

  /** Context usage now (tokens, window, ratio, warning level). */
  usage(): ContextUsage {
    return this.session.usage();
  }

  /**
   * One turn: recall for the message (ranked, plus the side model's picks when one is set), the
   * memory block and newly active path-scoped rules injected as the turn's context, the agent loop,
   * then extraction queued. An abort (Ctrl-C) rejects with MODEL_ABORTED; the session goes on.
   */
  async turn(text: string, options: { onTextDelta?: (text: string) => void; onToolCall?: (call: ToolUseBlock) => void; signal?: AbortSignal } = {}): Promise<ChatTurnResult> {
    this.#checkOpen();
    const session = this.session;
    const context = await this.engram.buildMemoryContext(text, {
      surfaced: new Set(this.#surfaced),
      includeStaticPart: false,
      ...(options.signal && { signal: options.signal }),
    });
    // A degraded capability (no embedder: full-text recall) is said once, not every turn.
    for (const warning of context.warnings) {
      if (this.#warned.has(warning)) continue;
      this.#warned.add(warning);
      this.#notice('warning', warning === 'vector-search-unavailable' ? 'recall is full-text only (no embedder configured)' : warning);
    }
    const recalled = context.included.map((entry) => ({ id: entry.memory.id, name: entry.memory.name }));
    for (const memory of recalled) {
      this.#surfaced.add(memory.id);
      const known = this.#recalled.get(memory.id);
      this.#recalled.set(memory.id, { ...memory, turns: (known?.turns ?? 0) + 1 });
    }
    const injected = [context.block, this.#newlyActiveRules(text)].filter((part) => part !== '').join('\n\n');
    const result = await runAgentTurn(session, {
      content: text,
      ...(injected !== '' && { context: injected }),
      ...(options.onTextDelta && { onTextDelta: options.onTextDelta }),
      ...(options.onToolCall && { onToolCall: options.onToolCall }),
      ...(options.signal && { signal: options.signal }),
    });
    await this.#extract(recalled);
    return { ...result, recalled };
  }

  /** `/compact [instructions]`. */
  async compact(instructions?: string): Promise<CompactionResult> {
    this.#checkOpen();
    return this.session.compact({ trigger: 'manual', ...(instructions && { instructions }) });
  }

  /** `/notes`: the session notes as they are now (after a running update finishes). */
  async notes(): Promise<string> {
    this.#checkOpen();
    if (!this.session.notes) return '';
    await this.session.waitForBackground();
    // The empty template is no notes at all.
    return (await this.session.notes.hasContent()) ? this.session.notes.read() : '';
  }

  /** `/memory`: instruction files, memories recalled this session, memories extraction stored. */
  memoryReport(): ChatMemoryReport {
    const active = new Set(activeInstructions(this.#instructions, [...this.#activeRules]).map((file) => file.path));
    return {
      instructions: this.#instructions.files.map((file) => ({
        path: file.path,
        scope: file.scope,
        lines: file.content === '' ? 0 : file.content.replace(/\n$/, '').split('\n').length,
        bytes: Buffer.byteLength(file.content),
        ...(file.paths && { paths: file.paths }),
        active: file.paths === undefined || active.has(file.path),
      })),
      instructionWarnings: [...this.#instructions.warnings],
      recalled: [...this.#recalled.values()],
      stored: [...this.#stored],
      scopes: this.engram.readScopes,
    };
  }

  /** `/resume`: this project's sessions, newest first. */
  async listSessions(): Promise<SessionSummary[]> {
    return listSessions({ projectDirectory: this.#opened.paths.projectDirectory });
  }

  /** `/resume <id>`: ends the current session (transcript flushed) and continues another of this project. */
  async switchTo(sessionId: string): Promise<void> {
    this.#checkOpen();
    if (sessionId === this.sessionId) return;
    const next = await openChatSession({ ...this.#options, resume: { sessionId } }, this.projectRoot, this.#system);
    await this.#closeSession();
    this.#opened = next;
    // The other conversation never held this one's turn context.
    this.#contextDropped();
    this.#attach();
  }

  /** `/forget <id|text>`: archives the memory with that id, or the one memory that clearly matches the text. */
  async forget(target: string): Promise<ChatForgetResult> {
    this.#checkOpen();
    const wanted = target.trim();
    if (wanted === '') throw new EngramError('INVALID_INPUT', 'Say what to forget: /forget <memory id> or /forget <words of the memory>.');
    const byId = await this.engram.get(wanted).catch((error: unknown) => {
      if (isEngramError(error) && (error.code === 'NOT_FOUND' || error.code === 'INVALID_INPUT')) return undefined;
      throw error;
    });
    if (byId) {
      await this.engram.forget(byId.id, { actor: 'engram-chat' });
      return { status: 'archived', id: byId.id, name: byId.name };
    }
    const candidates: ForgetCandidate[] = [];
    for (const scope of this.engram.readScopes) {
      const found = await findForgetTarget(this.engram, wanted, scope);
      if (found.status === 'match') {
        await this.engram.forget(found.memory.id, { actor: 'engram-chat', scopes: [scope] });
        return { status: 'archived', id: found.memory.id, name: found.memory.name };
      }
      if (found.status === 'ambiguous') return { status: 'ambiguous', candidates: found.candidates };
      candidates.push(...found.candidates);
    }
    return { status: 'no-match', candidates: candidates.slice(0, 5) };
  }

  /** Ends the chat: the transcript flushed and closed, background notes awaited, extraction stopped. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#closeSession();
    await this.#extractor?.stop();
  }

  async #closeSession(): Promise<void> {
    for (const detach of this.#detach.splice(0)) detach();
    await this.session.close({ abortBackground: true });
  }

  async #extract(recalled: ReadonlyArray<{ id: string }>): Promise<void> {
    if (!this.#extractor) return;
    try {
      await this.#extractor.afterTurn(sessionConversation(this.sessionId, this.session.messages), { recalled });
    } catch (error) {
      // Extraction is for later turns: its failure is reported, never the turn's.
      this.#notice('extraction', `extraction was not queued: ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  /**
   * Path-scoped rules that apply now (a file they match was read, edited or named this session) and
   * are not in the context: never injected, or dropped since by a compaction.
   */
  #newlyActiveRules(text: string): string {
    const working = [...this.session.filesEdited, ...recentReadPaths(this.session), ...mentionedPaths(text)];
    for (const path of working) this.#activeRules.add(path);
    const fresh: InstructionFile[] = [];
    for (const file of activeInstructions(this.#instructions, [...this.#activeRules])) {
      if (file.paths === undefined || this.#injectedRules.has(file.path)) continue;
      this.#injectedRules.add(file.path);
      fresh.push(file);
    }
    return fresh.length === 0 ? '' : formatInstructions(fresh);
  }

  #attach(): void {
    const session = this.session;
    this.#detach = [
      session.on('context-warning', ({ level, usage }) => this.#notice('context-warning', `context ${Math.round(usage.ratio * 100)}% full (warning ${level} of 3); /compact frees room`)),
      session.on('compaction-started', ({ trigger }) => this.#notice('compaction', `compacting the conversation (${trigger})…`)),
      session.on('compaction-finished', ({ boundary, modelCalls, preTokens, postTokens }) => {
        this.#contextDropped();
        this.#notice('compaction', `compacted ${preTokens} → ${postTokens} tokens from ${boundary.method === 'notes' ? 'the session notes' : 'a summary'} (${modelCalls} model call${modelCalls === 1 ? '' : 's'})`);
      }),
      session.on('microcompaction-applied', ({ droppedMeta }) => {
        if (droppedMeta > 0) this.#contextDropped();
      }),
      session.on('compaction-failed', ({ error, tripped }) => this.#notice('compaction', `compaction failed: ${error instanceof Error ? error.message : String(error)}${tripped ? ' (automatic compaction is now off)' : ''}`)),
      session.on('tool-result-persisted', ({ path, bytes }) => this.#notice('tool-result', `a ${bytes}-byte tool result was saved to ${path}`)),
      session.on('transcript-error', ({ error, path }) => {
        // Each later message retries and fails alike until the cause is fixed: the same problem is said once.
        const text = `the transcript${path === undefined ? '' : ` ${path}`} could not be written (${error instanceof Error ? error.message : String(error)}); the chat goes on and the lines are retried with each message`;
        if (this.#warned.has(text)) return;
        this.#warned.add(text);
        this.#notice('transcript', text);
      }),
      session.on('notes-update-failed', ({ error }) => this.#notice('notes', `session notes update failed: ${error instanceof Error ? error.message : String(error)}`)),
    ];
  }

  /**
   * The turn context (rules, recalled memories) went with a compaction or a microcompaction's dropped
   * meta messages: the next turn injects what still applies again, so no standing rule is lost.
   */
  #contextDropped(): void {
    this.#injectedRules.clear();
    this.#surfaced.clear();
  }

  #noteOutcome(outcome: Parameters<NonNullable<ConstructorParameters<typeof Extractor>[0]['onOutcome']>>[0]): void {
    if (outcome.state !== 'done') {
      if (outcome.state === 'failed') this.#notice('extraction', `extraction failed: ${outcome.error}`);
      return;
    }
    for (const written of outcome.report.written) this.#stored.push(written);
    const created = outcome.report.written.filter((memory) => memory.action !== 'archived');
    if (created.length > 0) this.#notice('extraction', `remembered: ${created.map((memory) => memory.name).join(', ')}`);
  }

  #notice(kind: ChatNotice['kind'], text: string): void {
    try {
      this.#options.onNotice?.({ kind, text });
    } catch {
      // A broken display must not break the chat.
    }
  }

  #checkOpen(): void {
    if (this.#closed) throw new EngramError('INVALID_INPUT', 'This chat is closed.');
  }
}

/** Files the session read lately (from its tool calls), for path-scoped rules. */
function recentReadPaths(session: Session): string[] {
  const paths: string[] = [];
  for (const message of session.messages.slice(-20)) {
    if (message.role !== 'assistant' || typeof message.content === 'string') continue;
    for (const block of message.content) {
      const path = block.type === 'tool_use' ? block.input.path : undefined;
      if (typeof path === 'string' && path.length < 1_000) paths.push(path);
    }
  }
  return paths;
}

/** Words of a message that look like project paths (`src/a.ts`), so a rule for them applies from the first turn. */
function mentionedPaths(text: string): string[] {
  return [...text.slice(0, 10_000).matchAll(/(?:^|\s)([\w.-]+(?:\/[\w.-]+)*\.\w{1,8})(?=$|[\s,;:!?)])/g)].map((match) => match[1]!).slice(0, 50);
}
