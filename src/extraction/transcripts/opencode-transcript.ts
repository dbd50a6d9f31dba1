import type {
  ConversationMessage,
  ConversationToolCall,
  ConversationToolResult,
} from '../../contracts/conversation.js';
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
 * OpenCode sessions. OpenCode 1.x keeps them in a SQLite database
 * (`~/.local/share/opencode/opencode.db`: tables `session`, `message`, `part`, each row's `data` a
 * JSON text; test/support/agent-clis.md); older versions wrote the same JSON as files under
 * `storage/message/<session>/` and `storage/part/<message>/`. Either way a session is its messages
 * (`role` user|assistant) and each message's parts: `text` (a `synthetic` one was added by OpenCode or
 * a plugin, such as engram's own context, and is never the user's words), `tool` (`callID`, `tool`,
 * `state.input`, `state.output` or `state.error`), `file`, and bookkeeping (`step-start`,
 * `step-finish`, `snapshot`, `patch`, `reasoning`) that is not conversation. A session with a
 * `parent_id` is a helper's (a subagent's task). The reader of the database is
 * `extraction/node/read-opencode-session.ts`; this part is pure.
 */

/** One session as stored: its row and its messages' and parts' rows (any order: sorted here). */
export interface OpenCodeSessionRows {
  session: { id: string; parentId?: string | null; directory?: string; title?: string };
  messages: ReadonlyArray<{ id: string; timeCreated?: number; data: string }>;
  parts: ReadonlyArray<{ id: string; messageId: string; timeCreated?: number; data: string }>;
}

// `opencode run "a b"` (1.18) stores its prompt as `"a b"`: it joins its arguments, each one holding a
// space wrapped in double quotes with its own quotes escaped. Left so, the whole prompt reads as
// quoted speech, which the explicit-memory rules never take as the user's own ("remember that …").
/** A user message as typed: one `opencode run` argument unwrapped; anything else as it is. */
export function typedPrompt(text: string): string {
  if (text.length < 3 || !text.startsWith('"') || !text.endsWith('"')) return text;
  const inner = text.slice(1, -1);
  // Only what `opencode run` makes: a space inside, and every quote inside escaped.
  if (!/\s/.test(inner) || /(^|[^\\])"/.test(inner)) return text;
  return inner.replace(/\\"/g, '"');
}

/** Builds a session's conversation from its rows; a row whose JSON cannot be read is skipped with a warning. */
export function parseOpenCodeSession(rows: OpenCodeSessionRows): ParsedTranscript {
  const warnings: string[] = [];
  let skippedLines = 0;
  const json = (text: string, what: string): Record<string, unknown> | undefined => {
    try {
      const value = JSON.parse(text) as unknown;
      if (value !== null && typeof value === 'object' && !Array.isArray(value)) return value as Record<string, unknown>;
    } catch {
      // Reported below.
    }
    skippedLines += 1;
    if (skippedLines <= 20) warnings.push(`${what} is not a JSON object: skipped`);
    return undefined;
  };
  const partsOf = new Map<string, Array<{ id: string; order: number; data: Record<string, unknown> }>>();
  for (const part of rows.parts) {
    const data = json(part.data, `part ${part.id}`);
    if (!data) continue;
    const list = partsOf.get(part.messageId) ?? [];
    list.push({ id: part.id, order: part.timeCreated ?? 0, data });
    partsOf.set(part.messageId, list);
  }
  // OpenCode's ids sort in creation order (time-based); the creation time comes first when known.
  const ordered = [...rows.messages].sort(
    (a, b) => (a.timeCreated ?? 0) - (b.timeCreated ?? 0) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0),
  );
  const messages: ConversationMessage[] = [];
  for (const row of ordered) {
    const data = json(row.data, `message ${row.id}`);
    const id = usableId(row.id);
    if (!data || !id) continue;
    const created = (data.time as { created?: unknown } | undefined)?.created;
    const timestamp =
      typeof created === 'number' && Number.isFinite(created) ? new Date(created).toISOString() : undefined;
    const at = timestamp ? { timestamp } : {};
    const parts = (partsOf.get(row.id) ?? []).sort((a, b) => a.order - b.order || (a.id < b.id ? -1 : 1));
    const texts: string[] = [];
    const injected: string[] = [];
    const toolCalls: ConversationToolCall[] = [];
    const toolResults: ConversationToolResult[] = [];
    for (const { data: part } of parts) {
      if (part.type === 'text' && typeof part.text === 'string') {
        if (part.synthetic === true || part.ignored === true) injected.push(part.text);
        else texts.push(part.text);
      } else if (part.type === 'file')
        texts.push(`[file${typeof part.filename === 'string' ? ` ${part.filename}` : ''}]`);
      else if (part.type === 'tool') {
        const state = (part.state ?? {}) as Record<string, unknown>;
        const callId = usableId(part.callID) ?? usableId(part.id) ?? `${id}:call-${toolCalls.length}`;
        toolCalls.push({
          id: callId,
          name: typeof part.tool === 'string' ? part.tool : 'unknown',
          input: toolInput(state.input),
        });
        if (state.status === 'completed' || state.status === 'error')
          toolResults.push({
            toolUseId: callId,
            content: resultText(state.status === 'error' ? state.error : state.output),
            ...(state.status === 'error' && { isError: true }),
          });
      }
    }
    if (data.role === 'assistant') {
      const summary = data.summary === true;
      messages.push({
        id,
        role: summary ? 'user' : 'assistant',
        text: texts.join('\n'),
        ...(!summary && toolCalls.length > 0 && { toolCalls }),
        ...(summary && { meta: true }),
        ...at,
      });
      if (toolResults.length > 0) messages.push({ id: `${id}:results`, role: 'tool', text: '', toolResults, ...at });
      continue;
    }
    if (data.role !== 'user') continue;
    const recalled = recalledContextMessage(`${id}:context`, injected, timestamp);
    if (recalled) messages.push(recalled);
    const compaction = parts.some(({ data: part }) => part.type === 'compaction');
    messages.push({ id, role: 'user', text: typedPrompt(texts.join('\n')), ...at, ...(compaction && { meta: true }) });
  }
  const own = usableId(rows.session.id) ?? 'opencode';
  const parent = usableId(rows.session.parentId ?? undefined);
  return {
    conversation: { sessionId: parent ? helperSessionId(parent, own) : own, messages: nonEmptyMessages(messages) },
    warnings: skippedLines > 20 ? [...warnings, `… and ${skippedLines - 20} more rows skipped`] : warnings,
    skippedLines,
    ...(parent && { sidechain: true }),
  };
}
