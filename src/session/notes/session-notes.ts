import { resolve } from 'node:path';
import { EngramError, isEngramError } from '../../kernel/errors.js';
import {
  capNotesSections,
  DEFAULT_SESSION_NOTES_PROMPT,
  DEFAULT_SESSION_NOTES_TEMPLATE,
  hasRealNotesContent,
  notesCapsNotice,
  notesOverCaps,
  parseNotesSections,
  parseSectionEdits,
  renderNotesPrompt,
  replaceNotesSection,
  sectionDescription,
} from './session-notes-template.js';
import {
  checkPrompt,
  checkTemplate,
  loadNotesResources,
  type NotesFiles,
  type NotesResources,
} from './session-notes-resources.js';
import { shouldUpdateSessionNotes, type NotesTriggerState } from './session-notes-trigger.js';
import { estimateMessageTokens } from '../context-budget.js';
import { DEFAULT_SETTINGS, type Settings } from '../../kernel/settings.js';
import type { LanguageModel, LanguageModelUsage } from '../../contracts/language-model.js';
import { runForkedHelper, type ForkPrefix } from '../forked-helper.js';
import type { SessionTranscriptSink } from '../../contracts/session-message.js';

/** What a notes update reports while it runs in the background. */
export type SessionNotesEvent =
  | { type: 'notes-update-started'; at: Date; lastMessageUuid: string }
  | {
      type: 'notes-update-finished';
      at: Date;
      lastMessageUuid: string;
      changedSections: string[];
      truncatedSections: string[];
      usage: LanguageModelUsage;
      aborted: boolean;
    }
  | { type: 'notes-update-failed'; at: Date; lastMessageUuid: string; error: EngramError };

export interface SessionNotesOptions {
  /** The notes file (`<project>/<sessionId>/session-notes.md`). */
  path: string;
  /** How the notes file is read and written (`nodeNotesFiles` on Node). */
  files: NotesFiles;
  /** The parent session's model (its prompt cache serves the helper's prefix); none: notes are never updated. */
  model?: LanguageModel;
  settings: Pick<Settings, 'notes'> & Partial<Pick<Settings, 'tokens'>>;
  /** Overrides the template (else `notes.templatePath`, else the default ten sections). */
  template?: string;
  /** Overrides the update prompt (else `notes.promptPath`, else the default). */
  prompt?: string;
  now?: () => Date;
  generateId?: () => string;
  /** Failures of background updates (never thrown into the turn). */
  onError?: (error: EngramError) => void;
  onEvent?: (event: SessionNotesEvent) => void;
  /** Opens the sidechain transcript of one update's helper (`subagents/agent-<agentId>.jsonl`); it is closed after the update. */
  openHelperTranscript?: (agentId: string) => SessionTranscriptSink;
  sessionId?: string;
}

const MAX_UUID_LENGTH = 200;

/** One notes update: the last message the parent's request holds and, optionally, the parent's context budget. */
export interface NotesUpdateOptions {
  lastMessageUuid: string;
  /** The parent's context tokens and its window; an update that would not fit is not sent. */
  budget?: { contextTokens: number; window: number };
}

/**
 * Layer 3 (SPEC §2): the session notes file, kept up to date in the background by a forked helper
 * that answers section edits, applied section by section. The session reports each turn
 * (`noteTurn`), asks `shouldUpdate()` (SPEC's trigger) and starts `update()`, which returns at once;
 * one update runs at a time, and its failures go to `onError`, never into the turn. Compaction
 * reads the notes (`hasContent`, `waitForIdle`, `read`, `lastSummarizedUuid`) for its fast path.
 */
export class SessionNotes {
  readonly path: string;
  readonly #options: SessionNotesOptions;
  readonly #now: () => Date;
  #state: NotesTriggerState = { contextTokens: 0, toolCallsSinceLastUpdate: 0, lastAssistantTurnHadToolCall: false };
  #running: Promise<void> | undefined;
  #controller: AbortController | undefined;
  #lastSummarizedUuid: string | undefined;
  #resources: NotesResources | undefined;
  #stateRestored = false;

