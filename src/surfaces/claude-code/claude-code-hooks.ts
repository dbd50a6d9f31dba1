import { statSync } from 'node:fs';
import { persistedSurfaced } from '../../agent/persisted-surfaced.js';
import { isEngramError } from '../../kernel/errors.js';
import { estimateTextTokens } from '../../kernel/token-estimate.js';
import type { Memory } from '../../memory/memory.js';
import type { OpenedEngram } from '../../node/open-engram.js';
import { hookProtocol, transcriptIsDatabase } from './agent-hook-protocols.js';
import type { HookInput } from './hook-input.js';
import type { HookLogEntry } from './hook-log.js';
import { HOOK_TRANSCRIPT_MAX_BYTES } from './hook-input.js';

/**
 * The work of engram's Claude Code hooks (issue 13), each given an open engram for the hook's cwd.
 * SessionStart and UserPromptSubmit return the text for `additionalContext`. Stop, PreCompact and
 * SessionEnd only append to the hooks' spool in the hook (hook-queue.ts); the queueing below runs
 * in whoever drains it (spool-drain.ts).
 */

// Each hook loads only what its event needs (dynamic imports below): a hook is a whole process per
// event, and module loading is most of its time.

/**
 * Claude Code saves hook output over 10,000 characters to a file and gives the model a preview
 * (FORMATS §1.4): engram's context stays below that, the index capped first.
 */
export const MAX_CONTEXT_CHARS = 9_500;
const STATIC_PART_MAX_BYTES = 6_000;
/** Memories re-injected after a compaction at most (the most recently surfaced). */
const MAX_REINJECTED = 50;

export interface HookContext {
  opened: OpenedEngram;
  input: HookInput;
  /** Milliseconds left before the hook must answer. */
  remainingMs: () => number;
  log: (entry: Omit<HookLogEntry, 'at' | 'event'>) => void;
  /** Sends the context to Claude Code now (once): what the hook still does after it can fail or time out without losing it. */
  answer: (text: string | undefined) => void;
}

// The session's surfaced set lives in the store between hook processes (agent/persisted-surfaced.ts).
async function readSurfaced(context: HookContext): Promise<string[]> {
  return persistedSurfaced(context.opened.engram, context.input.sessionId).load();
}

async function writeSurfaced(context: HookContext, ids: readonly string[]): Promise<void> {
  await persistedSurfaced(context.opened.engram, context.input.sessionId).save(ids);
}

/**
 * SessionStart: the index of the project's and global memories (the static part, capped), then a
 * `<memory_context>` block (stripped by extraction like every injected block). At startup, resume
 * and clear it holds the most relevant memories for the project without a prompt
 * (agent/session-start-memories.ts); after a compaction (`source: compact`) the memories surfaced before
 * it, since the summary dropped their text. What the block gives is the session's surfaced set
 * (added to it on resume), so UserPromptSubmit does not repeat it.
 */
export async function sessionStartContext(context: HookContext): Promise<string | undefined> {
  const { engram } = context.opened;
  if (!engram.settings.hooks.recall) return undefined;
  const settings = {
    ...engram.settings,
    index: { ...engram.settings.index, maxBytes: Math.min(engram.settings.index.maxBytes, STATIC_PART_MAX_BYTES) },
  };
  const { buildStaticPart } = await import('../../recall/memory-context.js');
  // Claude Code puts hook context in the conversation, with the prompt it answers: not in the system prompt.
  const staticPart = await buildStaticPart({ store: engram.store, settings }, engram.readScopes, 'before-message');
  const now = new Date().toISOString();
  const source = context.input.source;
  const before = source === 'resume' || source === 'compact' ? await readSurfaced(context) : [];
  let memories: Memory[] = [];
  if (source === 'compact') {
    for (const id of before.slice(-MAX_REINJECTED).reverse()) {
      const memory = await engram.store.get(id, engram.readScopes);
      if (memory && !memory.archived && memory.invalidAt === null) memories.push(memory);
    }
  } else {
    const { sessionStartMemories } = await import('../../agent/session-start-memories.js');
    memories = await sessionStartMemories(engram, { staticPart, leaveOut: before, now });
  }
  if (memories.length === 0 && source !== 'compact') return fitContext([staticPart]);
  const room = MAX_CONTEXT_CHARS - staticPart.length - 2;
  const budget = Math.min(
    engram.settings.injection.maxTokens,
    Math.floor(room / Math.max(1, engram.settings.tokens.bytesPerTextToken) / 1.1),
  );
  const { packMemoryContext } = await import('../../recall/memory-context-format.js');
  const packed =
    memories.length > 0 && budget > 50
      ? packMemoryContext(
          memories.map((memory) => ({ memory, score: null, source: 'ranked' as const })),
          {
            maxTokens: budget,
            now,
            bytesPerToken: engram.settings.tokens.bytesPerTextToken,
            ageNoteDays: engram.settings.recall.ageNoteDays,
            staleDays: engram.settings.recall.staleDays,
          },
        )
      : undefined;
  const text = fitContext([staticPart, packed?.block ?? '']);
  context.answer(text);
  const given = packed && text?.includes(packed.block) ? packed.included.map((entry) => entry.memory.id) : [];
  // After a compaction the summary dropped every earlier block: what was given again is the surfaced set now.
  if (source === 'compact') await writeSurfaced(context, given);
  else if (given.length > 0) await writeSurfaced(context, [...before, ...given]);
  return text;
}

