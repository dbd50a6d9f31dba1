import type {
  ConversationMessage,
  ConversationToolCall,
  ConversationToolResult,
} from '../../contracts/conversation.js';
import { MAX_CONVERSATION_ID_LENGTH } from '../../contracts/conversation.js';
import type { ContentBlock } from '../../contracts/language-model.js';
import type { ParsedTranscript } from './claude-code-transcript.js';
import {
  objectField,
  readTranscriptLines,
  stringField,
  type TranscriptLineOptions,
} from '../../kernel/transcript-lines.js';

/**
 * engram's own transcript: JSON Lines, one message a line, appended as a session runs.
 *
 *   {"type":"message","id":"m1","role":"user","content":"We deploy on Fridays.","timestamp":"2026-01-05T10:00:00.000Z"}
 *   {"type":"message","id":"m2","role":"assistant","content":[{"type":"text","text":"Noted."}],"timestamp":"…"}
 *
 * - `type` is "message"; lines of other types are skipped (room for the session engine's own
 *   records: summaries, metadata), so are torn lines.
 * - `id` is unique in the file and stable; `role` is "user" or "assistant"; `timestamp` is ISO-8601.
 * - `content` is a string or an array of LanguageModel content blocks: `{type:"text",text}`,
 *   `{type:"tool_use",id,name,input}`, `{type:"tool_result",toolUseId,content,isError?}`. A user
 *   line of tool results only is a tool message.
 * - Optional: `sessionId` (else the file name names the session), `meta: true` for text the host
 *   injected rather than the user typed, `wroteMemory: true` when the host wrote memory in that turn.
 */
export const ENGRAM_TRANSCRIPT_LINE_TYPE = 'message';

/** One line of an engram transcript. */
export interface EngramTranscriptLine {
  type: 'message';
  id: string;
  role: 'user' | 'assistant';
  content: string | ContentBlock[];
  timestamp: string;
  sessionId?: string;
  meta?: boolean;
  wroteMemory?: boolean;
}

export interface EngramTranscriptOptions extends TranscriptLineOptions {
  /** Used when no line names its session. */
  sessionId?: string;
}

/** Serializes one message as a transcript line (no newline). */
export function formatEngramTranscriptLine(line: EngramTranscriptLine): string {
  return JSON.stringify(line);
}

/** Reads an engram transcript. Pure: takes the file's text. */
export function parseEngramTranscript(text: string, options: EngramTranscriptOptions = {}): ParsedTranscript {
  const read = readTranscriptLines(text, options);
  const warnings = [...read.warnings];
  const messages: ConversationMessage[] = [];
  const seen = new Set<string>();
  let sessionId: string | undefined;
  for (const { line, record } of read.lines) {
    if (record.type !== ENGRAM_TRANSCRIPT_LINE_TYPE) continue;
    const id = stringField(record, 'id');
    const role = record.role;
    if (
      id === undefined ||
      id.length === 0 ||
      id.length > MAX_CONVERSATION_ID_LENGTH ||
      /[\u0000-\u001F\u007F-\u009F]/.test(id)
    ) {
      warnings.push(`line ${line} has no usable id (1-${MAX_CONVERSATION_ID_LENGTH} characters): skipped`);
      continue;
    }
    if (seen.has(id)) {
      warnings.push(`line ${line} repeats message id ${JSON.stringify(id.slice(0, 60))}: skipped`);
      continue;
    }
    if (role !== 'user' && role !== 'assistant') {
      warnings.push(
        `line ${line} has role ${JSON.stringify(String(role).slice(0, 20))}, not user or assistant: skipped`,
      );
      continue;
    }
    seen.add(id);
    sessionId ??= stringField(record, 'sessionId');
    const parts = readContent(record.content);
    const timestamp = stringField(record, 'timestamp');
    const isTool = role === 'user' && parts.toolResults.length > 0 && parts.text.trim() === '';
    messages.push({
      id,
      role: isTool ? 'tool' : role,
      text: parts.text,
      ...(parts.toolCalls.length > 0 && { toolCalls: parts.toolCalls }),
      ...(parts.toolResults.length > 0 && { toolResults: parts.toolResults }),
      ...(timestamp && { timestamp }),
      ...(record.meta === true && { meta: true }),
      ...(record.wroteMemory === true && { wroteMemory: true }),
    });
  }
  const chosen =
    sessionId !== undefined &&
    sessionId.length > 0 &&
    sessionId.length <= MAX_CONVERSATION_ID_LENGTH &&
    !/[\u0000-\u001F]/.test(sessionId)
      ? sessionId
      : undefined;
  return {
    conversation: { sessionId: chosen ?? options.sessionId ?? 'engram', messages },
    warnings,
    skippedLines: read.skipped,
  };
}

function readContent(content: unknown): {
  text: string;
  toolCalls: ConversationToolCall[];
  toolResults: ConversationToolResult[];
} {
  if (typeof content === 'string') return { text: content, toolCalls: [], toolResults: [] };
  const texts: string[] = [];
  const toolCalls: ConversationToolCall[] = [];
  const toolResults: ConversationToolResult[] = [];
  if (Array.isArray(content)) {
    for (const block of content) {
      if (block === null || typeof block !== 'object' || Array.isArray(block)) continue;
      const item = block as Record<string, unknown>;
      if (item.type === 'text' && typeof item.text === 'string') texts.push(item.text);
      else if (item.type === 'tool_use')
        toolCalls.push({
          id: stringField(item, 'id') ?? '',
          name: stringField(item, 'name') ?? 'unknown',
          input: objectField(item, 'input') ?? {},
        });
      else if (item.type === 'tool_result') {
        toolResults.push({
          toolUseId: stringField(item, 'toolUseId') ?? stringField(item, 'tool_use_id') ?? '',
          content: typeof item.content === 'string' ? item.content : '',
          ...(item.isError === true && { isError: true }),
        });
      }
    }
  }
  return { text: texts.join('\n'), toolCalls, toolResults };
}
