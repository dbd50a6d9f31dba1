import type { Settings } from '../kernel/settings.js';
import type { ToolResultBlock, ToolUseBlock } from '../contracts/language-model.js';
import type {
  CompactBoundary,
  ResumedSession,
  SessionMessage,
  SessionMetadata,
  TodoItem,
} from '../contracts/session-message.js';
import { freezeMessage } from './session-message-helpers.js';
import { WorkingMemory } from './working-memory.js';

/** What a Session starts from: empty for a new one, or rebuilt from a transcript. */
export interface SessionStartState {
  messages: SessionMessage[];
  lastUuid: string | null;
  workingMemory: WorkingMemory;
  plan: string | undefined;
  filesEdited: string[];
  createdAt: string | undefined;
}

/** What a resumed session's unanswered tool calls are answered with. */
export const INTERRUPTED_TOOL_RESULT = 'Interrupted: the session ended before this tool call was answered.';

/**
 * The state a Session starts from (SPEC §2 resume): the live messages (frozen), the last uuid the
 * next message links to, the todo list (leniently: an edited file loses only the bad items), the
 * plan and the files edited from the latest compact boundary. Tool calls a killed process left open
 * are answered as interrupted by the next user message (`errorToolResults`).
 */
export function sessionStartState(
  resumed: ResumedSession | undefined,
  settings: Settings,
  now: () => Date,
): SessionStartState {
  if (!resumed)
    return {
      messages: [],
      lastUuid: null,
      workingMemory: new WorkingMemory({ settings, now }),
      plan: undefined,
      filesEdited: [],
      createdAt: undefined,
    };
  const messages = resumed.messages.map(freezeMessage);
  return {
    messages,
    lastUuid: resumed.leafUuid ?? messages.at(-1)?.uuid ?? resumed.boundary?.uuid ?? null,
    workingMemory: WorkingMemory.fromResumed(resumed, { settings, now }),
    plan: planFromBoundary(resumed.boundary),
    filesEdited: [...(resumed.boundary?.filesEdited ?? [])],
    createdAt: resumed.metadata.createdAt,
  };
}

/** The plan a boundary kept, without the todo list rendered after it (the todos come back on their own). */
export function planFromBoundary(boundary: CompactBoundary | undefined): string | undefined {
  return boundary?.plan?.replace(/(?:^|\n\n)Todo list:\n[\s\S]*$/, '') || undefined;
}

/** Error results that close open tool calls (a killed process, a user who moved on, a result that could not be kept). */
export function errorToolResults(
  pending: readonly ToolUseBlock[],
  content: string = INTERRUPTED_TOOL_RESULT,
): ToolResultBlock[] {
  return pending.map((use): ToolResultBlock => ({ type: 'tool_result', toolUseId: use.id, content, isError: true }));
}

/** The metadata line of a transcript (what a listing shows and resume reads back): title, place, model, first and latest message, count. */
export function sessionMetadata(input: {
  sessionId: string;
  title?: string;
  cwd?: string;
  gitBranch: string;
  model: string;
  createdAt?: string;
  messages: readonly SessionMessage[];
}): SessionMetadata {
  const createdAt = input.createdAt ?? input.messages[0]?.timestamp;
  return {
    sessionId: input.sessionId,
    ...(input.title !== undefined && { title: input.title }),
    ...(input.cwd !== undefined && { cwd: input.cwd }),
    gitBranch: input.gitBranch,
    model: input.model,
    ...(createdAt !== undefined && { createdAt }),
    ...(input.messages.length > 0 && { updatedAt: input.messages.at(-1)!.timestamp }),
    messageCount: input.messages.length,
  };
}
