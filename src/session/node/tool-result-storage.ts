import { constants } from 'node:fs';
import { lstat, mkdir, open, readFile } from 'node:fs/promises';
import { join, resolve, sep } from 'node:path';
import { EngramError } from '../../kernel/errors.js';
import { DEFAULT_SETTINGS } from '../../kernel/settings.js';
import { writeFileAtomically } from '../../kernel/node/atomic-write.js';
import type { StoredToolResult, ToolResultPage, ToolResultStore } from '../tool-result-store.js';

/**
 * Layer 1 of SPEC §2: a tool result over the threshold is written whole to
 * `<directory>/<toolUseId>.txt` and the message keeps a preview in a `<persisted-output>` tag that
 * names the file. The replacement depends only on the id, the content and the options, so the same
 * result always gives the same bytes (the prompt-cache prefix stays valid); the model pages through
 * the rest with the `read_persisted_output` tool.
 */

export interface ToolResultStorageOptions {
  /** The session's tool-results folder (`<slug>/<sessionId>/tool-results`); created on the first stored result. */
  directory: string;
  /** Results larger than this many UTF-8 bytes are stored (`session.toolResultThresholdBytes`). */
  thresholdBytes: number;
  /** Bytes of the preview kept in the message (`session.toolResultPreviewBytes`). */
  previewBytes: number;
  /** Most bytes one `read` returns (`session.toolResultPageBytes`). */
  pageBytes?: number;
}

const MAX_TOOL_USE_ID_LENGTH = 200;
// Letters, digits, `_`, `-` and `.` (not first): every provider's ids (toolu_…, call_…) fit, and no
// name can leave the folder, hide as a dotfile or carry a separator or NUL.
const SAFE_TOOL_USE_ID = /^[A-Za-z0-9_-][A-Za-z0-9_.-]*$/;
const READ_FLAGS = constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0);
// Room for the line the read tool puts before a page, so a page never crosses the threshold itself
// (the session passes every tool result through `store`, and a page must not be stored again).

/** Stores oversized tool results of one session and reads them back page by page. No I/O until a result needs storing. */
export class ToolResultStorage implements ToolResultStore {
  readonly directory: string;
  readonly thresholdBytes: number;
  readonly previewBytes: number;
  readonly pageBytes: number;

  constructor(options: ToolResultStorageOptions) {
    if (typeof options?.directory !== 'string' || options.directory === '')
      throw new EngramError('INVALID_INPUT', 'ToolResultStorage needs the directory to store tool results in.');
    this.directory = resolve(options.directory);
    this.thresholdBytes = positiveInteger(options.thresholdBytes, 'thresholdBytes (session.toolResultThresholdBytes)');
    this.previewBytes = positiveInteger(options.previewBytes, 'previewBytes (session.toolResultPreviewBytes)');
    this.pageBytes = positiveInteger(
      options.pageBytes ?? DEFAULT_SETTINGS.session.toolResultPageBytes,
      'pageBytes (session.toolResultPageBytes)',
    );
  }

  /** The file a tool result is (or would be) stored in; refuses an unsafe id with INVALID_INPUT. */
  pathFor(toolUseId: string): string {
    return join(this.directory, `${checkToolUseId(toolUseId)}.txt`);
  }

