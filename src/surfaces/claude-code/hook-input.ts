import { MAX_CONVERSATION_ID_LENGTH } from '../../contracts/conversation.js';
import type { AgentName } from './agent-names.js';

/** The Claude Code hook events engram handles, by the name its hook commands give them. */
export const HOOK_EVENTS = {
  'session-start': 'SessionStart',
  'user-prompt-submit': 'UserPromptSubmit',
  stop: 'Stop',
  'pre-compact': 'PreCompact',
  'session-end': 'SessionEnd',
} as const;

export type HookEventName = keyof typeof HOOK_EVENTS;

/** What engram reads of a hook's stdin (FORMATS.md §1.3); every field checked, the rest ignored. */
export interface HookInput {
  sessionId: string;
  transcriptPath?: string;
  cwd?: string;
  /** SessionStart: startup, resume, clear, compact or fork. */
  source?: string;
  /** UserPromptSubmit: the prompt as typed. */
  prompt?: string;
  /** SessionEnd: why the session ended. */
  reason?: string;
  /** The agent whose hook this is, when not Claude Code (agent-hook-protocols.ts): its transcripts' format. */
  agent?: Exclude<AgentName, 'claude-code'>;
}

/** Largest stdin a hook reads: a prompt of a few MB is possible, more is not a hook's input. */
export const MAX_HOOK_INPUT_BYTES = 8 * 1024 * 1024;

/** A transcript larger than this is not read by the drainer either: `engram extract` reads it. */
export const HOOK_TRANSCRIPT_MAX_BYTES = 64 * 1024 * 1024;
const MAX_PATH_LENGTH = 4_096;
const CONTROL = /[\u0000-\u001F\u007F-\u009F]/;

/** Whether a command-line word names an event engram handles. */
export function isHookEventName(value: string): value is HookEventName {
  return Object.hasOwn(HOOK_EVENTS, value);
}

/**
 * Reads a hook's stdin text. Returns undefined (with why) for what is not an object with a usable
 * session id: the hook then does nothing. Paths must be absolute; odd values are dropped one by one.
 * `camelCase`: the agent names its fields `sessionId`, `transcriptPath` (Copilot CLI); the others
 * (`cwd`, `prompt`, `source`, `reason`) are one word either way.
 */
export function parseHookInput(
  text: string,
  /** `fields`: camelCase names (Copilot CLI); `promptField`: the field holding the user's own text (agent-hook-protocols.ts), default `prompt`. */
  options: { fields?: 'camelCase'; promptField?: string } = {},
): { input?: HookInput; problem?: string } {
  const camel = options.fields === 'camelCase';
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { problem: `stdin is not JSON (${text.length} characters)` };
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    return { problem: 'stdin is not a JSON object' };
  const record = value as Record<string, unknown>;
  const sessionId = camel ? record.sessionId : record.session_id;
  if (
    typeof sessionId !== 'string' ||
    sessionId === '' ||
    sessionId.length > MAX_CONVERSATION_ID_LENGTH ||
    CONTROL.test(sessionId)
  )
    return { problem: `stdin has no usable ${camel ? 'sessionId' : 'session_id'}` };
  const input: HookInput = { sessionId };
  const transcriptPath = absolutePath(camel ? record.transcriptPath : record.transcript_path);
  if (transcriptPath !== undefined) input.transcriptPath = transcriptPath;
  const cwd = absolutePath(record.cwd);
  if (cwd !== undefined) input.cwd = cwd;
  if (typeof record.source === 'string' && record.source.length <= 40) input.source = record.source;
  const prompt = record[options.promptField ?? 'prompt'];
  if (typeof prompt === 'string') input.prompt = prompt;
  if (typeof record.reason === 'string' && record.reason.length <= 80) input.reason = record.reason;
  return { input };
}

function absolutePath(value: unknown): string | undefined {
  if (typeof value !== 'string' || value === '' || value.length > MAX_PATH_LENGTH || CONTROL.test(value))
    return undefined;
  return value.startsWith('/') || /^[A-Za-z]:[\\/]/.test(value) ? value : undefined;
}

/** Recorded in history as the actor of changes the hooks (and their worker) make. */
export const HOOK_ACTOR = 'claude-code';
