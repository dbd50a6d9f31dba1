import type { ConversationMessage } from '../contracts/conversation.js';

/**
 * Where the messages after `mark` begin. `found` is false when a mark was given but is no longer
 * among the messages (compacted away): then every message is new (SPEC: fall back to all, never
 * to none). A mark that names a part of a merged message (a reply that grew since) re-reads that message.
 */
export function messagesAfter(
  messages: readonly ConversationMessage[],
  mark: string | undefined,
): { messages: ConversationMessage[]; found: boolean } {
  if (mark === undefined) return { messages: [...messages], found: false };
  for (let index = messages.length - 1; index >= 0; index -= 1) {
    const message = messages[index]!;
    if (message.id === mark) return { messages: messages.slice(index + 1), found: true };
    if (message.partIds?.includes(mark)) return { messages: messages.slice(index), found: true };
  }
  return { messages: [...messages], found: false };
}

/** Messages of several spans in order, each id once (spans of queued jobs may overlap). */
export function mergeMessageSpans(spans: ReadonlyArray<readonly ConversationMessage[]>): ConversationMessage[] {
  const seen = new Set<string>();
  const merged: ConversationMessage[] = [];
  for (const span of spans) {
    for (const message of span) {
      if (seen.has(message.id)) continue;
      seen.add(message.id);
      merged.push(message);
    }
  }
  return merged;
}

/** Whether a message holds the user's own words (typed, not injected, not a tool result). */
export function isUserSpeech(message: ConversationMessage): boolean {
  return message.role === 'user' && message.meta !== true && message.text.trim() !== '';
}
