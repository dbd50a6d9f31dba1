import { existsSync } from 'node:fs';
import type { AgentInstallDescription } from './agent-installs.js';
import { parseJsonObject } from './agent-install-json.js';
import { AGENT_HOOK_PROTOCOLS, type AgentName } from './agent-hook-protocols.js';
import { agentHookCommand } from './agent-hook-command.js';
import type { HookEventName } from './hook-input.js';

/**
 * The install description of an agent that keeps its hooks and its MCP servers in one JSON
 * settings file, Claude Code's hook shape (`hooks.<Event>: [{hooks: [{type, command, timeout}]}]`)
 * and `mcpServers.<name>: {command, args}`: Gemini CLI and Qwen Code (gemini-install.ts,
 * qwen-install.ts). One engram group per event the agent's protocol names (agent-hook-protocols.ts),
 * appended after the user's; the `engram` MCP server key, left alone when the user has one.
 * agent-installs.ts does the writing, the record and the byte-for-byte uninstall.
 */

export interface SettingsJsonAgent {
  agent: Exclude<AgentName, 'claude-code'>;
  title: string;
  /** The settings file (user scope). */
  settings: string;
  /** The `timeout` written on each hook, in the agent's own unit. */
  timeout: number;
  /** More fields on each hook handler (Gemini's `name`). */
  handlerFields?: Record<string, unknown>;
  /** engram's launcher script (plugins/engram/scripts/engram.mjs). */
  launcher: string;
  node?: string;
}

/** The words engram's hook commands carry for one event of an agent: how its entries are found again. */
const marker = (agent: string, word: HookEventName): string => ` hook ${word} --agent ${agent}`;

export function settingsJsonInstallDescription(options: SettingsJsonAgent): AgentInstallDescription {
  const { agent, settings } = options;
  const events = Object.entries(AGENT_HOOK_PROTOCOLS[agent].events) as Array<[HookEventName, string]>;
  const node = options.node ?? process.execPath;
  return {
    agent,
    title: options.title,
    edits: () => [
      {
        kind: 'json',
        file: settings,
        arrays: events.map(([word, event]) => ({
          path: ['hooks', event],
          items: [
            {
              hooks: [
                {
                  type: 'command',
                  ...options.handlerFields,
                  command: agentHookCommand(agent, options.launcher, word, node),
                  timeout: options.timeout,
                },
              ],
            },
          ],
          marker: marker(agent, word),
        })),
        keys: [
          {
            path: ['mcpServers'],
            key: 'engram',
            value: { command: node, args: [options.launcher, 'mcp'] },
            what: 'the engram MCP server',
          },
        ],
      },
    ],
    problems(read) {
      let object: Record<string, unknown>;
      try {
        object = parseJsonObject(settings, read(settings));
      } catch (error) {
        return [`cannot read ${options.title}'s settings: ${(error as Error).message}`];
      }
      const problems: string[] = [];
      if (!existsSync(options.launcher)) problems.push(`engram's launcher ${options.launcher} is gone: install again`);
      const servers = object.mcpServers as Record<string, unknown> | undefined;
      if (servers === null || typeof servers !== 'object' || !Object.hasOwn(servers, 'engram'))
        problems.push(`${settings} has no mcpServers.engram`);
      const hooks = (object.hooks ?? {}) as Record<string, unknown>;
      for (const [word, event] of events) {
        const groups = hooks !== null && typeof hooks === 'object' ? hooks[event] : undefined;
        const found = Array.isArray(groups) && JSON.stringify(groups).includes(marker(agent, word));
        if (!found) problems.push(`${settings} has no engram ${event} hook; run "engram install ${agent}" again`);
      }
      return problems;
    },
  };
}
