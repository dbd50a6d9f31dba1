import { lstat, open, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { EngramError } from '../../kernel/errors.js';
import { DEFAULT_SETTINGS } from '../../kernel/settings.js';
import type { SessionMetadata } from '../../contracts/session-message.js';
import { readMetadata } from './session-transcript-record-parsing.js';
import { validateSessionId } from './session-paths.js';

/**
 * Lists a project's sessions from the end of each transcript only: the writer re-appends the
 * metadata line at exit (and after every 32 KB written), so the last 64 KB name the title, tags and
 * counts however long the file is. A crashed session without metadata in its tail is still listed,
 * from its last messages.
 */

/** One session as a listing shows it. */
export interface SessionSummary extends SessionMetadata {
  /** The transcript file. */
  path: string;
  /** The latest message or metadata time in the tail, else the file's modification time. */
  updatedAt: string;
  /** The last prompt the user typed, from the tail (a title when none was set); at most 200 characters. */
  lastPrompt?: string;
  /** Size of the transcript. */
  sizeBytes: number;
  /** Bytes actually read to list it (at most `tailBytes`). */
  bytesRead: number;
}

export interface ListSessionsOptions {
  projectDirectory: string;
  /** Bytes read from the end of each file (default `session.listingTailBytes`, 64 KB). */
  tailBytes?: number;
  /** Files read at once (default 16). */
  concurrency?: number;
}

const LAST_PROMPT_MAX_CHARS = 200;

/** Every session of a project folder, newest first; a missing folder has none. */
export async function listSessions(options: ListSessionsOptions): Promise<SessionSummary[]> {
  const { projectDirectory } = options;
  if (typeof projectDirectory !== 'string' || projectDirectory.length === 0 || projectDirectory.includes('\u0000')) {
    throw new EngramError(
      'INVALID_INPUT',
      'Give the project folder of the sessions to list (<ENGRAM_HOME>/projects/<slug>).',
    );
  }
  const tailBytes = options.tailBytes ?? DEFAULT_SETTINGS.session.listingTailBytes;
  if (!Number.isInteger(tailBytes) || tailBytes < 1)
    throw new EngramError(
      'INVALID_INPUT',
      `tailBytes must be a positive whole number of bytes, not ${String(tailBytes)}.`,
    );
  let names: string[];
  try {
    names = await readdir(projectDirectory);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return [];
    throw new EngramError(
      'INVALID_INPUT',
      `Cannot list sessions in ${projectDirectory} (${code ?? 'error'}): it must be a readable folder.`,
      { cause: error },
    );
  }
  const files = names.filter((name) => name.endsWith('.jsonl') && isSessionId(name.slice(0, -'.jsonl'.length)));
  const summaries: SessionSummary[] = [];
  const concurrency = Math.max(1, options.concurrency ?? 16);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < files.length) {
      const name = files[next++]!;
      const summary = await summarizeSession(join(projectDirectory, name), name.slice(0, -'.jsonl'.length), tailBytes);
      if (summary) summaries.push(summary);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, files.length) }, worker));
  return summaries.sort((a, b) =>
    a.updatedAt === b.updatedAt ? a.sessionId.localeCompare(b.sessionId) : a.updatedAt < b.updatedAt ? 1 : -1,
  );
}

/** The newest session of a project folder (what `--continue` resumes), or undefined. */
export async function latestSession(projectDirectory: string): Promise<SessionSummary | undefined> {
  return (await listSessions({ projectDirectory }))[0];
}

/** One file's summary from its last `tailBytes`; undefined when it is not a regular file (or a symlink) or vanished meanwhile. */
async function summarizeSession(
  path: string,
  sessionId: string,
  tailBytes: number,
): Promise<SessionSummary | undefined> {
  let handle;
  try {
    // lstat: a symlink planted in the folder is not followed (its target is no session of ours).
    const info = await lstat(path);
    if (!info.isFile()) return undefined;
    handle = await open(path, 'r');
  } catch {
    return undefined;
  }
  try {
    const info = await handle.stat();
    const length = Math.min(info.size, tailBytes);
    const start = info.size - length;
    const buffer = Buffer.alloc(length);
    let bytesRead = 0;
    while (bytesRead < length) {
      const read = await handle.read(buffer, bytesRead, length - bytesRead, start + bytesRead);
      if (read.bytesRead === 0) break;
      bytesRead += read.bytesRead;
    }
    const summary: SessionSummary = {
      sessionId,
      path,
      updatedAt: info.mtime.toISOString(),
      sizeBytes: info.size,
      bytesRead,
    };
    applyTail(summary, buffer.subarray(0, bytesRead), start > 0);
    return summary;
  } finally {
    await handle.close();
  }
}

/** Fills a summary from the tail's lines: metadata lines (merged in order), titles, the latest message and prompt. */
function applyTail(summary: SessionSummary, tail: Buffer, startsMidLine: boolean): void {
  let text = tail.toString('utf8');
  // The window starts inside a line unless it starts the file: that first piece is not a line.
  if (startsMidLine) text = text.slice(text.indexOf('\n') + 1);
  let latest: string | undefined;
  for (const line of text.split('\n')) {
    if (line.length === 0 || line[0] !== '{') continue;
    let record: Record<string, unknown>;
    try {
      const value: unknown = JSON.parse(line);
      if (value === null || typeof value !== 'object' || Array.isArray(value)) continue;
      record = value as Record<string, unknown>;
    } catch {
      continue;
    }
    const type = record.type;
    if (type === 'engram-metadata') {
      const metadata = readMetadata(record.metadata);
      if (!metadata) continue;
      const { updatedAt, ...rest } = metadata;
      Object.assign(summary, rest);
      if (updatedAt && !Number.isNaN(Date.parse(updatedAt)) && (!latest || updatedAt > latest)) latest = updatedAt;
    } else if (type === 'custom-title' && typeof record.customTitle === 'string') summary.title = record.customTitle;
    else if (type === 'user' || type === 'assistant') {
      if (
        typeof record.timestamp === 'string' &&
        !Number.isNaN(Date.parse(record.timestamp)) &&
        (!latest || record.timestamp > latest)
      )
        latest = record.timestamp;
      if (typeof record.cwd === 'string' && record.cwd !== '') summary.cwd ??= record.cwd;
      const prompt =
        type === 'user' && record.isMeta !== true && record.isCompactSummary !== true
          ? promptText(record.message)
          : undefined;
      if (prompt) summary.lastPrompt = prompt.slice(0, LAST_PROMPT_MAX_CHARS);
    }
  }
  if (latest) summary.updatedAt = new Date(latest).toISOString();
}

/** The typed text of a user line (string content, or its text blocks); tool results are not prompts. */
function promptText(message: unknown): string | undefined {
  if (message === null || typeof message !== 'object') return undefined;
  const content = (message as Record<string, unknown>).content;
  if (typeof content === 'string') return content.trim() || undefined;
  if (!Array.isArray(content)) return undefined;
  const texts = content.filter(
    (block): block is { type: 'text'; text: string } =>
      block !== null && typeof block === 'object' && block.type === 'text' && typeof block.text === 'string',
  );
  const text = texts
    .map((block) => block.text)
    .join('\n')
    .trim();
  return text || undefined;
}

function isSessionId(name: string): boolean {
  try {
    validateSessionId(name);
    return true;
  } catch {
    return false;
  }
}
