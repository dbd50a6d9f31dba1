import { createHash } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import { basename, dirname, resolve } from 'node:path';
import { EngramError } from '../../kernel/errors.js';
import { parseClaudeCodeTranscript, type ParsedTranscript } from '../transcripts/claude-code-transcript.js';
import { ENGRAM_TRANSCRIPT_LINE_TYPE, parseEngramTranscript } from '../transcripts/engram-transcript.js';
import { parsePlainTextTranscript } from '../transcripts/plain-text-transcript.js';
import { isChatMessage, parseChatMessagesTranscript } from '../transcripts/chat-messages-transcript.js';
import { cleanTranscriptText } from '../transcripts/transcript-text-cleaning.js';
import { parseCodexRollout } from '../transcripts/codex-rollout-transcript.js';
import { parseGeminiCliTranscript } from '../transcripts/gemini-cli-transcript.js';
import { parseCopilotCliTranscript } from '../transcripts/copilot-cli-transcript.js';
import { parseQwenCodeTranscript } from '../transcripts/qwen-code-transcript.js';

/**
 * The transcript formats engram reads: Claude Code's JSON Lines, engram's own, plain text,
 * OpenAI/Anthropic-style chat messages, and the session files of Codex, Gemini CLI, Copilot CLI and
 * Qwen Code (OpenCode keeps its sessions in a database: read-opencode-session.ts).
 */
export const TRANSCRIPT_FORMATS = ['claude', 'engram', 'text', 'chat', 'codex', 'gemini', 'copilot', 'qwen'] as const;
export type TranscriptFormat = (typeof TRANSCRIPT_FORMATS)[number];

export interface ReadTranscriptOptions {
  /** Default: detected from the first lines. */
  format?: TranscriptFormat;
  /** Session id when the file names none; default from the file name and path. */
  sessionId?: string;
  /** Largest file read; default 256 MiB. */
  maxBytes?: number;
  /** Longer JSON lines are skipped with a warning; default 32 MiB. */
  maxLineBytes?: number;
}

/** A transcript read from disk. */
export interface TranscriptFile extends ParsedTranscript {
  path: string;
  format: TranscriptFormat;
}

export const DEFAULT_TRANSCRIPT_MAX_BYTES = 256 * 1024 * 1024;

// Line types of Claude Code transcripts (FORMATS.md §2.3), for detection only.
const CLAUDE_LINE_TYPES = new Set([
  'user',
  'assistant',
  'system',
  'summary',
  'progress',
  'attachment',
  'file-history-snapshot',
  'queue-operation',
  'permission-mode',
  'custom-title',
  'agent-name',
  'last-prompt',
]);
const DETECTION_LINES = 20;

/** Reads a transcript file: refuses what is not a readable UTF-8 text file, detects or checks its format, parses it. */
export async function readTranscriptFile(path: string, options: ReadTranscriptOptions = {}): Promise<TranscriptFile> {
  const absolute = resolve(path);
  const maxBytes = options.maxBytes ?? DEFAULT_TRANSCRIPT_MAX_BYTES;
  const info = await stat(absolute).catch((error: NodeJS.ErrnoException) => {
    throw new EngramError(
      error.code === 'ENOENT' ? 'NOT_FOUND' : 'INVALID_INPUT',
      `Cannot read the transcript ${absolute} (${error.code ?? 'error'}).`,
      { cause: error },
    );
  });
  if (!info.isFile())
    throw new EngramError('INVALID_INPUT', `${absolute} is not a regular file: give the path of a transcript file.`);
  if (info.size > maxBytes)
    throw new EngramError(
      'PAYLOAD_TOO_LARGE',
      `${absolute} is ${info.size} bytes; engram reads transcripts of at most ${maxBytes} bytes. Split the file.`,
    );
  let buffer: Buffer;
  try {
    buffer = await readFile(absolute);
  } catch (error) {
    throw new EngramError(
      'INVALID_INPUT',
      `Cannot read the transcript ${absolute} (${(error as NodeJS.ErrnoException).code ?? 'error'}).`,
      { cause: error },
    );
  }
  const text = decodeTranscript(buffer, absolute);
  const format = options.format ?? detectTranscriptFormat(text, absolute);
  const sessionId = options.sessionId ?? defaultSessionId(absolute);
  const parsed = parseTranscript(text, format, {
    sessionId,
    ...(options.maxLineBytes !== undefined && { maxLineBytes: options.maxLineBytes }),
    // Gemini CLI keeps a helper's chat in a folder named after its parent session.
    ...(format === 'gemini' && { parentSessionId: basename(dirname(absolute)) }),
  });
  return { ...parsed, path: absolute, format };
}

