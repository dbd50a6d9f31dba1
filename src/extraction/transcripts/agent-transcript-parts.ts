import type {
  ConversationMessage,
  ConversationToolCall,
  ConversationToolResult,
} from '../../contracts/conversation.js';
import { MAX_CONVERSATION_ID_LENGTH } from '../../contracts/conversation.js';
import { MEMORY_CONTEXT_OPEN } from '../../privacy/injected-markers.js';

// What the readers of other agents' session files share: ids, injected blocks, Gemini-style parts.

/** An id usable as a conversation or message id (1-200 characters, no control characters), else undefined. */
export function usableId(value: unknown): string | undefined {
  return typeof value === 'string' &&
    value.length > 0 &&
    value.length <= MAX_CONVERSATION_ID_LENGTH &&
    !/[\u0000-\u001F\u007F-\u009F]/.test(value)
    ? value
    : undefined;
}

/** A helper's (subagent's) session id under its parent's, as the Claude Code reader names it. */
export function helperSessionId(parent: string | undefined, helper: string): string {
  return (parent === undefined ? `agent-${helper}` : `${parent}:agent-${helper}`).slice(0, MAX_CONVERSATION_ID_LENGTH);
}

/**
 * Removes `<tag …>…</tag>` blocks (an agent's injected context: hook output, environment notes) from
 * a text; returns the rest, trimmed, and the removed blocks. A block left open runs to the end.
 */
export function withoutTaggedBlocks(text: string, tags: readonly string[]): { text: string; removed: string[] } {
  const removed: string[] = [];
  let rest = text;
  for (const tag of tags) {
    const escaped = tag.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    const pattern = new RegExp(`<${escaped}(?:\\s[^>]*)?>[\\s\\S]*?(?:</${escaped}>|$)`, 'g');
    rest = rest.replace(pattern, (block) => {
      removed.push(block);
      return '';
    });
  }
  return { text: removed.length === 0 ? text : rest.trim(), removed };
}

/**
 * Injected text that holds engram's `<memory_context>`, kept as a meta message so extraction knows
 * which memories were recalled (the Claude Code reader does the same with hook attachments).
 */
export function recalledContextMessage(
  id: string,
  texts: readonly string[],
  timestamp?: string,
): ConversationMessage | undefined {
  const injected = texts.filter((text) => text.includes(MEMORY_CONTEXT_OPEN));
  if (injected.length === 0) return undefined;
  return { id, role: 'user', text: injected.join('\n'), meta: true, ...(timestamp && { timestamp }) };
}

/** Drops messages with nothing in them (no text, no tool call, no tool result). */
export function nonEmptyMessages(messages: readonly ConversationMessage[]): ConversationMessage[] {
  return messages.filter(
    (message) =>
      message.text.trim() !== '' || (message.toolCalls?.length ?? 0) > 0 || (message.toolResults?.length ?? 0) > 0,
  );
}

/** The JSON object a tool call's arguments hold (a string of JSON, or an object); anything else kept under `arguments`. */
export function toolInput(value: unknown): Record<string, unknown> {
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) return value as Record<string, unknown>;
  if (typeof value !== 'string' || value.trim() === '') return {};
  try {
    const parsed = JSON.parse(value) as unknown;
    return parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : { arguments: parsed };
  } catch {
    return { arguments: value };
  }
}

/** A tool result's text: a string as it is, text blocks joined, anything else as JSON. */
export function resultText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === undefined || value === null) return '';
  if (Array.isArray(value))
    return value
      .map((item) =>
        item !== null && typeof item === 'object' && typeof (item as { text?: unknown }).text === 'string'
          ? (item as { text: string }).text
          : resultText(item),
      )
      .filter((text) => text !== '')
      .join('\n');
  try {
    return JSON.stringify(value) ?? '';
  } catch {
    return '';
  }
}

/** What the Gemini API's parts hold (Gemini CLI and Qwen Code store them): text (thoughts left out), calls, results. */
export interface GeminiParts {
  texts: string[];
  toolCalls: ConversationToolCall[];
  toolResults: ConversationToolResult[];
}

/** Reads a Gemini `PartListUnion`: a string, one part, or a list of parts or strings. */
export function readGeminiParts(content: unknown): GeminiParts {
  const parts: GeminiParts = { texts: [], toolCalls: [], toolResults: [] };
  const list = Array.isArray(content) ? content : content === undefined || content === null ? [] : [content];
  for (const [index, part] of list.entries()) {
    if (typeof part === 'string') {
      parts.texts.push(part);
      continue;
    }
    if (part === null || typeof part !== 'object') continue;
    const record = part as Record<string, unknown>;
    if (typeof record.text === 'string' && record.thought !== true) parts.texts.push(record.text);
    const call = record.functionCall as { id?: unknown; name?: unknown; args?: unknown } | undefined;
    if (call && typeof call === 'object')
      parts.toolCalls.push({
        id: usableId(call.id) ?? `call-${index}`,
        name: typeof call.name === 'string' ? call.name : 'unknown',
        input: toolInput(call.args),
      });
    const response = record.functionResponse as { id?: unknown; name?: unknown; response?: unknown } | undefined;
    if (response && typeof response === 'object') {
      const body = response.response as { output?: unknown; error?: unknown } | undefined;
      const isError =
        body !== null && typeof body === 'object' && body.error !== undefined && body.output === undefined;
      parts.toolResults.push({
        toolUseId: usableId(response.id) ?? (typeof response.name === 'string' ? response.name : ''),
        content: resultText(isError ? body.error : (body?.output ?? body)),
        ...(isError && { isError: true }),
      });
    }
    if (record.inlineData !== undefined || record.fileData !== undefined) parts.texts.push('[file]');
  }
  return parts;
}
