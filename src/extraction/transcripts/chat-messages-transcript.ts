import type {
  ConversationMessage,
  ConversationToolCall,
  ConversationToolResult,
} from '../../contracts/conversation.js';
import {
  objectField,
  readTranscriptLines,
  stringField,
  type TranscriptLineOptions,
} from '../../kernel/transcript-lines.js';
import type { ParsedTranscript } from './claude-code-transcript.js';
import { textFingerprint } from './plain-text-transcript.js';

/**
 * The most common chat log: the messages of an OpenAI or Anthropic API request, as JSON Lines
 * (one `{"role","content"}` a line) or as one JSON array of them (or `{"messages":[…]}`).
 *
 *   {"role":"user","content":"We deploy on Fridays."}
 *   {"role":"assistant","content":[{"type":"text","text":"Noted."}]}
 *
 * - `content` is a string or an array of content blocks: text (`text`, `input_text`, `output_text`),
 *   Anthropic `tool_use`/`tool_result`; OpenAI assistant `tool_calls` and `role: "tool"` answers.
 * - `system` and `developer` messages are the host's instructions, not the conversation: skipped.
 * - Lines name no id: a message's id is its position and a hash of its role and content, so a
 *   log that grows keeps the ids of what was there (a second `engram extract` reads what is new).
 */
export const CHAT_ROLES = new Set(['user', 'assistant', 'system', 'developer', 'tool']);
const INSTRUCTION_ROLES = new Set(['system', 'developer']);
const TEXT_BLOCK_TYPES = new Set(['text', 'input_text', 'output_text']);
const MAX_LISTED_WARNINGS = 20;

export interface ChatMessagesTranscriptOptions extends TranscriptLineOptions {
  sessionId?: string;
}

/** Whether a JSON value looks like one chat message: a known `role` and a string or array `content` (or tool calls). */
export function isChatMessage(value: unknown): boolean {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const record = value as Record<string, unknown>;
  return (
    typeof record.role === 'string' &&
    CHAT_ROLES.has(record.role) &&
    (typeof record.content === 'string' ||
      Array.isArray(record.content) ||
      (record.content === null && Array.isArray(record.tool_calls)))
  );
}

/** Reads chat messages (JSON Lines, a JSON array, or `{"messages":[…]}`). Pure. */
export function parseChatMessagesTranscript(
  text: string,
  options: ChatMessagesTranscriptOptions = {},
): ParsedTranscript {
  const whole = readWholeDocument(text);
  const entries =
    whole ??
    (() => {
      const read = readTranscriptLines(text, options);
      return {
        records: read.lines.map(({ line, record }) => ({ where: `line ${line}`, record })),
        warnings: read.warnings,
        skipped: read.skipped,
      };
    })();
  const problems: string[] = [];
  const messages: ConversationMessage[] = [];
  for (const { where, record } of entries.records) {
    if (!isChatMessage(record)) {
      problems.push(`${where} is not a chat message ({"role","content"}): skipped`);
      continue;
    }
    const role = record.role as string;
    if (INSTRUCTION_ROLES.has(role)) continue;
    const parts = readContent(record);
    if (role !== 'tool' && parts.text.trim() === '' && parts.toolCalls.length === 0 && parts.toolResults.length === 0) {
      problems.push(`${where} is an empty ${role} message: skipped`);
      continue;
    }
    const isTool = role === 'tool' || (role === 'user' && parts.toolResults.length > 0 && parts.text.trim() === '');
    const index = messages.length + 1;
    messages.push({
      id: `m${index}-${textFingerprint(`${role}\n${JSON.stringify(record.content ?? null)}`)}`,
      role: isTool ? 'tool' : role === 'assistant' ? 'assistant' : 'user',
      text: isTool ? '' : parts.text,
      ...(parts.toolCalls.length > 0 && { toolCalls: parts.toolCalls }),
      ...(parts.toolResults.length > 0 && { toolResults: parts.toolResults }),
      ...(typeof record.timestamp === 'string' && { timestamp: record.timestamp }),
    });
  }
  const warnings = [...entries.warnings, ...problems.slice(0, MAX_LISTED_WARNINGS)];
  if (problems.length > MAX_LISTED_WARNINGS)
    warnings.push(`… and ${problems.length - MAX_LISTED_WARNINGS} more skipped`);
  return {
    conversation: { sessionId: options.sessionId ?? 'chat', messages },
    warnings,
    skippedLines: entries.skipped + problems.filter((problem) => !/empty/.test(problem)).length,
  };
}

