import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import type { AgentInstallDescription } from './agent-installs.js';
import { settingsJsonInstallDescription } from './settings-json-agent-install.js';

/**
 * Qwen Code's install description: engram's hooks (SessionStart, UserPromptSubmit, Stop,
 * PreCompact, SessionEnd) and `mcpServers.engram` in the user settings, `~/.qwen/settings.json`,
 * where `QWEN_HOME` stands for the ~/.qwen folder when set (Qwen Code 0.24.4 reads it so).
 */

/**
 * Seconds (Qwen Code's unit for a command hook's `timeout`; it reads 1000 or more as milliseconds).
 * The hook answers within hooks.deadlineMs long before.
 */
export const QWEN_HOOK_TIMEOUT_SECONDS = 10;

export function qwenSettingsPath(env: Record<string, string | undefined>): string {
  const configured = env.QWEN_HOME;
  if (configured !== undefined && configured !== '') return join(resolve(configured), 'settings.json');
  const home = env.HOME !== undefined && env.HOME !== '' ? env.HOME : homedir();
  return join(home, '.qwen', 'settings.json');
}

export function qwenInstallDescription(options: {
  env: Record<string, string | undefined>;
  launcher: string;
  node?: string;
}): AgentInstallDescription {
  return settingsJsonInstallDescription({
    agent: 'qwen',
    title: 'Qwen Code',
    settings: qwenSettingsPath(options.env),
    timeout: QWEN_HOOK_TIMEOUT_SECONDS,
    launcher: options.launcher,
    ...(options.node !== undefined && { node: options.node }),
  });
}
