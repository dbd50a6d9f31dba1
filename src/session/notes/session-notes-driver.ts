import { shouldAutoCompact, type CompactionBreakerState } from '../compaction/compaction-policy.js';
import { EngramError } from '../../kernel/errors.js';
import type { Settings } from '../../kernel/settings.js';
import type { LanguageModel } from '../../contracts/language-model.js';
import type { ForkPrefix } from '../forked-helper.js';
import type { SessionEvents } from '../session-events.js';
import { SessionNotes, type SessionNotesEvent, type SessionNotesOptions } from './session-notes.js';

/** Session notes the Session builds: the file, and optionally a helper model, template, prompt and sidechain transcripts. */
export type SessionNotesConfig = Omit<
  SessionNotesOptions,
  'settings' | 'onEvent' | 'model' | 'now' | 'generateId' | 'sessionId'
> & { model?: LanguageModel };

/** What the driver reads of its session when an update may start. */
export interface NotesDriverContext {
  /** The request prefix a helper repeats (built only when an update starts). */
  prefix: () => ForkPrefix;
  /** The session's context now (tokens of the next request's input). */
  tokens: number;
  lastMessageUuid: string;
  breaker: CompactionBreakerState;
}

/**
 * Drives layer 3 for a Session: feeds the notes trigger each turn, starts an update in the
 * background when it fires (after the tool results, when the turn called tools: a fork after an
 * unanswered tool_use would be refused), relays the notes' events, and never sends an update that
 * would not fit: when the context is past the compaction threshold the update waits (the next
 * request compacts first), and the notes refuse a request whose input + output cap exceeds the window.
 */
export class SessionNotesDriver {
  readonly notes: SessionNotes | undefined;
  /** Updates started. */
  updates = 0;
  readonly #owned: boolean;
  readonly #events: SessionEvents;
  readonly #settings: Settings;
  readonly #window: number;
  #pending = false;
  #task: Promise<void> | undefined;

  constructor(options: {
    notes: SessionNotes | SessionNotesConfig | undefined;
    events: SessionEvents;
    settings: Settings;
    window: number;
    model: LanguageModel;
    sessionId: string;
    now: () => Date;
    generateId: () => string;
  }) {
    this.#events = options.events;
    this.#settings = options.settings;
    this.#window = options.window;
    this.#owned = options.notes !== undefined && !(options.notes instanceof SessionNotes);
    this.notes =
      options.notes === undefined || options.notes instanceof SessionNotes
        ? options.notes
        : this.#build(options.notes, options);
  }

  /** After a model turn: records it and starts an update now, or after the tool results when the turn called tools. */
  afterResponse(input: { toolCalls: number }, context: NotesDriverContext): void {
    if (!this.notes) return;
    this.notes.noteTurn({
      contextTokens: context.tokens,
      toolCalls: input.toolCalls,
      hadToolCall: input.toolCalls > 0,
    });
    if (!this.notes.shouldUpdate()) return;
    if (input.toolCalls === 0) this.#start(context);
    else this.#pending = true;
  }

  /** After the tool results of a turn: starts the update the turn's response asked for. */
  afterToolResults(context: NotesDriverContext): void {
    if (this.#pending) this.#start(context);
  }

  /** After a compaction the context is small again: growth is counted from its new size. */
  afterCompaction(tokens: number): void {
    this.notes?.noteCompaction({ contextTokens: tokens });
  }

  /** Resolves when the running update (if any) is done. */
  async waitForBackground(): Promise<void> {
    await this.#task;
  }

  /** Aborts the running update (the session is closing and will not wait). */
  abort(): void {
    this.notes?.abort();
  }

  #start(context: NotesDriverContext): void {
    const notes = this.notes!;
    this.#pending = false;
    // Past the threshold the next request compacts first (from the notes as they are); an update now
    // would send the whole oversized context again.
    if (shouldAutoCompact(context.tokens, this.#window, this.#settings, context.breaker)) return;
    const lastMessageUuid = context.lastMessageUuid;
    // update() returns at once: the helper runs in the background and never blocks the turn.
    void notes.update(context.prefix(), {
      lastMessageUuid,
      budget: { contextTokens: context.tokens, window: this.#window },
    });
    if (!notes.running) return;
    this.updates += 1;
    if (!this.#owned) this.#events.emit('notes-update-started', { lastMessageUuid });
    this.#task = notes.waitForIdle().then(() => {
      if (!this.#owned) this.#events.emit('notes-update-finished', { lastMessageUuid });
    });
  }

  #build(
    config: SessionNotesConfig,
    options: { model: LanguageModel; sessionId: string; now: () => Date; generateId: () => string },
  ): SessionNotes {
    if (config === null || typeof config !== 'object')
      throw new EngramError('INVALID_INPUT', 'notes is a SessionNotes or { path, model?, template?, prompt? }.');
    const relay = (event: SessionNotesEvent): void => {
      if (event.type === 'notes-update-failed')
        this.#events.emit('notes-update-failed', { lastMessageUuid: event.lastMessageUuid, error: event.error });
      else this.#events.emit(event.type, { lastMessageUuid: event.lastMessageUuid });
    };
    return new SessionNotes({
      ...config,
      model: config.model ?? options.model,
      settings: this.#settings,
      onEvent: relay,
      now: options.now,
      generateId: options.generateId,
      sessionId: options.sessionId,
    });
  }
}
