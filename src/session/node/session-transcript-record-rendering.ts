import { EngramError } from '../../kernel/errors.js';
import type { ContentBlock, LanguageModelUsage } from '../../contracts/language-model.js';
import type {
  CompactBoundary,
  SessionMessage,
  SessionMetadata,
  SessionTranscriptEntry,
} from '../../contracts/session-message.js';

/**
 * A transcript entry as the JSON record of its line, in Claude Code's envelope (FORMATS.md
 * §2.2/§2.3), each field checked first: a malformed entry is refused with INVALID_INPUT. The
 * metadata line is the writer's (it reports what the writer saw); its check lives here.
 */

/** What every line of one transcript carries: the session, where it ran, engram's version, the helper agent of a sidechain. */
export interface TranscriptLineContext {
  sessionId: string;
  cwd: string;
  gitBranch: string;
  version: string;
  sidechain: { isSidechain: boolean; agentId?: string };
  now: () => Date;
}

export function sidechainFields(line: TranscriptLineContext): Record<string, unknown> {
  return line.sidechain.agentId === undefined ? {} : { agentId: line.sidechain.agentId };
}

function envelope(
  line: TranscriptLineContext,
  uuid: string,
  parentUuid: string | null,
  timestamp: string,
): Record<string, unknown> {
  return {
    uuid,
    parentUuid,
    sessionId: line.sessionId,
    timestamp,
    cwd: line.cwd,
    gitBranch: line.gitBranch,
    version: line.version,
    userType: 'external',
    isSidechain: line.sidechain.isSidechain,
    ...sidechainFields(line),
  };
}

/** The record of a message, compact boundary, todo list or file snapshot entry. */
export function transcriptRecord(
  entry: Exclude<SessionTranscriptEntry, { kind: 'metadata' }>,
  line: TranscriptLineContext,
): Record<string, unknown> {
  if (entry === null || typeof entry !== 'object') throw invalid('a transcript entry must be an object with a kind');
  switch (entry.kind) {
    case 'message':
      return messageRecord(entry.message, entry.parentUuid, line);
    case 'compact-boundary':
      return boundaryRecord(entry.boundary, line);
    case 'todos':
      if (!Array.isArray(entry.todos)) throw invalid('a todos entry needs a todos array');
      return {
        type: 'engram-todos',
        sessionId: line.sessionId,
        timestamp: checkedTimestamp(entry.timestamp),
        todos: entry.todos,
        ...sidechainFields(line),
      };
    case 'file-snapshot': {
      if (!Array.isArray(entry.files)) throw invalid('a file-snapshot entry needs a files array');
      const messageId = checkedId(entry.messageUuid, 'messageUuid');
      const trackedFileBackups: Record<string, unknown> = {};
      for (const file of entry.files) {
        if (file === null || typeof file !== 'object' || typeof file.path !== 'string')
          throw invalid('each snapshot file needs a path');
        trackedFileBackups[file.path] = {
          backupFileName: file.backupPath ?? null,
          backupTime: checkedTimestamp(file.timestamp),
        };
      }
      return {
        type: 'file-history-snapshot',
        messageId,
        snapshot: { messageId, trackedFileBackups, timestamp: line.now().toISOString() },
        isSnapshotUpdate: false,
      };
    }
    default:
      throw invalid(`unknown entry kind ${JSON.stringify(String((entry as { kind?: unknown }).kind).slice(0, 40))}`);
  }
}

function messageRecord(
  message: SessionMessage,
  parentUuid: string | null,
  line: TranscriptLineContext,
): Record<string, unknown> {
  if (message === null || typeof message !== 'object') throw invalid('a message entry needs a message');
  const uuid = checkedId(message.uuid, 'uuid');
  if (parentUuid !== null) checkedId(parentUuid, 'parentUuid');
  if (message.role !== 'user' && message.role !== 'assistant')
    throw invalid(`role must be user or assistant, not ${JSON.stringify(String(message.role)).slice(0, 40)}`);
  const content = wireContent(message.content);
  const timestamp = checkedTimestamp(message.timestamp);
  const body: Record<string, unknown> =
    message.role === 'assistant'
      ? {
          type: 'message',
          role: 'assistant',
          model: message.model ?? '',
          content,
          stop_reason: null,
          ...(message.usage && { usage: wireUsage(message.usage) }),
        }
      : { role: 'user', content };
  return {
    type: message.role,
    ...envelope(line, uuid, parentUuid, timestamp),
    message: body,
    ...(message.meta === true && { isMeta: true }),
    ...(message.compactSummary === true && { isCompactSummary: true }),
  };
}

