import type { ContentBlock, LanguageModelMessage, ToolUseBlock } from '../contracts/language-model.js';
import type { SessionMessage } from '../contracts/session-message.js';

/**
 * Small helpers every part of the session engine shares for its messages: freezing (a message in a
 * session never changes), the wire form a request sends, copies handed to outside code, and the tool
 * calls a message leaves open.
 */

/** Freezes a value and everything it holds; returns it. Already-frozen parts are left as they are. */
export function deepFreeze<Value>(value: Value): Value {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value as Record<string, unknown>)) deepFreeze(child);
  }
  return value;
}

/** A message with its content frozen deeply: once in a session, only (micro)compaction replaces it. */
export function freezeMessage(message: SessionMessage): SessionMessage {
  const content =
    typeof message.content === 'string'
      ? message.content
      : Object.freeze(message.content.map((block) => deepFreeze({ ...block })));
  return Object.freeze({
    ...message,
    content: content as ContentBlock[],
    ...(message.usage && { usage: Object.freeze({ ...message.usage }) }),
  });
}

/** What a request sends of a session message: role and content (the content is shared, not copied: it is frozen). */
export function wireMessage(message: Pick<SessionMessage, 'role' | 'content'>): LanguageModelMessage {
  return { role: message.role, content: message.content };
}

/** A deep, unfrozen copy of a message, for code outside the session (hooks, new compaction results). */
export function copyMessage(message: SessionMessage): SessionMessage {
  return structuredClone(message);
}

/** The tool_use blocks of the last message when it is an assistant message: the calls still waiting for results. */
export function pendingToolUses(messages: readonly Pick<SessionMessage, 'role' | 'content'>[]): ToolUseBlock[] {
  const last = messages.at(-1);
  if (!last || last.role !== 'assistant' || typeof last.content === 'string') return [];
  return last.content.filter((block): block is ToolUseBlock => block.type === 'tool_use');
}
