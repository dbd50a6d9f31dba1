import type { ConversationMessage } from '../../contracts/conversation.js';
import {
  objectField,
  readTranscriptLines,
  stringField,
  type TranscriptLineOptions,
} from '../../kernel/transcript-lines.js';
import type { ParsedTranscript } from './claude-code-transcript.js';
import {
  helperSessionId,
  nonEmptyMessages,
  recalledContextMessage,
  resultText,
  toolInput,
  usableId,
} from './agent-transcript-parts.js';

/**
 * Codex session files ("rollouts", `~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl`,
 * test/support/agent-clis.md): one `{timestamp, type, payload}` record a line. The conversation is in
 * `response_item` records, exactly as sent to the Responses API: `message` items (role `user`,
 * `assistant`, or `developer` for instructions and hook context), `function_call` /
 * `custom_tool_call` / `local_shell_call` items and their `*_output` items. `event_msg` records repeat
 * what the UI showed and are not read. A `compacted` record (the summary that replaced the history)
 * becomes a meta message. Files are appended to (a resumed session goes on in the same file), so a
 * message's id is its item id, or its line number when it has none.
 */

export interface CodexRolloutOptions extends TranscriptLineOptions {
  /** Used when no session_meta record names the thread (default `codex`). */
  sessionId?: string;
}

/** User-role texts Codex writes itself: environment, AGENTS.md and instruction blocks, never typed. */
const GENERATED_USER_TEXT =
  /^\s*(?:<environment_context>|<user_instructions>|<turn_aborted>|<user_shell_command>|<subagent_notification>|# AGENTS\.md instructions for )/;
const CALL_TYPES = new Set(['function_call', 'custom_tool_call', 'local_shell_call', 'tool_search_call']);
const OUTPUT_TYPES = new Set(['function_call_output', 'custom_tool_call_output', 'local_shell_call_output']);

/** Reads a Codex rollout into a conversation. Pure: takes the file's text. */
export function parseCodexRollout(text: string, options: CodexRolloutOptions = {}): ParsedTranscript {
  const read = readTranscriptLines(text, options);
  const warnings = [...read.warnings];
  const messages: ConversationMessage[] = [];
  const seen = new Set<string>();
  let threadId: string | undefined;
  let parentThread: string | undefined;
  let helper = false;
  let reply: ConversationMessage | undefined;
  for (const { line, record } of read.lines) {
    const type = stringField(record, 'type');
    const payload = objectField(record, 'payload');
    const timestamp = stringField(record, 'timestamp');
    if (type === 'session_meta' && payload) {
      // A resumed or forked thread writes its meta again: the first one names the file's thread.
      threadId ??= usableId(payload.id) ?? usableId(payload.session_id);
      const source = payload.source;
      if (source !== null && typeof source === 'object' && 'subagent' in source) {
        helper = true;
        parentThread ??= findString(source, 'parent_thread_id');
      }
      continue;
    }
    if (type === 'compacted' && payload) {
      reply = undefined;
      const summary = stringField(payload, 'message') ?? '';
      const id = `compacted-${line}`;
      if (summary.trim() !== '')
        messages.push({ id, role: 'user', text: summary, meta: true, ...(timestamp && { timestamp }) });
      continue;
    }
    if (type !== 'response_item' || !payload) continue;
    const itemType = stringField(payload, 'type') ?? 'message';
    let id = usableId(payload.id) ?? `line-${line}`;
    if (seen.has(id)) {
      // The same item written twice (a resumed thread replays its history into a new file's head): once.
      continue;
    }
    seen.add(id);
    if (itemType === 'message') {
      const role = stringField(payload, 'role');
      const texts = contentTexts(payload.content);
      const joined = texts.join('\n');
      if (role === 'assistant') {
        reply = { id, role: 'assistant', text: joined, ...(timestamp && { timestamp }) };
        messages.push(reply);
        continue;
      }
      reply = undefined;
      if (role === 'user') {
        const generated = GENERATED_USER_TEXT.test(joined);
        messages.push({
          id,
          role: 'user',
          text: joined,
          ...(timestamp && { timestamp }),
          ...(generated && { meta: true }),
        });
        continue;
      }
      // developer/system: instructions and hook context; only engram's own block is worth keeping.
      const recalled = recalledContextMessage(id, texts, timestamp);
      if (recalled) messages.push(recalled);
      continue;
    }
    if (CALL_TYPES.has(itemType)) {
      const callId = usableId(payload.call_id) ?? id;
      const call = {
        id: callId,
        name: stringField(payload, 'name') ?? (itemType === 'local_shell_call' ? 'local_shell' : 'unknown'),
        input:
          itemType === 'custom_tool_call'
            ? { input: payload.input }
            : itemType === 'local_shell_call'
              ? toolInput(payload.action)
              : toolInput(payload.arguments),
      };
      // A call right after the reply it belongs to joins it, as one API response.
      if (reply) {
        reply.toolCalls = [...(reply.toolCalls ?? []), call];
        reply.partIds = [...(reply.partIds ?? [reply.id]), id];
        reply.id = id;
        continue;
      }
      reply = { id, role: 'assistant', text: '', toolCalls: [call], ...(timestamp && { timestamp }) };
      messages.push(reply);
      continue;
    }
    if (OUTPUT_TYPES.has(itemType)) {
      reply = undefined;
      const output = payload.output;
      const body =
        output !== null && typeof output === 'object' && !Array.isArray(output)
          ? (output as Record<string, unknown>)
          : undefined;
      const content = resultText(body ? (body.content ?? body.output ?? body) : output);
      const failed = body?.success === false;
      id = usableId(payload.id) ?? id;
      messages.push({
        id,
        role: 'tool',
        text: '',
        toolResults: [{ toolUseId: usableId(payload.call_id) ?? '', content, ...(failed && { isError: true }) }],
        ...(timestamp && { timestamp }),
      });
      continue;
    }
    // reasoning, web_search_call, image generation and item types of later versions: not conversation text.
  }
  const named = threadId ?? options.sessionId ?? 'codex';
  const sessionId = helper ? helperSessionId(parentThread, named) : named;
  if (threadId === undefined && read.lines.length > 0)
    warnings.push('no session_meta record names the thread: the session id comes from the file');
  return {
    conversation: { sessionId, messages: nonEmptyMessages(messages) },
    warnings,
    skippedLines: read.skipped,
    ...(helper && { sidechain: true }),
  };
}

function contentTexts(content: unknown): string[] {
  if (typeof content === 'string') return [content];
  if (!Array.isArray(content)) return [];
  const texts: string[] = [];
  for (const part of content) {
    if (part === null || typeof part !== 'object') continue;
    const item = part as Record<string, unknown>;
    if (typeof item.text === 'string') texts.push(item.text);
    else if (item.type === 'input_image') texts.push('[image]');
  }
  return texts;
}

/** The first string under `key` anywhere inside a value (bounded depth). */
function findString(value: unknown, key: string, depth = 0): string | undefined {
  if (depth > 6 || value === null || typeof value !== 'object') return undefined;
  for (const [name, item] of Object.entries(value)) {
    if (name === key && usableId(item)) return item as string;
    const found = findString(item, key, depth + 1);
    if (found) return found;
  }
  return undefined;
}
