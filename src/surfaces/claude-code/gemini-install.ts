import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import type { AgentInstallDescription } from './agent-installs.js';
import { settingsJsonInstallDescription } from './settings-json-agent-install.js';

/**
 * Gemini CLI's install description: engram's hooks (SessionStart, BeforeAgent, AfterAgent,
 * SessionEnd) and `mcpServers.engram` in the user settings, `~/.gemini/settings.json`, where
 * `GEMINI_CLI_HOME` stands for the home folder when set (Gemini CLI 0.61 reads it so).
 */

/** Milliseconds (Gemini CLI's unit for a hook's `timeout`); the hook answers within hooks.deadlineMs long before. */
export const GEMINI_HOOK_TIMEOUT_MS = 10_000;

export function geminiSettingsPath(env: Record<string, string | undefined>): string {
  const configured = env.GEMINI_CLI_HOME;
  const home =
    configured !== undefined && configured !== ''
      ? resolve(configured)
      : env.HOME !== undefined && env.HOME !== ''
        ? env.HOME
        : homedir();
  return join(home, '.gemini', 'settings.json');
}

export function geminiInstallDescription(options: {
  env: Record<string, string | undefined>;
  launcher: string;
  node?: string;
}): AgentInstallDescription {
  return settingsJsonInstallDescription({
    agent: 'gemini',
    title: 'Gemini CLI',
    settings: geminiSettingsPath(options.env),
    timeout: GEMINI_HOOK_TIMEOUT_MS,
    // Gemini CLI names each hook in its messages ("Hook system message", /hooks).
    handlerFields: { name: 'engram' },
    launcher: options.launcher,
    ...(options.node !== undefined && { node: options.node }),
  });
}