  constructor(options: SessionNotesOptions) {
    if (options === null || typeof options !== 'object')
      throw new EngramError('INVALID_INPUT', 'SessionNotes takes an options object { path, settings, model? }.');
    if (typeof options.path !== 'string' || options.path.trim() === '' || options.path.includes('\0')) {
      throw new EngramError('INVALID_INPUT', 'SessionNotes needs the path of the notes file (a non-empty string).');
    }
    if (!options.settings?.notes)
      throw new EngramError('INVALID_INPUT', 'SessionNotes needs settings with a notes section.');
    if (typeof options.files?.read !== 'function' || typeof options.files.write !== 'function') {
      throw new EngramError('INVALID_INPUT', 'SessionNotes needs files { read, write } (nodeNotesFiles on Node).');
    }
    if (options.template !== undefined) checkTemplate(options.template, 'The notes template given');
    if (options.prompt !== undefined) checkPrompt(options.prompt, 'The notes prompt given');
    this.path = resolve(options.path);
    this.#options = options;
    this.#now = options.now ?? (() => new Date());
  }

  /** Where the notes remember which message they cover, so a resumed session can still compact from them. */
  get statePath(): string {
    return this.path.replace(/(\.md)?$/, '.state.json');
  }

  /** The last message the notes cover (set when an update succeeds, or read back by read()/hasContent() after a resume); compaction keeps the messages after it. */
  get lastSummarizedUuid(): string | undefined {
    return this.#lastSummarizedUuid;
  }

  /** Whether an update is running. */
  get running(): boolean {
    return this.#running !== undefined;
  }

  /** The trigger's state as accumulated so far (a copy). */
  get triggerState(): NotesTriggerState {
    return { ...this.#state };
  }

  /** The notes as they stand: the file, or the template while there is none. */
  async read(): Promise<string> {
    await this.#restoreState();
    const text = await this.#options.files.read(this.path, {
      maxBytes: this.#options.settings.notes.maxFileBytes,
      label: 'The session notes',
    });
    return text ?? (await this.#loadResources()).template;
  }

