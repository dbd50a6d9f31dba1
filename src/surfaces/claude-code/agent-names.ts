/**
 * The coding agents engram's hooks speak to, by the name `engram install <agent>` and
 * `engram hook … --agent <name>` take. Its own file, below the protocols and the hook input, so both
 * can name an agent without importing each other.
 */
export const AGENT_NAMES = ['claude-code', 'codex', 'copilot', 'gemini', 'opencode', 'qwen'] as const;
export type AgentName = (typeof AGENT_NAMES)[number];
