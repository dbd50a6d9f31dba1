import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import type { AgentName } from './agent-hook-protocols.js';
import { claudeCodePaths } from './claude-code-install.js';
import { codexPaths } from './codex-install.js';
import { copilotPaths } from './copilot-install.js';
import { geminiSettingsPath } from './gemini-install.js';
import { opencodePaths } from './opencode-install.js';
import { qwenSettingsPath } from './qwen-install.js';

/**
 * How `engram install --detect` tells that a coding agent is on this machine: its configuration
 * folder exists (it has run here, or its settings were put in place) or its command is on PATH (it
 * is installed, maybe never run yet). Either is enough: a person who has the agent expects engram to
 * reach it, and installing engram into an agent that later turns out unused only adds entries that
 * `engram uninstall` takes out again. One entry per agent; the Record makes a new agent name in
 * AGENT_NAMES fail to compile until it has one.
 */
export interface AgentPresence {
  /** How engram's messages name it. */
  title: string;
  /** Folders whose existence means the agent is set up here (its env override already applied). */
  configDirs(env: Record<string, string | undefined>): string[];
  /** Command names on PATH that run it. */
  commands: readonly string[];
}

export const AGENT_PRESENCE: Record<AgentName, AgentPresence> = {
  'claude-code': {
    title: 'Claude Code',
    configDirs: (env) => [claudeCodePaths(env, '.').configDir],
    commands: ['claude'],
  },
  codex: { title: 'Codex', configDirs: (env) => [codexPaths(env).home], commands: ['codex'] },
  copilot: { title: 'Copilot CLI', configDirs: (env) => [copilotPaths(env).home], commands: ['copilot'] },
  gemini: { title: 'Gemini CLI', configDirs: (env) => [dirname(geminiSettingsPath(env))], commands: ['gemini'] },
  opencode: { title: 'OpenCode', configDirs: (env) => [opencodePaths(env).config], commands: ['opencode'] },
  qwen: { title: 'Qwen Code', configDirs: (env) => [dirname(qwenSettingsPath(env))], commands: ['qwen'] },
};

/** One agent as detection found it: `found` says why (a folder, a command's path), or it is undefined. */
export interface DetectedAgent {
  agent: AgentName;
  title: string;
  found?: string;
}

const isDirectory = (path: string): boolean => {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
};

/** The first executable `name` on the PATH of `env` (with PATHEXT's endings on Windows), as a shell would find it. */
export function findOnPath(name: string, env: Record<string, string | undefined>): string | undefined {
  const endings = process.platform === 'win32' ? ['', ...(env.PATHEXT ?? '.EXE;.CMD;.BAT').split(';')] : [''];
  for (const folder of (env.PATH ?? '').split(delimiter)) {
    if (folder === '') continue;
    for (const ending of endings) {
      const candidate = join(folder, `${name}${ending}`);
      try {
        if (!statSync(candidate).isFile()) continue;
        accessSync(candidate, constants.X_OK);
        return candidate;
      } catch {
        // Not here or not executable: the next folder.
      }
    }
  }
  return undefined;
}

/** Every agent engram supports, each with why it counts as present (config folder first, then PATH). */
export function detectAgents(env: Record<string, string | undefined>): DetectedAgent[] {
  return (Object.entries(AGENT_PRESENCE) as Array<[AgentName, AgentPresence]>).map(([agent, presence]) => {
    const folder = presence.configDirs(env).find(isDirectory);
    if (folder !== undefined) return { agent, title: presence.title, found: folder };
    for (const command of presence.commands) {
      const path = findOnPath(command, env);
      if (path !== undefined) return { agent, title: presence.title, found: `${command} on PATH (${path})` };
    }
    return { agent, title: presence.title };
  });
}

/** Where detection looked for an agent it did not find, for the "not found" line. */
export function whereLooked(agent: AgentName, env: Record<string, string | undefined>): string {
  const presence = AGENT_PRESENCE[agent];
  return [
    ...presence.configDirs(env).map((dir) => `no ${dir}`),
    ...presence.commands.map((c) => `no ${c} on PATH`),
  ].join(', ');
}