  /** Whether the notes hold more than the untouched template (so compaction can use them as its summary). */
  async hasContent(): Promise<boolean> {
    const [text, { template }] = await Promise.all([this.read(), this.#loadResources()]);
    return hasRealNotesContent(text, template);
  }

  /** Records one finished model turn: the context's size now, the tool calls it made, whether it made any. */
  noteTurn(input: { contextTokens: number; toolCalls: number; hadToolCall: boolean }): void {
    const count = (value: unknown, field: string): number => {
      if (typeof value !== 'number' || !Number.isFinite(value) || value < 0)
        throw new EngramError(
          'INVALID_INPUT',
          `noteTurn: ${field} must be a finite number from 0, got ${String(value)}.`,
        );
      return value;
    };
    if (input === null || typeof input !== 'object')
      throw new EngramError('INVALID_INPUT', 'noteTurn takes { contextTokens, toolCalls, hadToolCall }.');
    const contextTokens = count(input.contextTokens, 'contextTokens');
    const toolCalls = count(input.toolCalls, 'toolCalls');
    if (typeof input.hadToolCall !== 'boolean')
      throw new EngramError('INVALID_INPUT', 'noteTurn: hadToolCall must be true or false.');
    this.#state = {
      ...this.#state,
      contextTokens,
      toolCallsSinceLastUpdate: this.#state.toolCallsSinceLastUpdate + toolCalls,
      lastAssistantTurnHadToolCall: input.hadToolCall,
    };
  }

  /** After a compaction the context is small again: growth is counted from its new size. */
  noteCompaction(input: { contextTokens: number }): void {
    this.#state = { ...this.#state, contextTokens: input.contextTokens, tokensAtLastUpdate: input.contextTokens };
  }

  /** SPEC's trigger over the accumulated state; false while an update runs or with no model. */
  shouldUpdate(): boolean {
    if (this.#options.model === undefined || this.#running !== undefined) return false;
    return shouldUpdateSessionNotes(this.#state, this.#options.settings).update;
  }

  /**
   * Starts an update in the background and returns at once. `prefix` is the parent's last request
   * (system, tools, messages); `options.lastMessageUuid` the last message it holds. While an update runs a
   * second call does nothing. Failures are reported through `onError`, never thrown. With `budget`
   * (the parent's context tokens and its window), a request whose input + `notes.updateMaxOutputTokens`
   * would exceed the window is not sent: it fails with CONTEXT_WINDOW_EXCEEDED.
   */
  async update(prefix: ForkPrefix, options: NotesUpdateOptions): Promise<void> {
    if (this.#running !== undefined) return;
    const { lastMessageUuid, budget } =
      options !== null && typeof options === 'object' ? options : ({} as Partial<NotesUpdateOptions>);
    const uuid = typeof lastMessageUuid === 'string' ? lastMessageUuid : '';
    if (uuid === '' || uuid.length > MAX_UUID_LENGTH) {
      this.#report(
        uuid,
        new EngramError(
          'INVALID_INPUT',
          `A notes update needs the uuid of the last message it covers (1 to ${MAX_UUID_LENGTH} characters).`,
        ),
      );
      return;
    }
    if (this.#options.model === undefined) {
      this.#report(
        uuid,
        new EngramError(
          'MODEL_NOT_CONFIGURED',
          'Session notes are updated by a model and none is configured; set ANTHROPIC_API_KEY or OPENAI_API_KEY / ENGRAM_OPENAI_BASE_URL.',
        ),
      );
      return;
    }
    const snapshot = { contextTokens: this.#state.contextTokens, toolCalls: this.#state.toolCallsSinceLastUpdate };
    const controller = new AbortController();
    this.#controller = controller;
    this.#running = this.#run(this.#options.model, prefix, uuid, snapshot, controller.signal, budget).finally(() => {
      this.#running = undefined;
      this.#controller = undefined;
    });
  }

  /** Resolves when no update is running (never rejects). */
  async waitForIdle(): Promise<void> {
    while (this.#running !== undefined) await this.#running;
  }

  /** Aborts the running update, if any (the parent session is not affected); nothing is written. */
  abort(): void {
    this.#controller?.abort();
  }

  async #run(
    model: LanguageModel,
    prefix: ForkPrefix,
    uuid: string,
    snapshot: { contextTokens: number; toolCalls: number },
    signal: AbortSignal,
    budget?: { contextTokens: number; window: number },
  ): Promise<void> {
    const { settings } = this.#options;
    this.#options.onEvent?.({ type: 'notes-update-started', at: this.#now(), lastMessageUuid: uuid });
    const agentId = (this.#options.generateId ?? (() => crypto.randomUUID()))();
    let transcript: SessionTranscriptSink | undefined;
    try {
      const { template, prompt } = await this.#loadResources();
      const current = withSections(await this.read(), template);
      const sections = parseNotesSections(current).map((section) => section.name);
      const caps = notesOverCaps(current, settings);
      const notice = notesCapsNotice(caps, settings);
      const instruction =
        renderNotesPrompt(prompt, { notes: current, sections, settings }) + (notice === '' ? '' : `\n\n${notice}`);
      if (budget) checkFits(budget, instruction, settings);
      transcript = this.#options.openHelperTranscript?.(agentId);
      const helper = await runForkedHelper({
        model,
        prefix,
        instruction,
        maxOutputTokens: settings.notes.updateMaxOutputTokens,
        maxTurns: 1,
        signal,
        ...(transcript && { transcript }),
        ...(this.#options.sessionId !== undefined && { sessionId: this.#options.sessionId }),
        ...(this.#options.now && { now: this.#options.now }),
        ...(this.#options.generateId && { generateId: this.#options.generateId }),
      });
      if (helper.aborted) {
        this.#options.onEvent?.({
          type: 'notes-update-finished',
          at: this.#now(),
          lastMessageUuid: uuid,
          changedSections: [],
          truncatedSections: [],
          usage: helper.usage,
          aborted: true,
        });
        return;
      }
      // The file may have been edited while the helper ran (by the user): edits apply to what is there now.
      const latest = withSections(await this.read(), template);
      const edits = parseSectionEdits(
        helper.text,
        parseNotesSections(latest).map((section) => section.name),
      );
      let text = latest;
      for (const edit of edits) {
        const description = sectionDescription(template, edit.section);
        const body =
          description === undefined || edit.body.trimStart().startsWith(description)
            ? edit.body
            : `${description}\n${edit.body.replace(/^(?:[ \t]*\r?\n)+/, '')}`;
        text = replaceNotesSection(text, edit.section, body);
      }
      const capped = capNotesSections(text, settings);
      if (capped.text !== latest) await this.#write(capped.text);
      this.#state = {
        ...this.#state,
        tokensAtLastUpdate: snapshot.contextTokens,
        toolCallsSinceLastUpdate: Math.max(0, this.#state.toolCallsSinceLastUpdate - snapshot.toolCalls),
      };
      this.#lastSummarizedUuid = uuid;
      await this.#saveState(uuid);
      this.#options.onEvent?.({
        type: 'notes-update-finished',
        at: this.#now(),
        lastMessageUuid: uuid,
        changedSections: edits.map((edit) => edit.section),
        truncatedSections: capped.truncated,
        usage: helper.usage,
        aborted: false,
      });
    } catch (error) {
      // Growth is counted from here even so: a failing helper is not retried on every turn.
      this.#state = { ...this.#state, tokensAtLastUpdate: snapshot.contextTokens };
      this.#report(uuid, asEngramError(error));
    } finally {
      await transcript?.close().catch((error: unknown) => this.#report(uuid, asEngramError(error)));
    }
  }

  #report(uuid: string, error: EngramError): void {
    try {
      this.#options.onEvent?.({ type: 'notes-update-failed', at: this.#now(), lastMessageUuid: uuid, error });
      this.#options.onError?.(error);
    } catch {
      // A throwing listener must not turn a background failure into an unhandled rejection.
    }
  }

  /** Reads back what an earlier run of this session saved (once; a missing or unreadable state is no state). */
  async #restoreState(): Promise<void> {
    if (this.#stateRestored) return;
    this.#stateRestored = true;
    try {
      const saved = JSON.parse(
        (await this.#options.files.read(this.statePath, { maxBytes: 64 * 1024, label: 'The session notes state' })) ??
          'null',
      ) as { lastSummarizedUuid?: unknown } | null;
      const uuid = saved?.lastSummarizedUuid;
      if (
        this.#lastSummarizedUuid === undefined &&
        typeof uuid === 'string' &&
        uuid !== '' &&
        uuid.length <= MAX_UUID_LENGTH
      )
        this.#lastSummarizedUuid = uuid;
    } catch {
      // A damaged state file only costs the fast path until the next update rewrites it.
    }
  }

  async #saveState(uuid: string): Promise<void> {
    await this.#options.files.write(
      this.statePath,
      `${JSON.stringify({ lastSummarizedUuid: uuid, updatedAt: this.#now().toISOString() })}\n`,
    );
  }

