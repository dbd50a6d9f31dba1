import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { AGENT_NAMES, type AgentName } from './agent-names.js';
import { parseHookInput, type HookEventName, type HookInput } from './hook-input.js';

/**
 * How one coding agent speaks the hook protocol engram's one hook runner (hook-main.ts) answers:
 * which of engram's hook words it fires and under what event name, where its project folder is
 * named, the output that injects context, and the format of its session files. A new agent is a
 * description here (and one in agent-installs.ts), not a copy of the runner. Claude Code and Codex
 * read snake_case stdin (`session_id`, `transcript_path`, `cwd`, `prompt`, `source`), Copilot the
 * same fields in camelCase; for each, exit 0 means "go on", and a timeout or any other failure goes
 * on without context.
 */
export interface AgentHookProtocol {
  agent: AgentName;
  /** Recorded in history as the actor of what its hooks (and their worker) change. */
  actor: string;
  /** The agent's event name for each engram hook word it fires. */
  events: Partial<Record<HookEventName, string>>;
  /** An environment variable the agent sets to the session's project folder, if any. */
  projectDirEnv?: string;
  /** The transcript reader for its session files (read-transcript.ts's format names; `opencode`: its SQLite database, read-opencode-session.ts). */
  transcriptFormat: 'claude' | 'codex' | 'copilot' | 'gemini' | 'qwen' | 'opencode';
  /** Its stdin's field names: snake_case (`session_id`, `transcript_path`) unless it says camelCase (`sessionId`, `transcriptPath`). */
  stdinFields?: 'camelCase';
  /** Where its session file is when an event's stdin names none (Copilot's sessionEnd), given the session id and the hook's env. */
  sessionFile?: (sessionId: string, env: Record<string, string | undefined>) => string | undefined;
  /**
   * The stdin field that holds the user's own text on the per-prompt hook (default `prompt`). An
   * agent whose prompt hook also fires for sends that are not the user's (Qwen Code: tool results)
   * names the field it fills only for typed text; a call without it recalls nothing.
   */
  promptField?: string;
  /** The stdout JSON that gives the model `context` and the user `notice`. */
  output: (event: string, context: string | undefined, notice: string | undefined) => object;
}

export { AGENT_NAMES, type AgentName };

/** Claude Code's and Codex's shape: `hookSpecificOutput.additionalContext`, and `systemMessage` for the user. */
const hookSpecificOutput = (event: string, context: string | undefined, notice: string | undefined): object => ({
  ...(notice !== undefined && { systemMessage: notice }),
  ...(context !== undefined && { hookSpecificOutput: { hookEventName: event, additionalContext: context } }),
});

export const AGENT_HOOK_PROTOCOLS: Record<AgentName, AgentHookProtocol> = {
  'claude-code': {
    agent: 'claude-code',
    actor: 'claude-code',
    events: {
      'session-start': 'SessionStart',
      'user-prompt-submit': 'UserPromptSubmit',
      stop: 'Stop',
      'pre-compact': 'PreCompact',
      'session-end': 'SessionEnd',
    },
    projectDirEnv: 'CLAUDE_PROJECT_DIR',
    transcriptFormat: 'claude',
    output: hookSpecificOutput,
  },
  // Codex 0.171 (test/support/agent-clis.md §1): hooks.json events fire only when config.toml holds
  // their trust hash; context lands as a developer message; `codex exec` fires no SessionEnd, so
  // Stop (end of every turn) queues the rollout's new part. PreCompact fires before a compaction and
  // SessionStart again with `source: compact` after it, where the surfaced memories are given back.
  codex: {
    agent: 'codex',
    actor: 'codex',
    events: {
      'session-start': 'SessionStart',
      'user-prompt-submit': 'UserPromptSubmit',
      stop: 'Stop',
      'pre-compact': 'PreCompact',
    },
    transcriptFormat: 'codex',
    output: hookSpecificOutput,
  },
  // Copilot CLI 1.0.102 (test/support/agent-clis.md §4): hooks in $COPILOT_HOME/hooks/*.json (default
  // ~/.copilot), camelCase stdin, `{"additionalContext"}` out: sessionStart's becomes a user message,
  // userPromptSubmitted's a `<system_reminder>` after the prompt. agentStop (end of every turn) names
  // the session's events.jsonl; sessionEnd names none, so it is found from the session id. No
  // compaction event in this version; nothing is shown to the user (no field for it).
  copilot: {
    agent: 'copilot',
    actor: 'copilot',
    events: {
      'session-start': 'sessionStart',
      'user-prompt-submit': 'userPromptSubmitted',
      stop: 'agentStop',
      'session-end': 'sessionEnd',
    },
    projectDirEnv: 'COPILOT_PROJECT_DIR',
    transcriptFormat: 'copilot',
    stdinFields: 'camelCase',
    sessionFile: copilotSessionFile,
    output: (_event, context) => (context === undefined ? {} : { additionalContext: context }),
  },
  // Gemini CLI 0.61 (test/support/agent-clis.md §2): its per-prompt event is BeforeAgent and its end
  // of turn AfterAgent; both contexts land as <hook_context> in the user turn. stdout must be pure
  // JSON (the runner prints one JSON document or nothing). PreCompress is not hooked: under 0.61 it
  // fires before every prompt, compressed or not, and no event follows a compaction, so it cannot
  // tell engram when to give surfaced memories back; AfterAgent already queues every turn.
  gemini: {
    agent: 'gemini',
    actor: 'gemini',
    events: {
      'session-start': 'SessionStart',
      'user-prompt-submit': 'BeforeAgent',
      stop: 'AfterAgent',
      'session-end': 'SessionEnd',
    },
    projectDirEnv: 'GEMINI_PROJECT_DIR',
    transcriptFormat: 'gemini',
    output: hookSpecificOutput,
  },
  // Qwen Code 0.24.4 (§5): Claude Code's events and shape. Its UserPromptSubmit also fires for
  // tool-result and hook sends, where `prompt` is not the user's text; `submitted_prompt` is set
  // only for what the user submitted, so recall reads that. SessionStart comes again with
  // `source: compact` after a compaction (its docs), where the surfaced memories are given back.
  qwen: {
    agent: 'qwen',
    actor: 'qwen',
    events: {
      'session-start': 'SessionStart',
      'user-prompt-submit': 'UserPromptSubmit',
      stop: 'Stop',
      'pre-compact': 'PreCompact',
      'session-end': 'SessionEnd',
    },
    promptField: 'submitted_prompt',
    transcriptFormat: 'qwen',
    output: hookSpecificOutput,
  },
  // OpenCode 1.18 (test/support/agent-clis.md §3) has no hook commands: engram's plugin module
  // (opencode-plugin-module.ts) runs this runner for its own events and speaks engram's stdin shape
  // to it (`session_id`, `cwd`, `prompt`, `source`; `transcript_path` = OpenCode's SQLite database,
  // whose rows for the session are the transcript) and reads `hookSpecificOutput.additionalContext`
  // back, pushing it as a synthetic text part of the user's message. `session.created` starts the
  // session; `chat.message` is per prompt; `session.idle` (end of every turn) queues the session's
  // new messages; after `session.compacted` the next prompt starts with `source: compact`.
  opencode: {
    agent: 'opencode',
    actor: 'opencode',
    events: {
      'session-start': 'session.created',
      'user-prompt-submit': 'chat.message',
      stop: 'session.idle',
    },
    transcriptFormat: 'opencode',
    output: hookSpecificOutput,
  },
};

