import type { ConversationMessage } from '../../contracts/conversation.js';
import {
  objectField,
  readTranscriptLines,
  stringField,
  type TranscriptLineOptions,
} from '../../kernel/transcript-lines.js';
import type { ParsedTranscript } from './claude-code-transcript.js';
import { nonEmptyMessages, recalledContextMessage, resultText, toolInput, usableId } from './agent-transcript-parts.js';

/**
 * GitHub Copilot CLI session logs (`~/.copilot/session-state/<session id>/events.jsonl`,
 * test/support/agent-clis.md): one event a line, `{type, data, id, timestamp, parentId}`. The
 * conversation is `user.message` (`data.content` is what the user typed; `transformedContent` adds
 * the date and hook context, so it is not read), `assistant.message` (`content`, `toolRequests`) and
 * `tool.execution_complete` (`result.content`, `success`). A resumed session appends to the same
 * file. Hook output that carries engram's `<memory_context>` (a `hook.end` event) is kept as a meta
 * message; compaction summaries are meta. Events of a helper (they carry `parentToolCallId`) are
 * not the main conversation and are counted as off the branch.
 */

export interface CopilotCliTranscriptOptions extends TranscriptLineOptions {
  /** Used when no session.start event names the session (default `copilot-cli`). */
  sessionId?: string;
}

/** Reads a Copilot CLI events.jsonl into a conversation. Pure: takes the file's text. */
export function parseCopilotCliTranscript(text: string, options: CopilotCliTranscriptOptions = {}): ParsedTranscript {
  const read = readTranscriptLines(text, options);
  const warnings = [...read.warnings];
  const messages: ConversationMessage[] = [];
  const seen = new Set<string>();
  let sessionId: string | undefined;
  let helperEvents = 0;
  for (const { line, record } of read.lines) {
    const type = stringField(record, 'type');
    const data = objectField(record, 'data');
    if (!type || !data) continue;
    const id = usableId(record.id) ?? `line-${line}`;
    if (seen.has(id)) continue;
    seen.add(id);
    const timestamp = stringField(record, 'timestamp');
    const at = timestamp ? { timestamp } : {};
    if (type === 'session.start') {
      sessionId ??= usableId(data.sessionId);
      continue;
    }
    if (
      data.parentToolCallId !== undefined &&
      (type === 'user.message' || type === 'assistant.message' || type.startsWith('tool.'))
    ) {
      helperEvents += 1;
      continue;
    }
    if (type === 'user.message') {
      const content = typeof data.content === 'string' ? data.content : resultText(data.content);
      messages.push({ id, role: 'user', text: content, ...at, ...(data.source === 'system' && { meta: true }) });
      continue;
    }
    if (type === 'assistant.message') {
      const requests = Array.isArray(data.toolRequests) ? (data.toolRequests as Array<Record<string, unknown>>) : [];
      const toolCalls = requests.map((request, index) => ({
        id: usableId(request.toolCallId) ?? `${id}:call-${index}`,
        name: typeof request.name === 'string' ? request.name : 'unknown',
        input: toolInput(request.arguments),
      }));
      const content = typeof data.content === 'string' ? data.content : resultText(data.content);
      messages.push({ id, role: 'assistant', text: content, ...(toolCalls.length > 0 && { toolCalls }), ...at });
      continue;
    }
    if (type === 'tool.execution_complete') {
      const result = objectField(data, 'result');
      const error = objectField(data, 'error');
      const failed = data.success === false;
      const content = resultText(result?.content ?? (error ? (error.message ?? error) : undefined));
      messages.push({
        id,
        role: 'tool',
        text: '',
        toolResults: [{ toolUseId: usableId(data.toolCallId) ?? '', content, ...(failed && { isError: true }) }],
        ...at,
      });
      continue;
    }
    if (type === 'hook.end') {
      const output = objectField(data, 'output');
      const context = output && typeof output.additionalContext === 'string' ? [output.additionalContext] : [];
      const recalled = recalledContextMessage(id, context, timestamp);
      if (recalled) messages.push(recalled);
      continue;
    }
    if (type.includes('compaction') && typeof data.summaryContent === 'string') {
      messages.push({ id, role: 'user', text: data.summaryContent, meta: true, ...at });
    }
  }
  if (helperEvents > 0)
    warnings.push(
      `${helperEvents} event${helperEvents === 1 ? ' is' : 's are'} a helper's (subagent's): left out of the main conversation`,
    );
  return {
    conversation: { sessionId: sessionId ?? options.sessionId ?? 'copilot-cli', messages: nonEmptyMessages(messages) },
    warnings,
    skippedLines: read.skipped,
    ...(helperEvents > 0 && { offBranchLines: helperEvents }),
  };
}