/** Parses a transcript's text in a known format, control characters replaced with a warning. Pure. */
export function parseTranscript(
  text: string,
  format: TranscriptFormat,
  options: { sessionId?: string; maxLineBytes?: number; parentSessionId?: string } = {},
): ParsedTranscript {
  return cleanTranscriptText(parseTranscriptAs(text, format, options));
}

function parseTranscriptAs(
  text: string,
  format: TranscriptFormat,
  options: { sessionId?: string; maxLineBytes?: number; parentSessionId?: string },
): ParsedTranscript {
  const { parentSessionId, ...common } = options;
  switch (format) {
    case 'claude':
      return parseClaudeCodeTranscript(text, common);
    case 'engram':
      return parseEngramTranscript(text, common);
    case 'text':
      return parsePlainTextTranscript(text, common);
    case 'chat':
      return parseChatMessagesTranscript(text, common);
    case 'codex':
      return parseCodexRollout(text, common);
    case 'gemini':
      return parseGeminiCliTranscript(text, { ...common, ...(parentSessionId && { parentSessionId }) });
    case 'copilot':
      return parseCopilotCliTranscript(text, common);
    case 'qwen':
      return parseQwenCodeTranscript(text, common);
    default:
      throw new EngramError(
        'INVALID_INPUT',
        `Unknown transcript format ${JSON.stringify(String(format).slice(0, 20))}: one of ${TRANSCRIPT_FORMATS.join(', ')}.`,
      );
  }
}

/**
 * The format of a transcript from its first lines: JSON objects with Claude Code's line types are
 * `claude`, `{"type":"message","role":…}` lines are `engram`, `{"role","content"}` lines or a JSON
 * array of them (or `{"messages":[…]}`) are `chat`, anything that is not JSON is `text`. JSON of
 * none of these kinds is refused: guessing would extract from the wrong fields.
 */
export function detectTranscriptFormat(text: string, where = 'the transcript'): TranscriptFormat {
  if (isChatDocument(text)) return 'chat';
  if (isGeminiDocument(text)) return 'gemini';
  let jsonLines = 0;
  let inspected = 0;
  for (const line of text.split('\n')) {
    if (inspected >= DETECTION_LINES) break;
    const trimmed = line.trim();
    if (trimmed === '') continue;
    inspected += 1;
    if (!trimmed.startsWith('{')) continue;
    let value: unknown;
    try {
      value = JSON.parse(trimmed);
    } catch {
      continue;
    }
    if (value === null || typeof value !== 'object' || Array.isArray(value)) continue;
    jsonLines += 1;
    const record = value as Record<string, unknown>;
    if (record.type === ENGRAM_TRANSCRIPT_LINE_TYPE && typeof record.role === 'string') return 'engram';
    const agent = agentFormat(record);
    if (agent) return agent;
    if (
      (typeof record.type === 'string' && CLAUDE_LINE_TYPES.has(record.type)) ||
      typeof record.parentUuid === 'string' ||
      typeof record.uuid === 'string'
    )
      return 'claude';
    if (isChatMessage(record)) return 'chat';
  }
  if (jsonLines === 0) return 'text';
  throw new EngramError(
    'INVALID_INPUT',
    `${where} holds JSON lines that are not a Claude Code transcript, an engram transcript or chat messages ({"role","content"}); pass --format ${TRANSCRIPT_FORMATS.join('|')} to say how to read it.`,
  );
}

