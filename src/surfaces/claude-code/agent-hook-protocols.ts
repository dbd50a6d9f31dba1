import type { HookEventName } from './hook-input.js';

/**
 * How one coding agent speaks the hook protocol engram's one hook runner (hook-main.ts) answers:
 * which of engram's hook words it fires and under what event name, where its project folder is
 * named, the output that injects context, and the format of its session files. A new agent is a
 * description here (and one in agent-installs.ts), not a copy of the runner. Both agents described
 * so far read the same snake_case stdin (`session_id`, `transcript_path`, `cwd`, `prompt`, `source`),
 * exit 0 means "go on", and a timeout or any other failure goes on without context.
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
  transcriptFormat: 'claude' | 'codex' | 'opencode';
  /** The stdout JSON that gives the model `context` and the user `notice`. */
  output: (event: string, context: string | undefined, notice: string | undefined) => object;
}

export const AGENT_NAMES = ['claude-code', 'codex', 'opencode'] as const;
export type AgentName = (typeof AGENT_NAMES)[number];

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

/** Whether an agent's transcript path names a database holding every session (read one session's rows; no size cap on the file). */
export function transcriptIsDatabase(agent: string | undefined): boolean {
  return hookProtocol(agent)?.transcriptFormat === 'opencode';
}

/** The protocol for an agent's name (`undefined`: Claude Code, as every hook command before agents had). */
export function hookProtocol(agent: string | undefined): AgentHookProtocol | undefined {
  if (agent === undefined) return AGENT_HOOK_PROTOCOLS['claude-code'];
  return (AGENT_NAMES as readonly string[]).includes(agent) ? AGENT_HOOK_PROTOCOLS[agent as AgentName] : undefined;
}