  async #write(text: string): Promise<void> {
    await this.#options.files.write(this.path, text);
  }

  /** The template and prompt, kept only once every file read well: a broken file is read again after the user fixes it. */
  async #loadResources(): Promise<NotesResources> {
    this.#resources ??= await loadNotesResources(this.#options);
    return this.#resources;
  }
}

/** Notes with no section left (emptied, or free text) get the template's sections back, after any text they hold. */
function withSections(text: string, template: string): string {
  if (parseNotesSections(text).length > 0) return text;
  return text.trim() === '' ? template : `${text.trimEnd()}\n\n${template}`;
}

/** Refuses an update whose request (the parent's context, the instruction, the output cap) would not fit the window. */
function checkFits(
  budget: { contextTokens: number; window: number },
  instruction: string,
  settings: SessionNotesOptions['settings'],
): void {
  const input =
    budget.contextTokens +
    estimateMessageTokens({ content: instruction }, settings.tokens ? { tokens: settings.tokens } : DEFAULT_SETTINGS);
  const output = settings.notes.updateMaxOutputTokens;
  if (input + output > budget.window) {
    throw new EngramError(
      'CONTEXT_WINDOW_EXCEEDED',
      `The session notes update was not sent: about ${input} input + ${output} output tokens would exceed the ${budget.window}-token window. The notes are updated again after the next compaction.`,
    );
  }
}

function asEngramError(error: unknown): EngramError {
  if (isEngramError(error)) return error;
  return new EngramError(
    'INTERNAL',
    `The session notes update failed: ${error instanceof Error ? error.message : String(error)}`,
    { cause: error },
  );
}
