import { EngramError } from '../kernel/errors.js';
import { assertScope, type Scope } from '../memory/scope.js';
import { assertConversation, assertConversationId, type ConversationMessage } from '../contracts/conversation.js';
import type { RecalledMemory } from './recalled-memories.js';

/**
 * What an extraction job carries in the store's durable queue, and the checkpoints extraction
 * keeps. A job holds the span of one turn (the messages since what was already queued, prepared:
 * private text stripped, long texts cut), so it survives a crash without the host's memory.
 */
export const EXTRACTION_QUEUE = 'extraction';
export const EXTRACTION_PAYLOAD_VERSION = 1;

export interface ExtractionJobPayload {
  version: typeof EXTRACTION_PAYLOAD_VERSION;
  sessionId: string;
  /** Orders the spans of one session (time of queueing, made unique in the process). */
  sequence: number;
  messages: ConversationMessage[];
  /** Memories recalled into the prompt during the span: known, not to be extracted again. */
  recalled: RecalledMemory[];
  /** Where extraction writes (the project, the user's scope when set; global always) and what it reads. */
  scopes: { project: Scope; user?: Scope; read: Scope[] };
  /** The cursor named a message the conversation no longer holds (compacted away): the span is every message. */
  cursorFallback: boolean;
  /** The project folder the agent-mode helper may read (when known). */
  projectRoot?: string;
}

/**
 * The job key: one job per session and last message of its span, so the same turn is queued once.
 * `%` and `:` in the session id are escaped, so the first `:` always ends it and two different
 * (session, message) pairs never share a key; ids without them keep the plain `session:message` form.
 */
export function extractionJobKey(sessionId: string, lastMessageId: string): string {
  return `${sessionId.replaceAll('%', '%25').replaceAll(':', '%3A')}:${lastMessageId}`;
}

/** The checkpoint holding a session's cursor (the last processed message). */
export function cursorCheckpointName(sessionId: string): string {
  return `extraction-cursor:${sessionId}`;
}

/** The checkpoint recording a job's progress: the model's answers so far, then done. */
export function turnCheckpointName(key: string): string {
  return `extraction-turn:${key}`;
}

/**
 * The checkpoint recording that the explicit statements of one user message were applied (and what
 * they wrote): every path (the queue's runs, a run covering another job, the offline path) checks
 * it first, so a "forget that …" read twice never archives a second memory.
 */
export function explicitCheckpointName(sessionId: string, messageId: string): string {
  return `extraction-explicit:${sessionId}:${messageId}`;
}

/** The lock held while a session's messages are extracted: one run per session at a time, in every process. */
export function sessionLockName(sessionId: string): string {
  return `extraction:${sessionId}`;
}

/** A session's cursor: the last processed message and the sequence of the span it ended. */
export interface ExtractionCursor {
  messageId: string;
  sequence: number;
}

/** Serializes a cursor for its checkpoint. */
export function formatCursor(cursor: ExtractionCursor): string {
  return JSON.stringify(cursor);
}

/** Reads a cursor checkpoint; a bare message id (set by hand or by another tool) counts as the oldest sequence. */
export function parseCursor(value: string | undefined): ExtractionCursor | undefined {
  if (value === undefined || value === '') return undefined;
  try {
    const parsed = JSON.parse(value) as Partial<ExtractionCursor>;
    if (parsed && typeof parsed.messageId === 'string' && typeof parsed.sequence === 'number')
      return { messageId: parsed.messageId, sequence: parsed.sequence };
  } catch {
    // Not JSON: a bare id.
  }
  return { messageId: value, sequence: 0 };
}

/** Progress of one job, kept so a retry reuses the model's answers instead of asking again. */
export interface TurnProgress {
  state: 'extracting' | 'done';
  /** Jobs whose spans this run covers (its own first). */
  jobIds?: string[];
  /** The model's answer per group of turns, by the group's last message id. */
  answers?: Record<string, string>;
  /** The run (job key) that covered this job, when another job's run did. */
  coveredBy?: string;
  /** The agent-mode helper wrote memory for the spans of `jobIds`: a retry (or a run covering them) does not run it again over them. */
  agentWrote?: boolean;
}

export function parseTurnProgress(value: string | undefined): TurnProgress | undefined {
  if (value === undefined || value === '') return undefined;
  try {
    const parsed = JSON.parse(value) as TurnProgress;
    if (parsed && (parsed.state === 'extracting' || parsed.state === 'done')) return parsed;
  } catch {
    // A damaged record is no record: the job runs again (dedupe on write keeps that harmless).
  }
  return undefined;
}

/** Checks a payload read back from the store; a payload this code cannot use fails its job for good, with this message. */
export function readExtractionPayload(value: unknown): ExtractionJobPayload {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw invalid('it is not an object');
  const payload = value as Partial<ExtractionJobPayload>;
  if (payload.version !== EXTRACTION_PAYLOAD_VERSION)
    throw invalid(`version ${JSON.stringify(payload.version)} is not ${EXTRACTION_PAYLOAD_VERSION}`);
  assertConversationId(payload.sessionId, 'session id');
  if (typeof payload.sequence !== 'number' || !Number.isFinite(payload.sequence))
    throw invalid('sequence is not a number');
  assertConversation({ sessionId: payload.sessionId, messages: payload.messages });
  if (payload.messages!.length === 0) throw invalid('it holds no messages');
  if (!Array.isArray(payload.recalled)) throw invalid('recalled is not an array');
  const scopes = payload.scopes;
  if (scopes === null || typeof scopes !== 'object' || !Array.isArray(scopes.read)) throw invalid('scopes are missing');
  assertScope(scopes.project);
  if (scopes.user !== undefined) assertScope(scopes.user);
  scopes.read.forEach((scope) => assertScope(scope));
  return {
    version: EXTRACTION_PAYLOAD_VERSION,
    sessionId: payload.sessionId!,
    sequence: payload.sequence,
    messages: payload.messages!,
    recalled: payload.recalled.filter(
      (memory): memory is RecalledMemory =>
        memory !== null && typeof memory === 'object' && typeof memory.id === 'string',
    ),
    scopes: { project: scopes.project, ...(scopes.user !== undefined && { user: scopes.user }), read: scopes.read },
    cursorFallback: payload.cursorFallback === true,
    ...(typeof payload.projectRoot === 'string' && payload.projectRoot !== '' && { projectRoot: payload.projectRoot }),
  };
}

/**
 * Splits a span into parts whose JSON fits a job payload (`jobs.maxPayloadBytes`, less room for
 * the rest of the payload), in order. A message is never split: it was already cut to size.
 */
export function splitForPayload(messages: readonly ConversationMessage[], maxBytes: number): ConversationMessage[][] {
  const parts: ConversationMessage[][] = [];
  let bytes = 0;
  for (const message of messages) {
    const size = Buffer.byteLength(JSON.stringify(message), 'utf8') + 1;
    if (parts.length === 0 || bytes + size > maxBytes) {
      parts.push([message]);
      bytes = size;
    } else {
      parts.at(-1)!.push(message);
      bytes += size;
    }
  }
  return parts;
}

function invalid(reason: string): EngramError {
  return new EngramError(
    'INVALID_INPUT',
    `This extraction job's payload cannot be read (${reason}); it was written by another version of engram or damaged. Nothing was extracted from it.`,
  );
}
