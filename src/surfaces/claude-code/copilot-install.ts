import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { AgentInstallDescription } from './agent-installs.js';
import { parseJsonObject } from './agent-install-json.js';
import { AGENT_HOOK_PROTOCOLS, copilotHome } from './agent-hook-protocols.js';
import { agentHookCommand } from './agent-hook-command.js';
import type { HookEventName } from './hook-input.js';

/**
 * Copilot CLI's install description (agent-installs.ts does the writing): engram's hooks as a file
 * of their own, `$COPILOT_HOME/hooks/engram.json` (default ~/.copilot; Copilot 1.0.102 loads every
 * `*.json` there: `{"version":1,"hooks":{"<event>":[{"type":"command","bash":…,"timeoutSec":…}]}}`),
 * and the MCP server as `mcpServers.engram` in `$COPILOT_HOME/mcp-config.json`, beside the user's
 * own servers. A repository's `.github/hooks` did not run in an untrusted folder (test/support/agent-clis.md §4),
 * so the user's folder is the one place that works everywhere.
 */

/** Seconds (Copilot's `timeoutSec`) before Copilot kills a hook; the hook answers within hooks.deadlineMs long before. */
export const COPILOT_HOOK_TIMEOUT_SECONDS = 10;

export interface CopilotPaths {
  home: string;
  hooks: string;
  mcpConfig: string;
}

export function copilotPaths(env: Record<string, string | undefined>): CopilotPaths {
  const home = copilotHome(env) ?? '.copilot';
  return { home, hooks: join(home, 'hooks', 'engram.json'), mcpConfig: join(home, 'mcp-config.json') };
}

/** The hook command Copilot runs (with bash) for one event: this Node and engram's launcher, by absolute path. */
export function copilotHookCommand(launcher: string, word: HookEventName, node = process.execPath): string {
  return agentHookCommand('copilot', launcher, word, node);
}

/** The events engram hooks in Copilot, and their words on engram's hook command. */
function events(): Array<[HookEventName, string]> {
  return Object.entries(AGENT_HOOK_PROTOCOLS.copilot.events) as Array<[HookEventName, string]>;
}

/** engram's hooks file, as install writes it. */
export function copilotHooksText(launcher: string, node?: string): string {
  const hooks = Object.fromEntries(
    events().map(([word, event]) => [
      event,
      [{ type: 'command', bash: copilotHookCommand(launcher, word, node), timeoutSec: COPILOT_HOOK_TIMEOUT_SECONDS }],
    ]),
  );
  return `${JSON.stringify({ version: 1, hooks }, null, 2)}\n`;
}

export function copilotInstallDescription(options: {
  env: Record<string, string | undefined>;
  /** engram's launcher script (plugins/engram/scripts/engram.mjs). */
  launcher: string;
  node?: string;
}): AgentInstallDescription {
  const paths = copilotPaths(options.env);
  const node = options.node ?? process.execPath;
  const hooksText = copilotHooksText(options.launcher, node);
  return {
    agent: 'copilot',
    title: 'Copilot CLI',
    edits: () => [
      { kind: 'file', file: paths.hooks, text: hooksText, what: "engram's hooks" },
      {
        kind: 'json',
        file: paths.mcpConfig,
        arrays: [],
        keys: [
          {
            path: ['mcpServers'],
            key: 'engram',
            value: { type: 'local', command: node, args: [options.launcher, 'mcp'], tools: ['*'] },
            what: 'the engram MCP server',
          },
        ],
      },
    ],
    problems(read) {
      const problems: string[] = [];
      let servers: unknown;
      let hooks: Record<string, unknown>;
      try {
        servers = parseJsonObject(paths.mcpConfig, read(paths.mcpConfig)).mcpServers;
        hooks = parseJsonObject(paths.hooks, read(paths.hooks));
      } catch (error) {
        return [`cannot read Copilot's configuration: ${(error as Error).message}`];
      }
      if (!existsSync(options.launcher)) problems.push(`engram's launcher ${options.launcher} is gone: install again`);
      const engram =
        servers !== null && typeof servers === 'object' ? (servers as Record<string, unknown>).engram : undefined;
      if (engram === undefined) problems.push(`${paths.mcpConfig} has no mcpServers.engram`);
      if (read(paths.hooks) === undefined)
        return [...problems, `${paths.hooks} is gone: run "engram install copilot" again`];
      if (hooks.version !== 1)
        problems.push(`${paths.hooks} is not "version": 1, the only hooks file Copilot 1.0.102 reads`);
      const groups =
        hooks.hooks !== null && typeof hooks.hooks === 'object' ? (hooks.hooks as Record<string, unknown>) : {};
      for (const [word, event] of events()) {
        const list = Array.isArray(groups[event]) ? (groups[event] as unknown[]) : [];
        const ours = list.some((handler) => {
          const bash = (handler as { bash?: unknown } | null)?.bash;
          return typeof bash === 'string' && bash.includes(` hook ${word} --agent copilot`);
        });
        if (!ours) problems.push(`${paths.hooks} has no engram ${event} hook`);
      }
      return problems;
    },
  };
}
