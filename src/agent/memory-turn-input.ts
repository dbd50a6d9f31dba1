/** The memory turn's input checks: what a caller hands it, refused with INVALID_INPUT or made safe to search. */

import { EngramError } from '../kernel/errors.js';
import type { Conversation, ConversationMessage } from '../contracts/conversation.js';
import type { ContentBlock } from '../contracts/language-model.js';

/** Most ids a surfaced set keeps (the newest): far more than one conversation surfaces. */
export const MAX_SURFACED = 10_000;
/** recall-memories' longest id, and the conversation's. */
export const MAX_ID_LENGTH = 200;
/** buildMemoryContext's largest budget. */
export const MAX_TOKENS = 10_000_000;

/**
 * A user message is searched this far at most: its start and its end (a pasted log usually sits
 * between the request and the question). Ranking never uses more than a few hundred terms.
 */
const QUERY_HEAD_CHARS = 4_000;
const QUERY_TAIL_CHARS = 4_000;
// Control characters mean nothing to recall and must not reach a full-text query; newlines and tabs are spaces too.
const CONTROL = /[\u0000-\u001F\u007F-\u009F\u2028\u2029]+/g;

/** The text recall searches for a message: control characters to spaces, a huge message cut to its start and end, trimmed. */
export function recallQuery(message: unknown): string {
  if (typeof message !== 'string') {
    throw new EngramError(
      'INVALID_INPUT',
      `The memory turn recalls for the user's message as a string, not ${message === null ? 'null' : typeof message}.`,
    );
  }
  const huge = message.length > QUERY_HEAD_CHARS + QUERY_TAIL_CHARS;
  const text = huge
    ? `${wellFormed(message.slice(0, QUERY_HEAD_CHARS))} ${wellFormed(message.slice(-QUERY_TAIL_CHARS))}`
    : message;
  return text.replace(CONTROL, ' ').trim();
}

/** Drops a surrogate half left at either end by a cut. */
function wellFormed(text: string): string {
  return text.replace(/^[\uDC00-\uDFFF]|[\uD800-\uDBFF]$/g, '');
}

/** The text of a message's content, for recall (text blocks joined). */
export function contentText(content: string | readonly ContentBlock[]): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .flatMap((block) => (block?.type === 'text' && typeof block.text === 'string' ? [block.text] : []))
    .join('\n');
}

/** A copy of the conversation's message list (the messages themselves are not changed by the host), or undefined for a non-conversation. */
export function snapshotConversation(conversation: unknown): Conversation | undefined {
  if (conversation === null || typeof conversation !== 'object') return undefined;
  const { sessionId, messages } = conversation as { sessionId?: unknown; messages?: unknown };
  if (!Array.isArray(messages)) return undefined;
  return { sessionId: sessionId as string, messages: [...(messages as ConversationMessage[])] };
}

/** Whether the conversation's last message is the assistant's calling tools: the loop is not over. */
export function endsInToolCall(messages: readonly ConversationMessage[] | undefined): boolean {
  const last = messages?.at(-1);
  return (
    last !== null &&
    typeof last === 'object' &&
    last.role === 'assistant' &&
    Array.isArray(last.toolCalls) &&
    last.toolCalls.length > 0
  );
}

export function checkInteger(value: unknown, name: string, minimum: number, maximum: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < minimum || value > maximum) {
    throw new EngramError(
      'INVALID_INPUT',
      `Invalid ${name} ${JSON.stringify(value) ?? String(value)}: a whole number from ${minimum} to ${maximum}.`,
    );
  }
  return value;
}

export function checkFlag(value: unknown, name: string): boolean {
  if (value === undefined) return true;
  if (typeof value !== 'boolean') throw new EngramError('INVALID_INPUT', `${name} is true or false.`);
  return value;
}

/** The restored surfaced set: ids as strings, the newest MAX_SURFACED kept. */
export function checkSurfaced(value: Iterable<string> | undefined): Set<string> {
  const surfaced = new Set<string>();
  if (value === undefined) return surfaced;
  if (
    value === null ||
    typeof value !== 'object' ||
    typeof (value as Iterable<string>)[Symbol.iterator] !== 'function'
  ) {
    throw new EngramError('INVALID_INPUT', 'surfaced is a list of memory ids (from surfacedIds()).');
  }
  for (const id of value) {
    if (typeof id !== 'string' || id === '' || id.length > MAX_ID_LENGTH) {
      throw new EngramError('INVALID_INPUT', `Each surfaced id is a string of 1-${MAX_ID_LENGTH} characters.`);
    }
    surfaced.delete(id);
    surfaced.add(id);
    if (surfaced.size > MAX_SURFACED) surfaced.delete(surfaced.values().next().value!);
  }
  return surfaced;
}
