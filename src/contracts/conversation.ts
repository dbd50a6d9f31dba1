import { EngramError } from '../kernel/errors.js';

/**
 * The conversation extraction reads: messages with stable ids, oldest first. Transcript readers
 * (src/extraction/transcripts) and hosts build it; extraction never sees a provider's raw format.
 *
 * Roles: `user` (what the user typed), `assistant` (what the model said, with its tool calls) and
 * `tool` (tool results sent back to the model). Only `user` text that is not `meta` counts as the
 * user's own words: explicit "remember …" rules never fire on tool output or injected text.
 */
export type ConversationRole = 'user' | 'assistant' | 'tool';

/** A tool the assistant called. */
export interface ConversationToolCall {
  id: string;
  name: string;
  input: Record<string, unknown>;
}

/** The answer to a tool call (a preview: extraction never needs a whole file). */
export interface ConversationToolResult {
  toolUseId: string;
  content: string;
  isError?: boolean;
}

/** One message of a conversation. */
export interface ConversationMessage {
  /** Stable across re-reads of the same conversation: the extraction cursor points at it. */
  id: string;
  role: ConversationRole;
  /** What was said, as plain text ('' for a message of tool calls or results only). */
  text: string;
  toolCalls?: ConversationToolCall[];
  toolResults?: ConversationToolResult[];
  /** ISO-8601, when known. */
  timestamp?: string;
  /** Injected by the host or the system (expanded slash commands, reminders, compaction summaries), not typed by the user. */
  meta?: boolean;
  /**
   * Ids this message had before it grew: of the source records merged into it (one assistant reply
   * written over several transcript lines), or of its earlier versions (a plain-text message that got
   * more lines). A cursor naming one of them re-reads the message.
   */
  partIds?: string[];
  /** The host wrote memory during this message (a direct library write the tool calls do not show). */
  wroteMemory?: boolean;
}

/** A conversation of one session. */
export interface Conversation {
  sessionId: string;
  messages: ConversationMessage[];
}

export const CONVERSATION_ROLES: readonly ConversationRole[] = ['user', 'assistant', 'tool'];

/** Longest session or message id: ids end up in checkpoint names, job keys and memory sources. */
export const MAX_CONVERSATION_ID_LENGTH = 200;

const CONTROL = /[\u0000-\u001F\u007F-\u009F]/;

/** Checks an id (session, message or tool call): 1-200 characters, no control characters. */
export function assertConversationId(value: unknown, what: string): string {
  if (
    typeof value !== 'string' ||
    value.length === 0 ||
    value.length > MAX_CONVERSATION_ID_LENGTH ||
    CONTROL.test(value)
  ) {
    const shown = typeof value === 'string' ? JSON.stringify(value.slice(0, 60)) : String(value);
    throw new EngramError(
      'INVALID_INPUT',
      `Invalid ${what} ${shown}: 1-${MAX_CONVERSATION_ID_LENGTH} characters without control characters.`,
    );
  }
  return value;
}

/**
 * Checks a conversation handed to extraction: a session id, messages with unique ids, known roles
 * and string texts. Refuses what it cannot use with INVALID_INPUT naming the message; never edits it.
 */
export function assertConversation(value: unknown): Conversation {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new EngramError(
      'INVALID_INPUT',
      'A conversation is an object: { sessionId, messages: [{ id, role, text }] }.',
    );
  }
  const { sessionId, messages } = value as { sessionId?: unknown; messages?: unknown };
  assertConversationId(sessionId, 'session id');
  if (!Array.isArray(messages))
    throw new EngramError('INVALID_INPUT', 'A conversation has messages: an array of { id, role, text }.');
  const seen = new Set<string>();
  for (let index = 0; index < messages.length; index += 1) {
    const message = messages[index] as Partial<ConversationMessage> | null;
    const where = `message ${index + 1}`;
    if (message === null || typeof message !== 'object' || Array.isArray(message)) {
      throw new EngramError('INVALID_INPUT', `Invalid ${where}: an object { id, role, text }.`);
    }
    const id = assertConversationId(message.id, `id of ${where}`);
    if (seen.has(id))
      throw new EngramError(
        'INVALID_INPUT',
        `Message id ${JSON.stringify(id.slice(0, 60))} appears twice: every message needs its own id.`,
      );
    seen.add(id);
    if (!CONVERSATION_ROLES.includes(message.role as ConversationRole)) {
      throw new EngramError(
        'INVALID_INPUT',
        `Invalid role ${JSON.stringify(String(message.role).slice(0, 20))} of ${where}: one of ${CONVERSATION_ROLES.join(', ')}.`,
      );
    }
    if (typeof message.text !== 'string')
      throw new EngramError('INVALID_INPUT', `The text of ${where} is not a string.`);
    if (message.toolCalls !== undefined && !Array.isArray(message.toolCalls))
      throw new EngramError('INVALID_INPUT', `toolCalls of ${where} is not an array.`);
    if (message.toolResults !== undefined && !Array.isArray(message.toolResults))
      throw new EngramError('INVALID_INPUT', `toolResults of ${where} is not an array.`);
  }
  return value as Conversation;
}
