import type { ConversationMessage } from '../../contracts/conversation.js';
import { readTranscriptLines, stringField, type TranscriptLineOptions } from '../../kernel/transcript-lines.js';
import type { ParsedTranscript } from './claude-code-transcript.js';
import {
  helperSessionId,
  nonEmptyMessages,
  readGeminiParts,
  recalledContextMessage,
  resultText,
  usableId,
  withoutTaggedBlocks,
} from './agent-transcript-parts.js';

/**
 * Gemini CLI chat files (`~/.gemini/tmp/<project>/chats/session-<time>-<id8>.jsonl`; a helper's in
 * `chats/<parent session id>/<id>.jsonl`; test/support/agent-clis.md). Since 0.3x a JSON Lines log that
 * Gemini CLI replays the way this reader does: a metadata record (`sessionId`, `projectHash`, `kind`),
 * message records (`id`, `type` user|gemini|info|error|warning, `content` as Gemini API parts; the
 * same id written again replaces the message in place), `{"$set": {...}}` updates (a `messages`
 * array is a checkpoint that replaces everything), and `{"$rewindTo": id}` (that message and all after
 * it are dropped). Older versions wrote one JSON document `{sessionId, messages: [...]}`; it is read too.
 * Hook context arrives inside user messages as `<hook_context>` blocks and is stripped; the
 * `<session_context>` message Gemini CLI writes at the start is meta.
 */

export interface GeminiCliTranscriptOptions extends TranscriptLineOptions {
  /** Used when no record names the session (default `gemini-cli`). */
  sessionId?: string;
  /** The parent session of a helper's file (its folder's name), for the helper's own session id. */
  parentSessionId?: string;
}

const INJECTED_TAGS = ['hook_context'] as const;
const GENERATED_USER_TEXT = /^\s*<session_context>/;
const RESUME_COPY = '_response';

type MessageRecord = Record<string, unknown> & { id: string };

/** Reads a Gemini CLI chat file into a conversation. Pure: takes the file's text. */
export function parseGeminiCliTranscript(text: string, options: GeminiCliTranscriptOptions = {}): ParsedTranscript {
  const document = wholeDocument(text);
  const read = document
    ? { lines: [{ line: 1, record: document }], warnings: [] as string[], skipped: 0 }
    : readTranscriptLines(text, options);
  const warnings = [...read.warnings];
  let records = new Map<string, MessageRecord>();
  const metadata: Record<string, unknown> = {};
  let rewinds = 0;
  const take = (record: unknown): void => {
    if (record === null || typeof record !== 'object' || Array.isArray(record)) return;
    const message = record as Record<string, unknown>;
    const id = usableId(message.id);
    if (id === undefined) return;
    // Map order is first insertion, as in Gemini CLI: a rewritten message keeps its place.
    records.set(id, { ...message, id });
  };
  for (const { line, record } of read.lines) {
    if (typeof record.$rewindTo === 'string') {
      rewinds += 1;
      const kept = new Map<string, MessageRecord>();
      let found = false;
      for (const [id, message] of records) {
        if (id === record.$rewindTo) found = true;
        if (!found) kept.set(id, message);
      }
      if (!found)
        warnings.push(
          `line ${line} rewinds to a message that is not in the file: the conversation before it is dropped`,
        );
      records = kept;
      continue;
    }
    const update = record.$set;
    if (update !== null && typeof update === 'object' && !Array.isArray(update)) {
      const fields = update as Record<string, unknown>;
      if (Array.isArray(fields.messages)) {
        records = new Map();
        for (const message of fields.messages) take(message);
      }
      Object.assign(metadata, { ...fields, messages: undefined });
      continue;
    }
    if (typeof record.sessionId === 'string' && typeof record.projectHash === 'string') {
      Object.assign(metadata, { ...record, messages: undefined });
      if (Array.isArray(record.messages)) for (const message of record.messages) take(message);
      continue;
    }
    if (usableId(record.id) !== undefined) take(record);
  }
  const messages = toMessages([...records.values()]);
  const named = usableId(metadata.sessionId) ?? options.sessionId ?? 'gemini-cli';
  const helper = metadata.kind === 'subagent';
  const sessionId = helper ? helperSessionId(options.parentSessionId, named) : named;
  if (rewinds > 0)
    warnings.push(
      `${rewinds} rewind${rewinds === 1 ? '' : 's'} applied: messages after each rewind point are left out`,
    );
  return {
    conversation: { sessionId, messages: nonEmptyMessages(messages) },
    warnings,
    skippedLines: read.skipped,
    ...(helper && { sidechain: true }),
  };
}