function boundaryRecord(boundary: CompactBoundary, line: TranscriptLineContext): Record<string, unknown> {
  if (boundary === null || typeof boundary !== 'object') throw invalid('a compact-boundary entry needs a boundary');
  const uuid = checkedId(boundary.uuid, 'boundary uuid');
  if (boundary.trigger !== 'auto' && boundary.trigger !== 'manual')
    throw invalid('a boundary trigger is auto or manual');
  if (boundary.method !== 'notes' && boundary.method !== 'summary')
    throw invalid('a boundary method is notes or summary');
  if (!Number.isFinite(boundary.preTokens)) throw invalid('a boundary needs preTokens (a number)');
  if (!Array.isArray(boundary.filesEdited)) throw invalid('a boundary needs filesEdited (an array)');
  const logicalParentUuid =
    boundary.lastSummarizedUuid === undefined ? null : checkedId(boundary.lastSummarizedUuid, 'lastSummarizedUuid');
  return {
    type: 'system',
    subtype: 'compact_boundary',
    content: 'Conversation compacted',
    level: 'info',
    isMeta: false,
    ...envelope(line, uuid, null, checkedTimestamp(boundary.timestamp)),
    logicalParentUuid,
    compactMetadata: { trigger: boundary.trigger, preTokens: boundary.preTokens },
    engramBoundary: {
      method: boundary.method,
      filesEdited: boundary.filesEdited,
      gitBranch: boundary.gitBranch ?? '',
      ...(boundary.plan !== undefined && { plan: boundary.plan }),
      ...(boundary.activeSkills !== undefined && { activeSkills: boundary.activeSkills }),
    },
  };
}

/** Engram content as Anthropic wire blocks (`tool_use_id`, `is_error`). */
export function wireContent(content: string | readonly ContentBlock[]): string | Array<Record<string, unknown>> {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw invalid('message content must be a string or an array of blocks');
  return content.map((block: ContentBlock) => {
    if (block === null || typeof block !== 'object') throw invalid('each content block must be an object');
    switch (block.type) {
      case 'text':
        if (typeof block.text !== 'string') throw invalid('a text block needs text');
        return { type: 'text', text: block.text };
      case 'tool_use':
        if (typeof block.id !== 'string' || typeof block.name !== 'string')
          throw invalid('a tool_use block needs id and name');
        return { type: 'tool_use', id: block.id, name: block.name, input: block.input ?? {} };
      case 'tool_result':
        if (typeof block.toolUseId !== 'string' || typeof block.content !== 'string')
          throw invalid('a tool_result block needs toolUseId and string content');
        return {
          type: 'tool_result',
          tool_use_id: block.toolUseId,
          content: block.content,
          ...(block.isError === true && { is_error: true }),
        };
      default:
        throw invalid(
          `unknown content block type ${JSON.stringify(String((block as { type?: unknown }).type)).slice(0, 40)}`,
        );
    }
  });
}

function wireUsage(usage: LanguageModelUsage): Record<string, number> {
  return {
    input_tokens: usage.inputTokens,
    output_tokens: usage.outputTokens,
    ...(usage.cacheReadTokens !== undefined && { cache_read_input_tokens: usage.cacheReadTokens }),
    ...(usage.cacheWriteTokens !== undefined && { cache_creation_input_tokens: usage.cacheWriteTokens }),
  };
}

/** Metadata a caller appends: known fields must have their types (a listing shows them). */
export function checkedMetadata(value: unknown, timestamp: unknown): Partial<SessionMetadata> {
  checkedTimestamp(timestamp);
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw invalid('a metadata entry needs a metadata object');
  const metadata = value as Record<string, unknown>;
  for (const key of ['title', 'cwd', 'gitBranch', 'model', 'createdAt', 'updatedAt'] as const) {
    const field = metadata[key];
    if (field !== undefined && (typeof field !== 'string' || field.length > 10_000))
      throw invalid(`metadata.${key} must be a string of at most 10,000 characters`);
  }
  if (
    metadata.tags !== undefined &&
    (!Array.isArray(metadata.tags) ||
      metadata.tags.length > 100 ||
      metadata.tags.some((tag) => typeof tag !== 'string' || tag.length > 200))
  ) {
    throw invalid('metadata.tags must be at most 100 strings of at most 200 characters');
  }
  if (
    metadata.messageCount !== undefined &&
    (!Number.isInteger(metadata.messageCount) || (metadata.messageCount as number) < 0)
  )
    throw invalid('metadata.messageCount must be a non-negative integer');
  const { sessionId: _ignored, ...rest } = metadata;
  return rest as Partial<SessionMetadata>;
}

function checkedId(value: unknown, what: string): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > 200 || /[\u0000-\u001F]/.test(value)) {
    throw invalid(`${what} must be a non-empty string of at most 200 characters without control characters`);
  }
  return value;
}

function checkedTimestamp(value: unknown): string {
  if (typeof value !== 'string' || value.length > 40 || Number.isNaN(Date.parse(value)))
    throw invalid('timestamp must be an ISO-8601 date string');
  return value;
}

function invalid(reason: string): EngramError {
  return new EngramError('INVALID_INPUT', `Cannot append to the session transcript: ${reason}.`);
}
