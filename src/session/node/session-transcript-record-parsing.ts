import type { ContentBlock, LanguageModelUsage } from '../../contracts/language-model.js';
import type {
  CompactBoundary,
  SessionMessage,
  SessionMetadata,
  TodoItem,
  TodoStatus,
} from '../../contracts/session-message.js';

/**
 * One transcript line's record read back into engram's shapes: a message (Anthropic wire blocks to
 * engram's), usage, a compact boundary, a todo list, metadata. Fields of the wrong type are left
 * out or give undefined (the reader then skips the line), never an error.
 */

const TODO_STATUSES = new Set<TodoStatus>(['pending', 'in_progress', 'completed']);

export function readMessage(
  uuid: string,
  role: 'user' | 'assistant',
  record: Record<string, unknown>,
): SessionMessage | undefined {
  const body = record.message;
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return undefined;
  const wire = body as Record<string, unknown>;
  const content = readContent(wire.content);
  if (content === undefined) return undefined;
  const timestamp = typeof record.timestamp === 'string' ? record.timestamp : '';
  const usage = role === 'assistant' ? readUsage(wire.usage) : undefined;
  return {
    uuid,
    role,
    content,
    timestamp,
    ...(record.isMeta === true && { meta: true }),
    ...(record.isCompactSummary === true && { compactSummary: true }),
    ...(usage && { usage }),
    ...(role === 'assistant' && typeof wire.model === 'string' && wire.model !== '' && { model: wire.model }),
  };
}

/** Anthropic wire blocks back to engram's; thinking, images and unknown blocks are left out. */
function readContent(content: unknown): string | ContentBlock[] | undefined {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return undefined;
  const blocks: ContentBlock[] = [];
  for (const item of content) {
    if (item === null || typeof item !== 'object') continue;
    const block = item as Record<string, unknown>;
    if (block.type === 'text' && typeof block.text === 'string') blocks.push({ type: 'text', text: block.text });
    else if (block.type === 'tool_use' && typeof block.id === 'string' && typeof block.name === 'string') {
      const input =
        block.input !== null && typeof block.input === 'object' && !Array.isArray(block.input)
          ? (block.input as Record<string, unknown>)
          : {};
      blocks.push({ type: 'tool_use', id: block.id, name: block.name, input });
    } else if (block.type === 'tool_result' && typeof block.tool_use_id === 'string') {
      blocks.push({
        type: 'tool_result',
        toolUseId: block.tool_use_id,
        content: resultText(block.content),
        ...(block.is_error === true && { isError: true }),
      });
    }
  }
  return blocks;
}

function resultText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((block) =>
      block !== null && typeof block === 'object' && typeof (block as { text?: unknown }).text === 'string'
        ? (block as { text: string }).text
        : '',
    )
    .filter((text) => text !== '')
    .join('\n');
}

function readUsage(value: unknown): LanguageModelUsage | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  const usage = value as Record<string, unknown>;
  const count = (field: unknown): number | undefined =>
    typeof field === 'number' && Number.isFinite(field) && field >= 0 ? field : undefined;
  const inputTokens = count(usage.input_tokens);
  const outputTokens = count(usage.output_tokens);
  if (inputTokens === undefined || outputTokens === undefined) return undefined;
  const cacheRead = count(usage.cache_read_input_tokens);
  const cacheWrite = count(usage.cache_creation_input_tokens);
  return {
    inputTokens,
    outputTokens,
    ...(cacheRead !== undefined && { cacheReadTokens: cacheRead }),
    ...(cacheWrite !== undefined && { cacheWriteTokens: cacheWrite }),
  };
}

export function readBoundary(uuid: string, record: Record<string, unknown>): CompactBoundary {
  const compact = objectOrEmpty(record.compactMetadata);
  const engram = objectOrEmpty(record.engramBoundary);
  const strings = (value: unknown): string[] | undefined =>
    Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : undefined;
  const activeSkills = strings(engram.activeSkills);
  const gitBranch =
    typeof engram.gitBranch === 'string'
      ? engram.gitBranch
      : typeof record.gitBranch === 'string'
        ? record.gitBranch
        : '';
  return {
    uuid,
    timestamp: typeof record.timestamp === 'string' ? record.timestamp : '',
    trigger: compact.trigger === 'manual' ? 'manual' : 'auto',
    method: engram.method === 'notes' ? 'notes' : 'summary',
    preTokens: typeof compact.preTokens === 'number' && Number.isFinite(compact.preTokens) ? compact.preTokens : 0,
    ...(typeof record.logicalParentUuid === 'string' && { lastSummarizedUuid: record.logicalParentUuid }),
    filesEdited: strings(engram.filesEdited) ?? [],
    ...(typeof engram.plan === 'string' && { plan: engram.plan }),
    ...(activeSkills && { activeSkills }),
    gitBranch,
  };
}

export function readTodos(value: unknown): TodoItem[] | undefined {
  if (!Array.isArray(value)) return undefined;
  const todos: TodoItem[] = [];
  for (const item of value) {
    if (item === null || typeof item !== 'object') return undefined;
    const todo = item as Record<string, unknown>;
    if (typeof todo.content !== 'string' || !TODO_STATUSES.has(todo.status as TodoStatus)) return undefined;
    todos.push({
      content: todo.content,
      status: todo.status as TodoStatus,
      ...(typeof todo.activeForm === 'string' && { activeForm: todo.activeForm }),
    });
  }
  return todos;
}

/** The metadata fields of a line that have the right types; the rest are dropped. */
export function readMetadata(value: unknown): Partial<SessionMetadata> | undefined {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
  const source = value as Record<string, unknown>;
  const metadata: Partial<SessionMetadata> = {};
  for (const key of ['title', 'cwd', 'gitBranch', 'model', 'createdAt', 'updatedAt'] as const) {
    if (typeof source[key] === 'string') metadata[key] = source[key];
  }
  if (Array.isArray(source.tags)) metadata.tags = source.tags.filter((tag): tag is string => typeof tag === 'string');
  if (typeof source.messageCount === 'number' && Number.isInteger(source.messageCount) && source.messageCount >= 0)
    metadata.messageCount = source.messageCount;
  return metadata;
}

function objectOrEmpty(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}
