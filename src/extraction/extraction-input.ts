import type { ConversationMessage, ConversationToolCall } from '../contracts/conversation.js';
import { recalledFromText, type RecalledMemory } from './recalled-memories.js';

/** How much of each message extraction keeps (settings `extraction.*`). */
export interface ExtractionInputLimits {
  messageMaxChars: number;
  toolResultMaxChars: number;
}

/** A text filter applied before anything is queued or sent: private text and injected blocks out, secrets redacted. */
export type TextFilter = (text: string) => string;

// Text the host injects into user turns (Claude Code's reminders): never the user's words.
const HOST_BLOCKS = /<system-reminder>[\s\S]*?<\/system-reminder>/g;
const TOOL_INPUT_MAX_CHARS = 300;

/**
 * The messages of a span as extraction keeps them, small enough to queue: the recalled memories
 * named in `<memory_context>` blocks are read out first (so they can be marked as known), then
 * every text goes through `filter` (private text and engram's own blocks stripped, secrets
 * redacted), long texts keep their start and end, tool results a preview, tool inputs a summary.
 */
export function prepareMessages(
  messages: readonly ConversationMessage[],
  options: { limits: ExtractionInputLimits; filter: TextFilter },
): { messages: ConversationMessage[]; recalled: RecalledMemory[] } {
  const recalled: RecalledMemory[] = [];
  const prepared: ConversationMessage[] = [];
  const { limits, filter } = options;
  for (const message of messages) {
    recalled.push(...recalledFromText(message.text));
    const text = cutMiddle(filter(message.text.replace(HOST_BLOCKS, '')), limits.messageMaxChars);
    const toolCalls = message.toolCalls?.map((call) => prepareToolCall(call, filter));
    const toolResults = message.toolResults?.map((result) => ({
      toolUseId: result.toolUseId,
      content: cutMiddle(filter(result.content), limits.toolResultMaxChars),
      ...(result.isError === true && { isError: true }),
    }));
    if (text.trim() === '' && !toolCalls?.length && !toolResults?.length && message.wroteMemory !== true) continue;
    prepared.push({
      id: message.id,
      role: message.role,
      text,
      ...(toolCalls?.length && { toolCalls }),
      ...(toolResults?.length && { toolResults }),
      ...(message.timestamp !== undefined && { timestamp: message.timestamp }),
      ...(message.meta === true && { meta: true }),
      ...(message.partIds !== undefined && { partIds: message.partIds }),
      ...(message.wroteMemory === true && { wroteMemory: true }),
    });
  }
  return { messages: prepared, recalled };
}

/**
 * A tool call reduced to what extraction and memory-write detection need: the name, the memory
 * tool's command and path, a file path, and a short text of the rest of the input.
 */
function prepareToolCall(call: ConversationToolCall, filter: TextFilter): ConversationToolCall {
  const input = call.input ?? {};
  const kept: Record<string, unknown> = {};
  for (const key of ['command', 'path', 'file_path', 'old_path', 'new_path']) {
    const value = input[key];
    if (typeof value === 'string') kept[key] = filter(value).slice(0, TOOL_INPUT_MAX_CHARS);
  }
  let rest = '';
  try {
    rest = JSON.stringify(input) ?? '';
  } catch {
    rest = '';
  }
  if (rest.length > 2) kept.summary = cutMiddle(filter(rest), TOOL_INPUT_MAX_CHARS);
  return { id: call.id, name: call.name.slice(0, 200), input: kept };
}

/** A text cut to at most `maxChars`: its start and end with a marker between (the end often holds the conclusion). */
export function cutMiddle(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  const marker = `\n[… ${text.length - maxChars} characters left out …]\n`;
  const room = Math.max(0, maxChars - marker.length);
  let head = Math.ceil(room * 0.6);
  let tail = text.length - (room - head);
  // Never split a surrogate pair (an emoji): a lone half is not text.
  if (isLowSurrogate(text.charCodeAt(head))) head -= 1;
  if (isLowSurrogate(text.charCodeAt(tail))) tail += 1;
  return `${text.slice(0, head)}${marker}${text.slice(tail)}`;
}

function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}
