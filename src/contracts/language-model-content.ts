import type {
  LanguageModelMessage,
  LanguageModelRequest,
  LanguageModelResponse,
  LanguageModelUsage,
  TextBlock,
  ToolUseBlock,
} from './language-model.js';

/** The tool calls of a response, in order. */
export function toolUses(response: LanguageModelResponse): ToolUseBlock[] {
  return (response.content ?? []).filter((block): block is ToolUseBlock => block.type === 'tool_use');
}

/** A message's text: the string itself, or its text blocks joined by newlines. */
export function messageText(message: LanguageModelMessage): string {
  if (typeof message.content === 'string') return message.content;
  return message.content
    .filter((block): block is TextBlock => block.type === 'text')
    .map((block) => block.text)
    .join('\n');
}

/** The system prompt as one string (blocks joined by blank lines). */
export function systemText(system: LanguageModelRequest['system']): string {
  if (system === undefined) return '';
  if (typeof system === 'string') return system;
  return system.map((block) => block.text).join('\n\n');
}

/** Every input token of a request: uncached + read from the cache + written to it (FORMATS §4.3). */
export function totalInputTokens(usage: LanguageModelUsage): number {
  return usage.inputTokens + (usage.cacheReadTokens ?? 0) + (usage.cacheWriteTokens ?? 0);
}

/** The messages with only the last one marked as a cache breakpoint (`cache: true`): what a conversation's request sends. */
export function withLastMessageCached(messages: readonly LanguageModelMessage[]): LanguageModelMessage[] {
  return messages.map((message, index) => {
    const { cache: _cache, ...rest } = message;
    return index === messages.length - 1 ? { ...rest, cache: true } : message.cache === undefined ? message : rest;
  });
}
