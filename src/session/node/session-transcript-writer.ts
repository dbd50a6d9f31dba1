import { constants } from 'node:fs';
import { mkdir, open, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import { EngramError } from '../../kernel/errors.js';
import { DEFAULT_SETTINGS } from '../../kernel/settings.js';
import type { ContentBlock, LanguageModelUsage } from '../../contracts/language-model.js';
import type {
  CompactBoundary,
  SessionMessage,
  SessionMetadata,
  SessionTranscriptEntry,
  SessionTranscriptSink,
} from '../../contracts/session-message.js';
import { packageVersion } from '../../kernel/node/package-version.js';
import { subagentTranscriptPath, validateSessionId } from './session-paths.js';
import { DEFAULT_TRANSCRIPT_MAX_LINE_BYTES } from '../../kernel/transcript-lines.js';

/**
 * Writes a session transcript: append-only JSON Lines in Claude Code's envelope (FORMATS.md
 * §2.2/§2.3), so Claude-Code-aware tools and engram's own readers can read it.
 *
 * Lines: `user`/`assistant` (`message: {role, content}` with Anthropic wire blocks; assistant lines
 * add `model`, `usage`), `system` with `subtype: "compact_boundary"` (`parentUuid: null`,
 * `logicalParentUuid`, `compactMetadata`, engram's `engramBoundary`), `engram-todos`,
 * `file-history-snapshot` and `engram-metadata`.
 *
 * After a compact boundary, append every message of the new live list (summary, re-injected
 * messages, kept messages) chained from the boundary; a kept message is written again under its
 * own uuid and the latest line of a uuid wins on resume.
 */

export interface SessionTranscriptWriterOptions {
  path: string;
  sessionId: string;
  cwd?: string;
  /** `''` outside git. */
  gitBranch?: string;
  /** Pending lines are written about this often (default `session.transcriptFlushMs`, 100 ms). */
  flushIntervalMs?: number;
  now?: () => Date;
  /** Helper transcripts: every line carries `isSidechain: true` and the agent id. */
  isSidechain?: boolean;
  agentId?: string;
  /** What a resumed session already knew (title, tags, counts): carried into the metadata re-appended at close. */
  metadata?: Partial<SessionMetadata>;
  /** A write that failed in the background (the lines stay pending and are retried). */
  onError?: (error: EngramError) => void;
  /** Longest line written; default 32 MiB (what the readers accept). */
  maxLineBytes?: number;
}

// O_NOFOLLOW: a symlink planted at the transcript's path is refused, never written through.
const APPEND_FLAGS = constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | (constants.O_NOFOLLOW ?? 0);
/** The metadata line is repeated once this much was written after it, so the last 64 KB always hold one. */
const METADATA_REPEAT_BYTES = 32 * 1024;
const METADATA_LINE_START = '{"type":"engram-metadata"';

/** A buffered, append-only session transcript, created on disk with its first real message. */
export class SessionTranscriptWriter implements SessionTranscriptSink {
  readonly path: string;
  readonly sessionId: string;
  private readonly cwd: string;
  private readonly gitBranch: string;
  private readonly flushIntervalMs: number;
  private readonly now: () => Date;
  private readonly sidechain: { isSidechain: boolean; agentId?: string };
  private readonly errorListeners = new Set<(error: EngramError) => void>();
  private readonly maxLineBytes: number;
  private readonly version = packageVersion();
  private metadata: SessionMetadata;
  private pending: string[] = [];
  /** False until the first real (non-meta) message: before it nothing touches the disk. */
  private materialized = false;
  private handle: FileHandle | undefined;
  private timer: NodeJS.Timeout | undefined;
  private writing: Promise<void> = Promise.resolve();
  private closed = false;
  private bytesSinceMetadata = 0;
  private flushedLines = 0;
  private flushedMessages = 0;
  private pendingMessages = 0;
  private readonly seenUuids = new Set<string>();

  constructor(options: SessionTranscriptWriterOptions) {
    if (typeof options.path !== 'string' || options.path.length === 0 || options.path.includes('\u0000')) {
      throw new EngramError('INVALID_INPUT', 'The transcript path must be a non-empty file path.');
    }
    this.path = options.path;
    this.sessionId = validateSessionId(options.sessionId);
    this.cwd = options.cwd ?? '';
    this.gitBranch = options.gitBranch ?? '';
    const interval = options.flushIntervalMs ?? DEFAULT_SETTINGS.session.transcriptFlushMs;
    if (!Number.isFinite(interval) || interval < 0)
      throw new EngramError(
        'INVALID_INPUT',
        `flushIntervalMs must be a non-negative number of milliseconds, not ${String(interval)}.`,
      );
    this.flushIntervalMs = interval;
    this.now = options.now ?? (() => new Date());
    this.sidechain = {
      isSidechain: options.isSidechain === true,
      ...(options.agentId !== undefined && { agentId: validateSessionId(options.agentId, 'agent id') }),
    };
    if (options.onError) this.errorListeners.add(options.onError);
    this.maxLineBytes = options.maxLineBytes ?? DEFAULT_TRANSCRIPT_MAX_LINE_BYTES;
    this.metadata = {
      ...options.metadata,
      sessionId: this.sessionId,
      ...(options.cwd !== undefined && { cwd: options.cwd }),
      ...(options.gitBranch !== undefined && { gitBranch: options.gitBranch }),
    };
  }

  /** Lines written to the file so far (not counting what is still buffered). */
  get writtenLines(): number {
    return this.flushedLines;
  }

  /** Message entries written to the file so far (a crash loses at most the ones appended since). */
  get writtenMessages(): number {
    return this.flushedMessages;
  }

  /** True once a real (non-meta) message was appended: the file exists after the next flush. */
  get created(): boolean {
    return this.materialized;
  }

  /** Queues one entry; refuses a malformed one (INVALID_INPUT) or one over the line limit (PAYLOAD_TOO_LARGE) without queuing anything. */
  append(entry: SessionTranscriptEntry): void {
    if (this.closed)
      throw new EngramError(
        'STORE_CLOSED',
        `The transcript of session ${this.sessionId} is closed; open a new writer to append.`,
      );
    const record =
      entry?.kind === 'metadata'
        ? this.metadataRecord(checkedMetadata(entry.metadata, entry.timestamp))
        : this.toRecord(entry);
    let line: string;
    try {
      line = JSON.stringify(record);
    } catch (error) {
      throw new EngramError(
        'INVALID_INPUT',
        `A transcript entry could not be written as JSON (${(error as Error).message}).`,
        { cause: error },
      );
    }
    // UTF-8 takes at most 3 bytes per UTF-16 unit: only lines that could be over the limit are measured.
    if (line.length * 3 > this.maxLineBytes && Buffer.byteLength(line) > this.maxLineBytes) {
      throw new EngramError(
        'PAYLOAD_TOO_LARGE',
        `A transcript entry is over ${this.maxLineBytes} bytes; store large tool results on disk and keep a preview in the message.`,
      );
    }
    this.track(entry);
    this.pending.push(line);
    if (entry.kind === 'message') this.pendingMessages += 1;
    if (entry.kind === 'message' && entry.message.meta !== true) this.materialized = true;
    this.schedule();
  }

  /** Adds a listener for background writes that fail (the lines stay pending and are retried); returns a function that removes it. */
  onWriteError(listener: (error: EngramError) => void): () => void {
    this.errorListeners.add(listener);
    return () => this.errorListeners.delete(listener);
  }

  /** Writes every pending line (when the file exists or is due). Rejects with STORE_ERROR if the disk refuses. */
  flush(): Promise<void> {
    this.clearTimer();
    const run = this.writing.then(() => this.writePending());
    this.writing = run.catch(() => undefined);
    return run;
  }

  /** Re-appends the metadata (so the last 64 KB of the file carry it), writes everything pending and closes the file. */
  async close(): Promise<void> {
    if (this.closed) return;
    if (this.materialized) this.pending.push(JSON.stringify(this.metadataRecord()));
    this.closed = true;
    try {
      await this.flush();
    } finally {
      this.clearTimer();
      const handle = this.handle;
      this.handle = undefined;
      await handle?.close().catch(() => undefined);
    }
  }

  private schedule(): void {
    if (!this.materialized || this.timer || this.closed) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.flush().catch((error: unknown) => this.reportError(error));
    }, this.flushIntervalMs);
    this.timer.unref();
  }

  private reportError(error: unknown): void {
    const failure =
      error instanceof EngramError
        ? error
        : new EngramError('STORE_ERROR', `Could not write the transcript ${this.path} (${String(error)}).`, {
            cause: error,
          });
    for (const listener of [...this.errorListeners]) {
      try {
        listener(failure);
      } catch {
        // A listener's failure is its own; the writer keeps its lines and retries.
      }
    }
  }

  private clearTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private async writePending(): Promise<void> {
    if (!this.materialized || this.pending.length === 0) return;
    const lines = this.pending;
    const messages = this.pendingMessages;
    this.pending = [];
    this.pendingMessages = 0;
    let text = `${lines.join('\n')}\n`;
    // Raw newlines only ever separate lines (JSON escapes them inside strings), so this finds the last metadata line.
    const found = text.lastIndexOf(`\n${METADATA_LINE_START}`);
    const metadataAt = found >= 0 ? found + 1 : text.startsWith(METADATA_LINE_START) ? 0 : -1;
    let bytesSinceMetadata =
      metadataAt < 0
        ? this.bytesSinceMetadata + Buffer.byteLength(text)
        : Buffer.byteLength(text.slice(text.indexOf('\n', metadataAt) + 1));
    if (bytesSinceMetadata > METADATA_REPEAT_BYTES) {
      const metadataLine = JSON.stringify(this.metadataRecord());
      lines.push(metadataLine);
      text += `${metadataLine}\n`;
      bytesSinceMetadata = 0;
    }
    try {
      if (!this.handle) {
        const opened = await this.openFile();
        this.handle = opened.handle;
        // A file that ends inside a line (a crash tore it): start on a fresh line so ours stay whole.
        if (opened.tornEnd) text = `\n${text}`;
      }
      await this.handle.write(text);
    } catch (error) {
      // Keep the lines: the next flush retries them, in order, before anything newer.
      this.pending = lines.concat(this.pending);
      this.pendingMessages += messages;
      throw error instanceof EngramError
        ? error
        : new EngramError(
            'STORE_ERROR',
            `Could not write the transcript ${this.path} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}).`,
            { cause: error },
          );
    }
    this.flushedLines += lines.length;
    this.flushedMessages += messages;
    this.bytesSinceMetadata = bytesSinceMetadata;
    if (!this.closed && this.pending.length > 0) this.schedule();
  }

  private async openFile(): Promise<{ handle: FileHandle; tornEnd: boolean }> {
    await mkdir(dirname(this.path), { recursive: true, mode: 0o700 });
    const handle = await open(this.path, APPEND_FLAGS, 0o600);
    try {
      const { size } = await handle.stat();
      if (size === 0) return { handle, tornEnd: false };
      const last = Buffer.alloc(1);
      // O_APPEND allows positional reads only through a separate read handle.
      const reader = await open(this.path, constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0));
      try {
        await reader.read(last, 0, 1, size - 1);
      } finally {
        await reader.close();
      }
      return { handle, tornEnd: last[0] !== 0x0a };
    } catch (error) {
      await handle.close();
      throw error;
    }
  }

  /** Keeps what the metadata line reports: counts, first and latest message, model, title and tags. */
  private track(entry: SessionTranscriptEntry): void {
    if (entry.kind === 'metadata') {
      this.metadata = {
        ...this.metadata,
        ...checkedMetadata(entry.metadata, entry.timestamp),
        sessionId: this.sessionId,
      };
      return;
    }
    if (entry.kind !== 'message') return;
    const message = entry.message;
    if (!this.seenUuids.has(message.uuid)) {
      this.seenUuids.add(message.uuid);
      this.metadata.messageCount = (this.metadata.messageCount ?? 0) + 1;
    }
    this.metadata.createdAt ??= message.timestamp;
    this.metadata.updatedAt = message.timestamp;
    if (message.model) this.metadata.model = message.model;
  }

  /** The metadata line: what the writer knows, with `update` (a metadata entry being appended) on top. */
  private metadataRecord(update: Partial<SessionMetadata> = {}): Record<string, unknown> {
    return {
      type: 'engram-metadata',
      sessionId: this.sessionId,
      timestamp: this.now().toISOString(),
      metadata: { ...this.metadata, ...update, sessionId: this.sessionId },
      ...this.sidechainFields(),
    };
  }

  private sidechainFields(): Record<string, unknown> {
    return this.sidechain.agentId === undefined ? {} : { agentId: this.sidechain.agentId };
  }

  private envelope(uuid: string, parentUuid: string | null, timestamp: string): Record<string, unknown> {
    return {
      uuid,
      parentUuid,
      sessionId: this.sessionId,
      timestamp,
      cwd: this.cwd,
      gitBranch: this.gitBranch,
      version: this.version,
      userType: 'external',
      isSidechain: this.sidechain.isSidechain,
      ...this.sidechainFields(),
    };
  }

  private toRecord(entry: SessionTranscriptEntry): Record<string, unknown> {
    if (entry === null || typeof entry !== 'object') throw invalid('a transcript entry must be an object with a kind');
    switch (entry.kind) {
      case 'message':
        return this.messageRecord(entry.message, entry.parentUuid);
      case 'compact-boundary':
        return this.boundaryRecord(entry.boundary);
      case 'todos':
        if (!Array.isArray(entry.todos)) throw invalid('a todos entry needs a todos array');
        return {
          type: 'engram-todos',
          sessionId: this.sessionId,
          timestamp: checkedTimestamp(entry.timestamp),
          todos: entry.todos,
          ...this.sidechainFields(),
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
          snapshot: { messageId, trackedFileBackups, timestamp: this.now().toISOString() },
          isSnapshotUpdate: false,
        };
      }
      case 'metadata':
        return this.metadataRecord(checkedMetadata(entry.metadata, entry.timestamp));
      default:
        throw invalid(`unknown entry kind ${JSON.stringify(String((entry as { kind?: unknown }).kind).slice(0, 40))}`);
    }
  }

  private messageRecord(message: SessionMessage, parentUuid: string | null): Record<string, unknown> {
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
      ...this.envelope(uuid, parentUuid, timestamp),
      message: body,
      ...(message.meta === true && { isMeta: true }),
      ...(message.compactSummary === true && { isCompactSummary: true }),
    };
  }

  private boundaryRecord(boundary: CompactBoundary): Record<string, unknown> {
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
      ...this.envelope(uuid, null, checkedTimestamp(boundary.timestamp)),
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
}

/** A writer for one helper agent's transcript: `<subagents>/agent-<agentId>.jsonl`, every line a sidechain line. */
export function openSidechainTranscript(
  options: Omit<SessionTranscriptWriterOptions, 'path' | 'isSidechain'> & { subagents: string; agentId: string },
): SessionTranscriptWriter {
  const { subagents, ...rest } = options;
  return new SessionTranscriptWriter({
    ...rest,
    path: subagentTranscriptPath(subagents, options.agentId),
    isSidechain: true,
  });
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
function checkedMetadata(value: unknown, timestamp: unknown): Partial<SessionMetadata> {
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