  /**
   * The content the message should carry for a tool result: unchanged at or under the threshold,
   * else written whole (mode 0600) and replaced by its `<persisted-output>` preview. Storing the
   * same id again with the same content gives the same bytes; with other content, CONFLICT.
   */
  async store(toolUseId: string, content: string): Promise<StoredToolResult> {
    const path = this.pathFor(toolUseId);
    if (typeof content !== 'string')
      throw new EngramError('INVALID_INPUT', `The result of tool use ${toolUseId} must be text.`);
    const data = Buffer.from(content, 'utf8');
    if (data.length <= this.thresholdBytes) return { content };
    await mkdir(this.directory, { recursive: true, mode: 0o700 });
    const existing = await lstat(path).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return undefined;
      throw new EngramError('STORE_ERROR', `Could not check ${path} (${error.code ?? error.message}).`, {
        cause: error,
      });
    });
    if (existing) {
      // A result is stored once; an id seen again must carry the same content (a retried turn), never replace it.
      if (!existing.isFile() || !data.equals(await readFile(path))) {
        throw new EngramError(
          'CONFLICT',
          `A different tool result is already stored for tool use ${toolUseId} at ${path}; tool use ids must be unique within a session.`,
        );
      }
    } else {
      await writeFileAtomically(path, content);
    }
    return { content: persistedOutputText(path, data, this.previewBytes), persisted: { path, bytes: data.length } };
  }

  /** Reads part of a stored result: `limit` bytes (at most `pageBytes`) from byte `offset`, never splitting a character. */
  async read(toolUseId: string, options: { offset?: number; limit?: number } = {}): Promise<ToolResultPage> {
    const path = this.pathFor(toolUseId);
    const offset = options.offset ?? 0;
    if (!(Number.isSafeInteger(offset) && offset >= 0))
      throw new EngramError(
        'INVALID_INPUT',
        `offset must be a whole number of bytes, at least 0; got ${String(offset)}.`,
      );
    const limit = options.limit ?? this.pageBytes;
    if (!(Number.isSafeInteger(limit) && limit >= 1))
      throw new EngramError(
        'INVALID_INPUT',
        `limit must be a whole number of bytes, at least 1; got ${String(limit)}.`,
      );
    const handle = await open(path, READ_FLAGS).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT')
        throw new EngramError(
          'NOT_FOUND',
          `No stored output for tool use ${toolUseId}; only results over ${this.thresholdBytes} bytes are stored.`,
        );
      throw new EngramError('STORE_ERROR', `Could not open ${path} (${error.code ?? error.message}).`, {
        cause: error,
      });
    });
    try {
      const totalBytes = (await handle.stat()).size;
      if (offset > totalBytes)
        throw new EngramError(
          'INVALID_INPUT',
          `offset ${offset} is past the end of the stored output (${totalBytes} bytes).`,
        );
      const want = Math.min(limit, this.pageBytes);
      // Read up to 3 bytes either side so the page can be moved onto character boundaries.
      const buffer = Buffer.alloc(Math.min(want + 6, totalBytes - offset));
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, offset);
      const bytes = buffer.subarray(0, bytesRead);
      let start = 0;
      while (start < bytes.length && start < 3 && isContinuation(bytes[start]!)) start += 1;
      let end = Math.min(start + want, bytes.length);
      if (end < bytes.length) {
        while (end > start && isContinuation(bytes[end]!)) end -= 1;
        // A limit smaller than one character still makes progress: the page holds that whole character.
        if (end === start) end = characterEnd(bytes, start);
      }
      const pageStart = offset + start;
      const pageEnd = offset + end;
      return {
        text: bytes.subarray(start, end).toString('utf8'),
        offset: pageStart,
        totalBytes,
        ...(pageEnd < totalBytes ? { nextOffset: pageEnd } : {}),
      };
    } finally {
      await handle.close();
    }
  }

  /** The tool use id a path names when it is one of this storage's files, else undefined. */
  toolUseIdForPath(path: string): string | undefined {
    if (
      typeof path !== 'string' ||
      path.length > this.directory.length + MAX_TOOL_USE_ID_LENGTH + 8 ||
      path.includes('\0')
    )
      return undefined;
    const full = resolve(this.directory, path);
    const prefix = this.directory + sep;
    if (!full.startsWith(prefix) || !full.endsWith('.txt')) return undefined;
    const id = full.slice(prefix.length, -'.txt'.length);
    return id.length > 0 && id.length <= MAX_TOOL_USE_ID_LENGTH && SAFE_TOOL_USE_ID.test(id) ? id : undefined;
  }
}

/**
 * The text that replaces a stored result. It depends only on the path, the content and the preview
 * size, so it is frozen: every later request carries the same bytes.
 */
export function persistedOutputText(path: string, content: Buffer, previewBytes: number): string {
  const preview = previewOf(content, previewBytes);
  const more = preview.length < content.length ? '\n...' : '';
  return (
    `<persisted-output>\nOutput too large (${content.length} bytes). Full output saved to: ${path}\n\n` +
    `Preview (first ${sizeLabel(previewBytes)}):\n${preview.toString('utf8')}${more}\n</persisted-output>`
  );
}

/** The first `previewBytes` bytes, cut back to a line end when one is in the second half, never inside a character. */
function previewOf(content: Buffer, previewBytes: number): Buffer {
  if (content.length <= previewBytes) return content;
  let end = previewBytes;
  while (end > 0 && isContinuation(content[end]!)) end -= 1;
  const newline = end > 0 ? content.lastIndexOf(0x0a, end - 1) : -1;
  if (newline > 0 && newline >= end / 2) end = newline;
  return content.subarray(0, end);
}

function sizeLabel(bytes: number): string {
  return bytes % 1_000 === 0 ? `${bytes / 1_000}KB` : `${bytes} bytes`;
}

function isContinuation(byte: number): boolean {
  return (byte & 0xc0) === 0x80;
}

function characterEnd(bytes: Buffer, start: number): number {
  let end = start + 1;
  while (end < bytes.length && isContinuation(bytes[end]!)) end += 1;
  return end;
}

function checkToolUseId(toolUseId: string): string {
  if (
    typeof toolUseId !== 'string' ||
    toolUseId.length === 0 ||
    toolUseId.length > MAX_TOOL_USE_ID_LENGTH ||
    !SAFE_TOOL_USE_ID.test(toolUseId)
  ) {
    const shown = typeof toolUseId === 'string' ? JSON.stringify(toolUseId.slice(0, 60)) : typeof toolUseId;
    throw new EngramError(
      'INVALID_INPUT',
      `Tool use id ${shown} cannot name a stored result: it must be 1 to ${MAX_TOOL_USE_ID_LENGTH} letters, digits, "_", "-" or "." (not first).`,
    );
  }
  return toolUseId;
}

function positiveInteger(value: number, name: string): number {
  if (!(Number.isSafeInteger(value) && value >= 1))
    throw new EngramError(
      'INVALID_INPUT',
      `ToolResultStorage ${name} must be a whole number of at least 1, got ${String(value)}.`,
    );
  return value;
}