/**
 * UserPromptSubmit: recall for the prompt, memories already surfaced in this session left out, the
 * block within `injection.maxTokens`, ranked recall only (no model call on the user's path), cut at
 * the hook's deadline.
 */
export async function promptContext(context: HookContext): Promise<string | undefined> {
  const { engram } = context.opened;
  const prompt = context.input.prompt ?? '';
  if (!engram.settings.hooks.recall || prompt.trim() === '') return undefined;
  const surfaced = await readSurfaced(context);
  const budgetTokens = Math.min(
    engram.settings.injection.maxTokens,
    Math.floor(MAX_CONTEXT_CHARS / Math.max(1, engram.settings.tokens.bytesPerTextToken) / 1.1),
  );
  const { MemoryTurn } = await import('../../agent/memory-turn.js');
  const turn = new MemoryTurn({
    engram,
    selectionModel: false,
    surfaced,
    maxTokens: budgetTokens,
    recallTimeoutMs: Math.max(1, context.remainingMs() - 100),
  });
  const injection = await turn.beforeRequest(prompt, { staticPart: false });
  if (injection.status === 'failed' || injection.status === 'timed-out') {
    context.log({
      status: injection.status,
      message: injection.error?.message ?? `recall ${injection.status}`,
      ...(injection.error && { code: injection.error.code }),
    });
  }
  if (injection.block === '') return undefined;
  const text = fitContext([injection.block]);
  // Answered first: bookkeeping that fails (a locked store) costs a repeat later, never this prompt's memories.
  context.answer(text);
  await writeSurfaced(context, turn.surfacedIds());
  await turn.flush();
  return text;
}

/** Joins context parts, never over MAX_CONTEXT_CHARS: the later parts (recalled memories) go first, then the index is cut at a line. */
export function fitContext(parts: readonly string[]): string | undefined {
  const kept = parts.filter((part) => part.trim() !== '');
  while (kept.length > 1 && kept.join('\n').length > MAX_CONTEXT_CHARS) kept.pop();
  let text = kept.join('\n');
  if (text.length > MAX_CONTEXT_CHARS) {
    const cut = text.lastIndexOf('\n', MAX_CONTEXT_CHARS);
    text = text.slice(0, cut > 0 ? cut : MAX_CONTEXT_CHARS);
  }
  return text.trim() === '' ? undefined : text;
}

/** What queueing one spooled event did, for tests and the log. */
export interface QueueOutcome {
  /** `unreadable`: the transcript could not be read now (an I/O error, too many open files): tried again, a bounded number of times. */
  status: 'queued' | 'nothing-new' | 'off' | 'skipped' | 'unavailable' | 'unreadable';
  /** Extraction jobs created (not those that were queued already). */
  jobs: number;
  sessionId?: string;
  reason?: string;
  /** The transcript can never be read: the event is given up (logged), not tried again. */
  givenUp?: boolean;
}

/** What the queueing below needs: an open engram for the event's cwd, the event, the log. */
export type QueueContext = Pick<HookContext, 'opened' | 'input' | 'log'>;

/**
 * Stop and PreCompact, as a drainer of the hooks' spool runs them (spool-drain.ts): queue extraction
 * of the transcript's messages after the session's cursor. Queueing twice adds nothing (jobs are
 * keyed by session and last message). A helper's (subagent's) own transcript is queued under its
 * own session id, never moving the parent's cursor.
 */