function toMessages(records: readonly MessageRecord[]): ConversationMessage[] {
  // Calls answered by a user message of their own. A resumed session's checkpoint adds a copy of each
  // answer under `<model message id>_response` beside the original: the original is kept, the copy left out.
  const answered = new Set<string>();
  for (const record of records)
    if (record.type === 'user' && !record.id.endsWith(RESUME_COPY))
      for (const result of readGeminiParts(record.content).toolResults) answered.add(result.toolUseId);
  const messages: ConversationMessage[] = [];
  for (const record of records) {
    const timestamp = stringField(record, 'timestamp');
    const at = timestamp ? { timestamp } : {};
    const parts = readGeminiParts(record.content);
    if (record.type === 'gemini') {
      const calls = Array.isArray(record.toolCalls) ? (record.toolCalls as Array<Record<string, unknown>>) : [];
      const toolCalls = calls.map((call, index) => ({
        id: usableId(call.id) ?? `${record.id}:call-${index}`,
        name: typeof call.name === 'string' ? call.name : 'unknown',
        input: call.args !== null && typeof call.args === 'object' ? (call.args as Record<string, unknown>) : {},
      }));
      // A checkpoint (resume) writes the calls as functionCall parts of the content instead.
      const listed = new Set(toolCalls.map((call) => call.id));
      toolCalls.push(...parts.toolCalls.filter((call) => !listed.has(call.id)));
      messages.push({
        id: record.id,
        role: 'assistant',
        text: parts.texts.join('\n'),
        ...(toolCalls.length > 0 && { toolCalls }),
        ...at,
      });
      // Older files keep results only on the call; a later user message with the functionResponse wins.
      const results = calls.flatMap((call, index) => {
        const id = toolCalls[index]!.id;
        if (answered.has(id) || call.result === undefined || call.result === null) return [];
        const failed = call.status === 'error' || call.status === 'cancelled';
        return [
          {
            toolUseId: id,
            content: resultText(
              readGeminiParts(call.result)
                .toolResults.map((result) => result.content)
                .join('\n') || call.result,
            ),
            ...(failed && { isError: true }),
          },
        ];
      });
      if (results.length > 0)
        messages.push({ id: `${record.id}:results`, role: 'tool', text: '', toolResults: results, ...at });
      continue;
    }
    if (record.type !== 'user') continue; // info, error and warning lines are the UI's, not the conversation's
    if (parts.toolResults.length > 0) {
      const copy = record.id.endsWith(RESUME_COPY);
      const toolResults = parts.toolResults.filter((result) => !copy || !answered.has(result.toolUseId));
      if (toolResults.length > 0) messages.push({ id: record.id, role: 'tool', text: '', toolResults, ...at });
      continue;
    }
    const injected: string[] = [];
    const typed: string[] = [];
    for (const text of parts.texts) {
      const clean = withoutTaggedBlocks(text, INJECTED_TAGS);
      injected.push(...clean.removed);
      if (clean.text !== '') typed.push(clean.text);
    }
    const recalled = recalledContextMessage(`${record.id}:context`, injected, timestamp);
    if (recalled) messages.push(recalled);
    const text = typed.join('\n');
    messages.push({ id: record.id, role: 'user', text, ...at, ...(GENERATED_USER_TEXT.test(text) && { meta: true }) });
  }
  return messages;
}

/** A pre-JSONL chat file: one JSON document with `messages`. */
function wholeDocument(text: string): Record<string, unknown> | undefined {
  const trimmed = text.trimStart();
  if (!trimmed.startsWith('{') || !/^\{\s*\n/.test(trimmed)) return undefined;
  try {
    const value = JSON.parse(trimmed) as unknown;
    return value !== null && typeof value === 'object' && Array.isArray((value as { messages?: unknown }).messages)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}