interface ChatRecords {
  records: Array<{ where: string; record: Record<string, unknown> }>;
  warnings: string[];
  skipped: number;
}

/** The file as one JSON document (an array of messages, or an object with `messages`), or undefined for JSON Lines. */
function readWholeDocument(text: string): ChatRecords | undefined {
  const trimmed = text.trim();
  if (!trimmed.startsWith('[') && !trimmed.startsWith('{')) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(trimmed);
  } catch {
    return undefined;
  }
  const list = Array.isArray(value)
    ? value
    : value !== null && typeof value === 'object' && Array.isArray((value as Record<string, unknown>).messages)
      ? ((value as Record<string, unknown>).messages as unknown[])
      : undefined;
  if (list === undefined) return undefined;
  const records: ChatRecords['records'] = [];
  let skipped = 0;
  const warnings: string[] = [];
  list.forEach((entry, index) => {
    if (entry !== null && typeof entry === 'object' && !Array.isArray(entry))
      records.push({ where: `message ${index + 1}`, record: entry as Record<string, unknown> });
    else {
      skipped += 1;
      if (warnings.length < MAX_LISTED_WARNINGS) warnings.push(`message ${index + 1} is not a JSON object: skipped`);
    }
  });
  return { records, warnings, skipped };
}

function readContent(record: Record<string, unknown>): {
  text: string;
  toolCalls: ConversationToolCall[];
  toolResults: ConversationToolResult[];
} {
  const texts: string[] = [];
  const toolCalls: ConversationToolCall[] = [];
  const toolResults: ConversationToolResult[] = [];
  const content = record.content;
  if (record.role === 'tool') {
    toolResults.push({
      toolUseId: stringField(record, 'tool_call_id') ?? '',
      content: typeof content === 'string' ? content : blockText(content),
    });
    return { text: '', toolCalls, toolResults };
  }
  if (typeof content === 'string') texts.push(content);
  else if (Array.isArray(content)) {
    for (const block of content) {
      if (typeof block === 'string') {
        texts.push(block);
        continue;
      }
      if (block === null || typeof block !== 'object' || Array.isArray(block)) continue;
      const item = block as Record<string, unknown>;
      const type = stringField(item, 'type');
      if (type !== undefined && TEXT_BLOCK_TYPES.has(type) && typeof item.text === 'string') texts.push(item.text);
      else if (type === 'tool_use')
        toolCalls.push({
          id: stringField(item, 'id') ?? '',
          name: stringField(item, 'name') ?? 'unknown',
          input: objectField(item, 'input') ?? {},
        });
      else if (type === 'tool_result')
        toolResults.push({
          toolUseId: stringField(item, 'tool_use_id') ?? '',
          content: typeof item.content === 'string' ? item.content : blockText(item.content),
          ...(item.is_error === true && { isError: true }),
        });
    }
  }
  if (Array.isArray(record.tool_calls)) {
    for (const call of record.tool_calls) {
      if (call === null || typeof call !== 'object' || Array.isArray(call)) continue;
      const item = call as Record<string, unknown>;
      const fn = objectField(item, 'function');
      toolCalls.push({
        id: stringField(item, 'id') ?? '',
        name: (fn && stringField(fn, 'name')) ?? 'unknown',
        input: parseArguments(fn?.arguments),
      });
    }
  }
  return { text: texts.join('\n'), toolCalls, toolResults };
}

function blockText(content: unknown): string {
  if (!Array.isArray(content)) return '';
  return content
    .map((block) =>
      block !== null && typeof block === 'object' && typeof (block as Record<string, unknown>).text === 'string'
        ? ((block as Record<string, unknown>).text as string)
        : '',
    )
    .filter((text) => text !== '')
    .join('\n');
}

function parseArguments(value: unknown): Record<string, unknown> {
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) return value as Record<string, unknown>;
  if (typeof value !== 'string') return {};
  try {
    const parsed: unknown = JSON.parse(value);
    return parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : {};
  } catch {
    return {};
  }
}