export async function queueTranscript(context: QueueContext): Promise<QueueOutcome> {
  const { opened, input } = context;
  if (!opened.engram.settings.hooks.extract) return { status: 'off', jobs: 0 };
  const path = input.transcriptPath;
  if (path === undefined) return { status: 'skipped', jobs: 0, reason: 'no transcript_path' };
  // A path that can never be read (gone after the session ended, a folder, no permission) is given
  // up at once and said so; what may pass (too many open files, an I/O error) is `unreadable`: the
  // drainer tries again hooks.transcriptReadTries times at most.
  const giveUp = (why: string): QueueOutcome => {
    context.log({
      status: 'skipped',
      message: `not queued, given up: the transcript ${JSON.stringify(path.slice(0, 300))} can never be read (${why})`,
      sessionId: input.sessionId,
    });
    return { status: 'skipped', jobs: 0, reason: why, givenUp: true };
  };
  let size: number;
  try {
    const info = statSync(path);
    if (!info.isFile()) return giveUp('not a file');
    size = info.size;
  } catch (error) {
    if (isPermanentReadFailure(error)) return giveUp(describeReadFailure(error));
    if (errnoOf(error) !== undefined) return { status: 'unreadable', jobs: 0, reason: describeReadFailure(error) };
    throw error;
  }
  // A database (OpenCode's) holds every session: only this session's rows are read, whatever its size.
  const database = transcriptIsDatabase(input.agent);
  if (size > HOOK_TRANSCRIPT_MAX_BYTES && !database) {
    context.log({
      status: 'skipped',
      message: `the transcript is ${size} bytes, over the ${HOOK_TRANSCRIPT_MAX_BYTES} a hook reads: run "engram extract ${path}"`,
      sessionId: input.sessionId,
    });
    return { status: 'skipped', jobs: 0, reason: 'transcript too large' };
  }
  let transcript: Pick<Awaited<ReturnType<typeof readTranscript>>, 'conversation'>;
  try {
    transcript = await readTranscript(path, input);
  } catch (error) {
    if (isPermanentReadFailure(error)) return giveUp(describeReadFailure(error));
    if (errnoOf(error) !== undefined) return { status: 'unreadable', jobs: 0, reason: describeReadFailure(error) };
    throw error;
  }
  const { conversation } = transcript;
  if (conversation.messages.length === 0) return { status: 'nothing-new', jobs: 0, sessionId: conversation.sessionId };
  // Queueing needs no sandbox (the worker's agent mode opens it): the plain Extractor loads less.
  const { Extractor } = await import('../../extraction/extractor.js');
  const extractor = new Extractor({
    engram: opened.engram,
    projectRoot: opened.loaded.project.root,
    autoStart: false,
  });
  const result = await extractor.afterTurn(conversation);
  // Jobs created now: queueing what is already queued (a drain replayed) creates none.
  const created = result.jobs.filter((job) => job.created).length;
  return { status: result.status, jobs: created, sessionId: conversation.sessionId };
}

/** The session's transcript: its file in the agent's format, or its rows in the agent's database (OpenCode's). */
async function readTranscript(path: string, input: HookInput) {
  // Each agent's own session files (Codex's rollout JSONL): agent-hook-protocols.ts.
  const format = hookProtocol(input.agent)?.transcriptFormat ?? 'claude';
  if (format === 'opencode') {
    const { readOpenCodeSession } = await import('../../extraction/node/read-opencode-session.js');
    return readOpenCodeSession(path, input.sessionId);
  }
  const { readTranscriptFile } = await import('../../extraction/node/read-transcript.js');
  return readTranscriptFile(path, { format, sessionId: input.sessionId, maxBytes: HOOK_TRANSCRIPT_MAX_BYTES });
}

/**
 * SessionEnd: the transcript's new part queued as at Stop, and the session counted for
 * consolidation (`queueDream`, once per session however often it is called). The worker checks
 * the dream's gates after extraction (24 h, 5 sessions, the lock): never inline, never in the hook.
 */
export async function queueSessionEnd(context: QueueContext): Promise<QueueOutcome> {
  const outcome = context.input.transcriptPath === undefined ? undefined : await queueTranscript(context);
  const { queueDream } = await import('../../consolidation/dream-state.js');
  await queueDream(context.opened.engram.store, { sessionId: context.input.sessionId });
  return outcome ?? { status: 'skipped', jobs: 0, reason: 'no transcript_path' };
}

// What no retry fixes: the path is gone, is not a file, or this user may not read it.
const PERMANENT_READ_CODES = new Set([
  'ENOENT',
  'ENOTDIR',
  'EISDIR',
  'EACCES',
  'EPERM',
  'ELOOP',
  'ENAMETOOLONG',
  'EINVAL',
]);

function errnoOf(error: unknown): string | undefined {
  const own = (error as NodeJS.ErrnoException | undefined)?.code;
  if (typeof own === 'string' && own.startsWith('E') && !isEngramError(error)) return own;
  const cause = (error as { cause?: NodeJS.ErrnoException } | undefined)?.cause;
  return typeof cause?.code === 'string' ? cause.code : undefined;
}

/** Whether reading a transcript failed for good: a permanent errno, or a file that is not a transcript (not text, too large). */
function isPermanentReadFailure(error: unknown): boolean {
  const errno = errnoOf(error);
  if (errno !== undefined) return PERMANENT_READ_CODES.has(errno);
  return isEngramError(error) && ['INVALID_INPUT', 'NOT_FOUND', 'PAYLOAD_TOO_LARGE'].includes(error.code);
}

function describeReadFailure(error: unknown): string {
  const errno = errnoOf(error);
  const message = error instanceof Error ? error.message : String(error);
  return errno !== undefined && !message.includes(errno) ? `${errno}: ${message}` : message;
}

/** Tokens of a context text, for the log and tests. */
export function contextTokens(text: string, bytesPerToken: number): number {
  return estimateTextTokens(text, { bytesPerToken });
}
