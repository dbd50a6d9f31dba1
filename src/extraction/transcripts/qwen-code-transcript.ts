import { objectField, stringField, type TranscriptLineOptions } from '../../kernel/transcript-lines.js';
import { parseClaudeCodeTranscript, type ParsedTranscript } from './claude-code-transcript.js';
import { readGeminiParts, withoutTaggedBlocks } from './agent-transcript-parts.js';

/**
 * Qwen Code chat files (`~/.qwen/projects/<project slug>/chats/<session id>.jsonl`,
 * test/support/agent-clis.md). Qwen Code keeps Claude Code's line shape (`uuid`, `parentUuid`,
 * `sessionId`, `type` user|assistant|tool_result|system) but its messages hold Gemini API `parts`
 * (text, functionCall, functionResponse) instead of content blocks. Each line is rewritten into the
 * Claude Code shape and read by that reader, so branches, gaps, torn lines and helpers behave the
 * same. Hook context (`<qwen:…-context>` parts) is stripped from the user's text and kept as meta
 * when it holds engram's block; `systemPayload.displayText`, when present, is what the user typed.
 * A user line whose `provenance` is not `real_user` (a notification, a slash command's text) is meta.
 */

export interface QwenCodeTranscriptOptions extends TranscriptLineOptions {
  /** Used when no line names its session (default `qwen-code`). */
  sessionId?: string;
}

const INJECTED_TAG = /<(qwen:[a-z-]+)(?:\s[^>]*)?>/g;

/** Reads a Qwen Code chat file into a conversation. Pure: takes the file's text. */
export function parseQwenCodeTranscript(text: string, options: QwenCodeTranscriptOptions = {}): ParsedTranscript {
  // Line for line, so the line numbers of warnings stay the file's; unreadable lines pass through as they are.
  const rewritten = text
    .split('\n')
    .map((line) => {
      if (line.trim() === '') return line;
      let record: unknown;
      try {
        record = JSON.parse(line);
      } catch {
        return line;
      }
      if (record === null || typeof record !== 'object' || Array.isArray(record)) return line;
      return JSON.stringify(claudeShaped(record as Record<string, unknown>));
    })
    .join('\n');
  return parseClaudeCodeTranscript(rewritten, { ...options, sessionId: options.sessionId ?? 'qwen-code' });
}

function claudeShaped(record: Record<string, unknown>): Record<string, unknown> {
  const type = stringField(record, 'type');
  const message = objectField(record, 'message');
  if (!message || (type !== 'user' && type !== 'assistant' && type !== 'tool_result')) {
    // System lines stay links of the chain; their payload is not conversation text.
    const { message: _message, systemPayload: _payload, ...rest } = record;
    return type === 'user' || type === 'assistant' ? { ...rest, type: 'system' } : rest;
  }
  const parts = readGeminiParts(message.parts ?? message.content);
  const { message: _message, systemPayload, ...rest } = record;
  if (type === 'assistant') {
    const content = [
      ...parts.texts.map((text) => ({ type: 'text', text })),
      ...parts.toolCalls.map((call) => ({ type: 'tool_use', id: call.id, name: call.name, input: call.input })),
    ];
    // One model answer is one line in Qwen Code: its uuid is the answer's id.
    return { ...rest, type: 'assistant', message: { id: record.uuid, role: 'assistant', content } };
  }
  const results = parts.toolResults.map((result) => ({
    type: 'tool_result',
    tool_use_id: result.toolUseId,
    content: result.content,
    ...(result.isError === true && { is_error: true }),
  }));
  if (results.length > 0) return { ...rest, type: 'user', message: { role: 'user', content: results } };
  const injected: string[] = [];
  const typed: string[] = [];
  for (const text of parts.texts) {
    const tags = [...new Set([...text.matchAll(INJECTED_TAG)].map((match) => match[1]!))];
    const clean = withoutTaggedBlocks(text, tags);
    injected.push(...clean.removed);
    if (clean.text !== '') typed.push(clean.text);
  }
  const payload =
    systemPayload !== null && typeof systemPayload === 'object' ? (systemPayload as Record<string, unknown>) : {};
  const shown = typeof payload.displayText === 'string' ? payload.displayText : typed.join('\n');
  const generated = typeof record.provenance === 'string' && record.provenance !== 'real_user';
  return {
    ...rest,
    type: 'user',
    message: { role: 'user', content: shown },
    ...(generated && { isMeta: true }),
    // Injected hook output goes the way Claude Code's does: an attachment the reader keeps only for engram's block.
    ...(injected.length > 0 && { attachment: { type: 'hook_additional_context', content: injected } }),
  };
}
