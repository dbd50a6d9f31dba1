import { constants } from 'node:fs';
import { mkdir, open, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import { EngramError } from '../../kernel/errors.js';
import { DEFAULT_SETTINGS } from '../../kernel/settings.js';
import type {
  SessionMetadata,
  SessionTranscriptEntry,
  SessionTranscriptSink,
} from '../../contracts/session-message.js';
import { packageVersion } from '../../kernel/node/package-version.js';
import { subagentTranscriptPath, validateSessionId } from './session-paths.js';
import {
  checkedMetadata,
  sidechainFields,
  transcriptRecord,
  type TranscriptLineContext,
} from './session-transcript-record-rendering.js';
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
  private readonly flushIntervalMs: number;
  private readonly now: () => Date;
  private readonly line: TranscriptLineContext;
  private readonly errorListeners = new Set<(error: EngramError) => void>();
  private readonly maxLineBytes: number;
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
    const interval = options.flushIntervalMs ?? DEFAULT_SETTINGS.session.transcriptFlushMs;
    if (!Number.isFinite(interval) || interval < 0)
      throw new EngramError(
        'INVALID_INPUT',
        `flushIntervalMs must be a non-negative number of milliseconds, not ${String(interval)}.`,
      );
    this.flushIntervalMs = interval;
    this.now = options.now ?? (() => new Date());
    this.line = {
      sessionId: this.sessionId,
      cwd: options.cwd ?? '',
      gitBranch: options.gitBranch ?? '',
      version: packageVersion(),
      sidechain: {
        isSidechain: options.isSidechain === true,
        ...(options.agentId !== undefined && { agentId: validateSessionId(options.agentId, 'agent id') }),
      },
      now: this.now,
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
        : transcriptRecord(entry, this.line);
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
      ...sidechainFields(this.line),
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
