import type { InstructionSet } from '../../instructions/instruction-format.js';
import { loadInstructions } from '../../instructions/node/instruction-files.js';
import { findGitRoot } from '../../kernel/node/git-root.js';
import { listSessions, type SessionSummary } from '../../session/node/session-listing.js';
import type { ContextUsage } from '../../session/context-budget.js';
import { EngramError, isEngramError } from '../../kernel/errors.js';
import { warningNotes } from '../../recall/warning-notes.js';
import type { Engram } from '../../engram.js';
import type { Extractor } from '../../extraction/extractor.js';
import type { WrittenMemory } from '../../extraction/extraction-report.js';
import { findForgetTarget, type ForgetCandidate } from '../../remember/explicit-memory-writes.js';
import type { SystemBlock, ToolUseBlock } from '../../contracts/language-model.js';
import type { MemoryInjection, MemoryTurnEvent } from '../../agent/memory-injection.js';
import { MemoryTurn } from '../../agent/memory-turn.js';
import type { CompactionResult } from '../../session/compaction/compaction-result.js';
import type { OpenedSession } from '../../node/session-open.js';
import type { Session } from '../../session/session.js';
import { ChatPathRules } from './chat-path-rules.js';
import { CHAT_SYSTEM_PROMPT, openChatSession, systemPrompt } from './chat-session-setup.js';
import { createExtractor } from '../../node/create-extractor.js';
import type {
  ChatAgentOptions,
  ChatForgetResult,
  ChatMemoryReport,
  ChatNotice,
  ChatTurnResult,
} from './chat-agent-types.js';
import { attachSessionNotices } from './chat-session-notices.js';

export { CHAT_SYSTEM_PROMPT };

/**
 * The reference agent of SPEC §6: one chat over a Session that uses every layer. The memory turn
 * (src/agent/memory-turn.ts) recalls for each message, injects the block as the turn's context
 * (never the system prompt, which stays byte-stable: chat rules, instruction files, the MEMORY.md
 * index), runs the agent loop and queues extraction; the chat adds its path-scoped rules, the
 * project tools, the slash commands and the notices. Tool-result storage, microcompaction, session
 * notes, compaction and the transcript come with the Session.
 */
export class ChatAgent {
  readonly engram: Engram;
  readonly projectRoot: string;
  readonly #options: ChatAgentOptions;
  readonly #instructions: InstructionSet;
  readonly #system: SystemBlock[];
  readonly #extractor: Extractor | undefined;
  /** Recall, injection and extraction queueing; its surfaced set holds what is in the context now. */
  readonly #memoryTurn: MemoryTurn;
  readonly #recalled = new Map<string, { id: string; name: string; turns: number }>();
  readonly #stored: WrittenMemory[] = [];
  readonly #rules: ChatPathRules;
  readonly #warned = new Set<string>();
  #opened: OpenedSession;
  #detach: Array<() => void> = [];
  #closed = false;

  private constructor(parts: {
    options: ChatAgentOptions;
    projectRoot: string;
    instructions: InstructionSet;
    system: SystemBlock[];
    opened: OpenedSession;
    memoryTurn: MemoryTurn;
    extractor: Extractor | undefined;
  }) {
    this.#options = parts.options;
    this.engram = parts.options.engram;
    this.projectRoot = parts.projectRoot;
    this.#instructions = parts.instructions;
    this.#rules = new ChatPathRules(parts.instructions);
    this.#system = parts.system;
    this.#opened = parts.opened;
    this.#memoryTurn = parts.memoryTurn;
    this.#extractor = parts.extractor;
    this.#attach();
  }