// Record types of Codex rollouts; Copilot CLI's event types are dotted (`session.start`, `user.message`).
const CODEX_LINE_TYPES = new Set(['session_meta', 'response_item', 'event_msg', 'turn_context', 'compacted']);
const GEMINI_MESSAGE_TYPES = new Set(['user', 'gemini', 'info', 'error', 'warning']);

/** The other agents' session formats, told apart by fields only they write; undefined for none of them. */
function agentFormat(record: Record<string, unknown>): TranscriptFormat | undefined {
  const type = record.type;
  const payload = record.payload;
  if (typeof type === 'string' && CODEX_LINE_TYPES.has(type) && payload !== null && typeof payload === 'object')
    return 'codex';
  if (
    typeof type === 'string' &&
    /^[a-z_]+\.[a-z_.]+$/.test(type) &&
    record.data !== null &&
    typeof record.data === 'object'
  )
    return 'copilot';
  if (typeof record.sessionId === 'string' && typeof record.projectHash === 'string') return 'gemini';
  if ('$set' in record || typeof record.$rewindTo === 'string') return 'gemini';
  if (
    typeof record.id === 'string' &&
    typeof type === 'string' &&
    GEMINI_MESSAGE_TYPES.has(type) &&
    'content' in record &&
    !('uuid' in record)
  )
    return 'gemini';
  const message = record.message as { parts?: unknown } | undefined;
  if (typeof record.uuid === 'string' && (Array.isArray(message?.parts) || typeof record.provenance === 'string'))
    return 'qwen';
  return undefined;
}

/** A Gemini CLI chat file of the versions before JSON Lines: one document with `sessionId`, `projectHash`, `messages`. */
function isGeminiDocument(text: string): boolean {
  const trimmed = text.trimStart();
  if (!trimmed.startsWith('{')) return false;
  try {
    const value = JSON.parse(trimmed) as Record<string, unknown>;
    return (
      typeof value.sessionId === 'string' && typeof value.projectHash === 'string' && Array.isArray(value.messages)
    );
  } catch {
    return false;
  }
}

/** A whole-file JSON array of chat messages, or an object holding one as `messages`. */
function isChatDocument(text: string): boolean {
  const trimmed = text.trimStart();
  if (!trimmed.startsWith('[') && !trimmed.startsWith('{')) return false;
  let value: unknown;
  try {
    value = JSON.parse(trimmed);
  } catch {
    return false;
  }
  const list = Array.isArray(value)
    ? value
    : value !== null && typeof value === 'object'
      ? (value as Record<string, unknown>).messages
      : undefined;
  return Array.isArray(list) && list.length > 0 && list.some(isChatMessage);
}

/** UTF-8 text, or INVALID_INPUT for binary data (NUL bytes or invalid UTF-8). */
export function decodeTranscript(buffer: Buffer, where = 'the transcript'): string {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(buffer);
  } catch {
    throw new EngramError(
      'INVALID_INPUT',
      `${where} is not UTF-8 text (binary data?); give a transcript: Claude Code or engram JSON Lines, or plain text.`,
    );
  }
  if (text.includes('\u0000')) {
    throw new EngramError(
      'INVALID_INPUT',
      `${where} holds NUL bytes (binary data); give a transcript: Claude Code or engram JSON Lines, or plain text.`,
    );
  }
  return text.startsWith('\uFEFF') ? text.slice(1) : text;
}

/** A session id for a file that names none: its base name plus a hash of its path, so two notes.txt never share a cursor. */
export function defaultSessionId(absolutePath: string): string {
  const name =
    basename(absolutePath)
      .replace(/[^A-Za-z0-9._-]+/g, '-')
      .slice(0, 80) || 'transcript';
  return `${name}-${createHash('sha256').update(absolutePath).digest('hex').slice(0, 12)}`;
}