/** Copilot's session log: `<COPILOT_HOME or ~/.copilot>/session-state/<id>/events.jsonl`; an id that is not one folder name has none. */
export function copilotSessionFile(sessionId: string, env: Record<string, string | undefined>): string | undefined {
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(sessionId)) return undefined;
  const home = copilotHome(env);
  return home === undefined ? undefined : join(home, 'session-state', sessionId, 'events.jsonl');
}

/** Copilot CLI's folder: COPILOT_HOME (1.0.102 honours it for hooks, MCP config and sessions), else ~/.copilot. */
export function copilotHome(env: Record<string, string | undefined>): string | undefined {
  if (env.COPILOT_HOME !== undefined && env.COPILOT_HOME !== '') return resolve(env.COPILOT_HOME);
  const userHome = env.HOME !== undefined && env.HOME !== '' ? env.HOME : homedir();
  return userHome === '' ? undefined : join(userHome, '.copilot');
}

/** Whether an agent's transcript path names a database holding every session (read one session's rows; no size cap on the file). */
export function transcriptIsDatabase(agent: string | undefined): boolean {
  return hookProtocol(agent)?.transcriptFormat === 'opencode';
}

/** The protocol for an agent's name (`undefined`: Claude Code, as every hook command before agents had). */
export function hookProtocol(agent: string | undefined): AgentHookProtocol | undefined {
  if (agent === undefined) return AGENT_HOOK_PROTOCOLS['claude-code'];
  return (AGENT_NAMES as readonly string[]).includes(agent) ? AGENT_HOOK_PROTOCOLS[agent as AgentName] : undefined;
}

/**
 * One event's stdin read as `protocol` says: its field names and prompt field, the agent named in
 * the input (so its worker reads the agent's transcript format), and the agent's own session file
 * when the event names none (Copilot's sessionEnd). The hook runner and the fast path's adopter
 * (hook-incoming.ts) both read an event by this.
 */
export function readAgentHookInput(
  protocol: AgentHookProtocol,
  text: string,
  env: Record<string, string | undefined>,
): { input?: HookInput; problem?: string } {
  const parsed = parseHookInput(text, {
    ...(protocol.stdinFields !== undefined && { fields: protocol.stdinFields }),
    ...(protocol.promptField !== undefined && { promptField: protocol.promptField }),
  });
  if (!parsed.input) return parsed;
  const input: HookInput = { ...parsed.input, ...(protocol.agent !== 'claude-code' && { agent: protocol.agent }) };
  if (input.transcriptPath === undefined && protocol.sessionFile !== undefined) {
    const file = protocol.sessionFile(input.sessionId, env);
    if (file !== undefined) input.transcriptPath = file;
  }
  return { input };
}