  /** Loads the instructions and the memory index, and opens (or resumes) the session. */
  static async open(options: ChatAgentOptions): Promise<ChatAgent> {
    if (options === null || typeof options !== 'object' || !options.engram || !options.model)
      throw new EngramError(
        'INVALID_INPUT',
        'ChatAgent.open takes { engram, model, cwd, engramHome, userHome, confirm }.',
      );
    const projectRoot = findGitRoot(options.cwd) ?? options.cwd;
    const settings = options.engram.settings;
    const instructions = await loadInstructions({
      cwd: options.cwd,
      home: options.userHome,
      projectRoot,
      settings,
      ...(options.managedInstructionsPath !== undefined && { managedPath: options.managedInstructionsPath }),
    });
    // The extractor and the memory turn report to the agent, which exists once the session is open.
    let agent: ChatAgent | undefined;
    const sideModel = options.sideModel ?? options.engram.model;
    const extractor =
      options.extraction === false
        ? undefined
        : createExtractor({
            engram: options.engram,
            ...(sideModel && { model: sideModel }),
            projectRoot,
            ...(options.now && { now: options.now }),
            onOutcome: (outcome) => agent && agent.#noteOutcome(outcome),
            onWarning: (warning) => agent && agent.#notice('extraction', warning),
          });
    const memoryTurn = new MemoryTurn({
      engram: options.engram,
      ...(extractor && { extractor }),
      // Unset, the memory turn picks with the engram's own model, as sideModel's fallback does here.
      ...(options.sideModel && { selectionModel: options.sideModel }),
      // A person at the terminal waits for the LLM retriever as long as its own timeout allows.
      recallTimeoutMs: Math.max(settings.recall.timeCapMs, settings.recall.llmTimeoutMs),
      onEvent: (event) => agent && agent.#memoryEvent(event),
    });
    const system = systemPrompt(await memoryTurn.staticPart(), instructions);
    const opened = await openChatSession(options, projectRoot, system);
    agent = new ChatAgent({ options, projectRoot, instructions, system, opened, memoryTurn, extractor });
    // A refused import (a secret, a file outside the project) must not go unnoticed.
    const problems = instructions.warnings.length;
    if (problems > 0)
      agent.#notice(
        'warning',
        `instruction files: ${problems} problem${problems === 1 ? '' : 's'} (refused imports, skipped files); /memory lists them`,
      );
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
  async turn(
    text: string,
    options: {
      onTextDelta?: (text: string) => void;
      onToolCall?: (call: ToolUseBlock) => void;
      signal?: AbortSignal;
    } = {},
  ): Promise<ChatTurnResult> {
    this.#checkOpen();
    const rules = this.#rules.newlyActive(this.session, text);
    const {
      injection,
      extraction: _queued,
      ...result
    } = await this.#memoryTurn.run(this.session, {
      content: text,
      ...(rules !== '' && { context: rules }),
      ...(options.onTextDelta && { onTextDelta: options.onTextDelta }),
      ...(options.onToolCall && { onToolCall: options.onToolCall }),
      ...(options.signal && { signal: options.signal }),
    });
    return { ...result, recalled: this.#noteInjection(injection) };
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
    const active = this.#rules.activePaths();
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
    if (wanted === '')
      throw new EngramError(
        'INVALID_INPUT',
        'Say what to forget: /forget <memory id> or /forget <words of the memory>.',
      );
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
    // The last turn's extraction is queued before the worker stops: a job in the store survives the exit.
    await this.#memoryTurn.flush();
    await this.#extractor?.stop();
  }

  async #closeSession(): Promise<void> {
    for (const detach of this.#detach.splice(0)) detach();
    await this.session.close({ abortBackground: true });
  }

  /** What /memory lists of a turn's injection; a degraded capability (full-text recall only) is said once, not every turn. */
  #noteInjection(injection: MemoryInjection): Array<{ id: string; name: string }> {
    // Said by the memory event, with its reason.
    const told = injection.warnings.filter(
      (warning) => warning !== 'recall-failed' && warning !== 'recall-timed-out' && warning !== 'recall-aborted',
    );
    // No embedder configured: full-text recall is the configuration, not a degradation (not said).
    for (const note of warningNotes(told, { embedderConfigured: this.engram.embedder !== undefined })) {
      this.#noticeOnce('warning', note);
    }
    const recalled = injection.memories.map((entry) => ({ id: entry.memory.id, name: entry.memory.name }));
    for (const memory of recalled) {
      const known = this.#recalled.get(memory.id);
      this.#recalled.set(memory.id, { ...memory, turns: (known?.turns ?? 0) + 1 });
    }
    return recalled;
  }

  #memoryEvent(event: MemoryTurnEvent): void {
    // Extraction is for later turns and recall fails open: their failures are reported, never the turn's.
    if (event.type === 'extraction-failed') {
      this.#notice('extraction', `extraction was not queued: ${event.error.message}`);
    } else if (event.type === 'recall-failed') {
      this.#notice(
        'warning',
        `memory recall failed (${event.error.code}: ${event.error.message}); this message went without memory`,
      );
    } else if (event.type === 'recall-timed-out' && event.kept === 0) {
      this.#notice('warning', `memory recall took over ${event.timeoutMs} ms; this message went without memory`);
    }
  }

  #attach(): void {
    this.#detach = attachSessionNotices(this.session, {
      notice: (kind, text) => this.#notice(kind, text),
      noticeOnce: (kind, text) => this.#noticeOnce(kind, text),
      contextDropped: () => this.#contextDropped(),
    });
  }

  /**
   * The turn context (rules, recalled memories) went with a compaction or a microcompaction's dropped
   * meta messages: the next turn injects what still applies again, so no standing rule is lost.
   */
  #contextDropped(): void {
    this.#rules.contextDropped();
    this.#memoryTurn.forgetSurfaced();
  }

  #noteOutcome(outcome: Parameters<NonNullable<ConstructorParameters<typeof Extractor>[0]['onOutcome']>>[0]): void {
    if (outcome.state !== 'done') {
      if (outcome.state === 'failed') this.#notice('extraction', `extraction failed: ${outcome.error}`);
      return;
    }
    for (const written of outcome.report.written) this.#stored.push(written);
    const created = outcome.report.written.filter((memory) => memory.action !== 'archived');
    if (created.length > 0)
      this.#notice('extraction', `remembered: ${created.map((memory) => memory.name).join(', ')}`);
  }

  #notice(kind: ChatNotice['kind'], text: string): void {
    try {
      this.#options.onNotice?.({ kind, text });
    } catch {
      // A broken display must not break the chat.
    }
  }

  /** A problem each later message would repeat (a degraded capability, a failing transcript) is said once per chat. */
  #noticeOnce(kind: ChatNotice['kind'], text: string): void {
    if (this.#warned.has(text)) return;
    this.#warned.add(text);
    this.#notice(kind, text);
  }

  #checkOpen(): void {
    if (this.#closed) throw new EngramError('INVALID_INPUT', 'This chat is closed.');
  }
}
