import { EngramError } from '../../kernel/errors.js';
import type { ForkPrefix } from '../forked-helper.js';
import type { SessionMessage, TodoItem } from '../../contracts/session-message.js';

/** What the fast path needs of the session notes (SessionNotes satisfies it). */
export interface CompactionNotes {
  hasContent(): Promise<boolean>;
  waitForIdle(): Promise<void>;
  read(): Promise<string>;
  readonly lastSummarizedUuid: string | undefined;
}

export interface CompactionInput {
  trigger: 'auto' | 'manual';
  messages: readonly SessionMessage[];
  /** The session's request prefix: its system and tools start the summarizer request (and its messages, when they can be sent unchanged). */
  prefix: ForkPrefix;
  /** Estimated context tokens now (kept in the boundary). */
  preTokens: number;
  notes?: CompactionNotes;
  /** Files as last read, newest first; the plan and todo list in force. */
  reinject: { recentFiles: Array<{ path: string; content: string }>; plan?: string; todos?: TodoItem[] };
  metadata: { filesEdited: string[]; gitBranch: string; activeSkills?: string[] };
  /** The user's `/compact <instructions>`. */
  customInstructions?: string;
  signal?: AbortSignal;
  /** The model's context window (default: `contextWindowFor(model, settings)`); bounds what is kept and sent. */
  window?: number;
  /** Named in the summary message, so the model can look up exact details from before the boundary. */
  transcriptPath?: string;
}

/** The user's `/compact` instructions are a few lines, not a document. */
const MAX_CUSTOM_INSTRUCTIONS_CHARS = 20_000;
const TODO_STATUSES = new Set(['pending', 'in_progress', 'completed']);

function invalid(message: string): never {
  throw new EngramError('INVALID_INPUT', `Compaction input: ${message} Nothing was changed.`);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function checkStrings(value: unknown, what: string): void {
  if (!Array.isArray(value) || value.some((item) => typeof item !== 'string'))
    invalid(`${what} must be an array of strings.`);
}

function checkMessages(messages: unknown): void {
  if (!Array.isArray(messages) || messages.length === 0)
    invalid('messages must be a non-empty array of session messages (there is nothing to compact).');
  const seen = new Set<string>();
  messages.forEach((message: unknown, index) => {
    if (!isRecord(message)) invalid(`messages[${index}] is not an object.`);
    if (typeof message.uuid !== 'string' || message.uuid === '')
      invalid(`messages[${index}].uuid must be a non-empty string.`);
    if (seen.has(message.uuid))
      invalid(`messages[${index}].uuid ${JSON.stringify(message.uuid.slice(0, 80))} appears twice.`);
    seen.add(message.uuid);
    if (message.role !== 'user' && message.role !== 'assistant')
      invalid(`messages[${index}].role must be 'user' or 'assistant'.`);
    if (typeof message.content === 'string') return;
    if (!Array.isArray(message.content))
      invalid(`messages[${index}].content must be a string or an array of content blocks.`);
    (message.content as unknown[]).forEach((block, blockIndex) => {
      if (!isRecord(block) || typeof block.type !== 'string')
        invalid(`messages[${index}].content[${blockIndex}] is not a content block with a type.`);
      if (block.type === 'text' && typeof block.text !== 'string')
        invalid(`messages[${index}].content[${blockIndex}].text must be a string.`);
      if (block.type === 'tool_result' && (typeof block.content !== 'string' || typeof block.toolUseId !== 'string')) {
        invalid(`messages[${index}].content[${blockIndex}] is a tool_result without a string toolUseId and content.`);
      }
      if (
        block.type === 'tool_use' &&
        (typeof block.id !== 'string' || typeof block.name !== 'string' || !isRecord(block.input))
      ) {
        invalid(`messages[${index}].content[${blockIndex}] is a tool_use without id, name and an input object.`);
      }
    });
  });
}

/** Refuses malformed compaction input with INVALID_INPUT naming the field; checked before anything runs. */
export function checkCompactionInput(input: CompactionInput): void {
  if (!isRecord(input))
    invalid('compact() takes an object { trigger, messages, prefix, preTokens, reinject, metadata }.');
  if (input.trigger !== 'auto' && input.trigger !== 'manual')
    invalid(`trigger must be 'auto' or 'manual', got ${JSON.stringify(input.trigger)}.`);
  checkMessages(input.messages);
  const prefix = input.prefix as unknown;
  if (
    !isRecord(prefix) ||
    !Array.isArray(prefix.system) ||
    !Array.isArray(prefix.tools) ||
    !Array.isArray(prefix.messages)
  ) {
    invalid('prefix must be { system, tools, messages } from the session (its forkPrefix()).');
  }
  if (typeof input.preTokens !== 'number' || !Number.isFinite(input.preTokens) || input.preTokens < 0)
    invalid('preTokens must be a non-negative number of tokens.');
  if (input.window !== undefined && (!Number.isInteger(input.window) || input.window < 1))
    invalid('window must be a positive whole number of tokens.');
  const notes = input.notes as unknown as Record<string, unknown> | undefined;
  if (
    notes !== undefined &&
    (notes === null ||
      typeof notes !== 'object' ||
      typeof notes.hasContent !== 'function' ||
      typeof notes.read !== 'function' ||
      typeof notes.waitForIdle !== 'function')
  ) {
    invalid('notes must be the session notes (hasContent, waitForIdle, read, lastSummarizedUuid).');
  }
  const reinject = input.reinject as unknown;
  if (!isRecord(reinject) || !Array.isArray(reinject.recentFiles))
    invalid('reinject must be { recentFiles: [{ path, content }], plan?, todos? }.');
  (reinject.recentFiles as unknown[]).forEach((file, index) => {
    if (!isRecord(file) || typeof file.path !== 'string' || file.path === '' || typeof file.content !== 'string')
      invalid(`reinject.recentFiles[${index}] must be { path, content } strings.`);
  });
  if (reinject.plan !== undefined && typeof reinject.plan !== 'string') invalid('reinject.plan must be a string.');
  if (reinject.todos !== undefined) {
    if (!Array.isArray(reinject.todos)) invalid('reinject.todos must be an array of todo items.');
    (reinject.todos as unknown[]).forEach((todo, index) => {
      if (!isRecord(todo) || typeof todo.content !== 'string' || !TODO_STATUSES.has(String(todo.status)))
        invalid(`reinject.todos[${index}] must be { content, status: pending | in_progress | completed }.`);
    });
  }
  const metadata = input.metadata as unknown;
  if (!isRecord(metadata)) invalid('metadata must be { filesEdited, gitBranch, activeSkills? }.');
  checkStrings(metadata.filesEdited, 'metadata.filesEdited');
  if (typeof metadata.gitBranch !== 'string') invalid("metadata.gitBranch must be a string ('' outside git).");
  if (metadata.activeSkills !== undefined) checkStrings(metadata.activeSkills, 'metadata.activeSkills');
  if (input.customInstructions !== undefined) {
    if (typeof input.customInstructions !== 'string') invalid('customInstructions must be a string.');
    if (input.customInstructions.length > MAX_CUSTOM_INSTRUCTIONS_CHARS)
      invalid(
        `customInstructions holds at most ${MAX_CUSTOM_INSTRUCTIONS_CHARS} characters; got ${input.customInstructions.length}.`,
      );
  }
  if (input.signal !== undefined && !(input.signal instanceof AbortSignal)) invalid('signal must be an AbortSignal.');
  if (input.transcriptPath !== undefined && typeof input.transcriptPath !== 'string')
    invalid('transcriptPath must be a string.');
}
