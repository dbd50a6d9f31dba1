import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import type { AgentInstallDescription } from './agent-installs.js';
import { parseJsonObject } from './agent-install-json.js';
import { opencodePluginModule } from './opencode-plugin-module.js';

/**
 * OpenCode's install description (agent-installs.ts does the writing): engram's plugin module as a
 * whole file in `<config>/plugin/engram.js` (OpenCode 1.18 loads `{plugin,plugins}/*.{ts,js}` from its
 * config folder, `$XDG_CONFIG_HOME/opencode`, default ~/.config/opencode) and the MCP server as the
 * object key `mcp.engram` in `<config>/opencode.json` (its docs' shape: `type: local`, `command` an
 * array). Status says when the plugin file is gone, edited or from another engram, or the MCP entry
 * is missing.
 */

/** Milliseconds the plugin gives the runner beyond hooks.deadlineMs, for starting Node (slow under load). */
export const OPENCODE_SPAWN_GRACE_MS = 4_000;

export interface OpenCodePaths {
  config: string;
  plugin: string;
  settings: string;
}

export function opencodePaths(env: Record<string, string | undefined>): OpenCodePaths {
  const userHome = env.HOME && env.HOME !== '' ? env.HOME : homedir();
  const base =
    env.XDG_CONFIG_HOME && env.XDG_CONFIG_HOME !== '' ? resolve(env.XDG_CONFIG_HOME) : join(userHome, '.config');
  const config = join(base, 'opencode');
  // OpenCode reads opencode.json and opencode.jsonc: the one the user has, else opencode.json.
  const jsonc = join(config, 'opencode.jsonc');
  const json = join(config, 'opencode.json');
  return {
    config,
    plugin: join(config, 'plugin', 'engram.js'),
    settings: !existsSync(json) && existsSync(jsonc) ? jsonc : json,
  };
}

export function opencodeInstallDescription(options: {
  env: Record<string, string | undefined>;
  /** engram's launcher script (plugins/engram/scripts/engram.mjs). */
  launcher: string;
  node?: string;
  /** The hooks' deadline (hooks.deadlineMs) the plugin waits for, plus OPENCODE_SPAWN_GRACE_MS. */
  deadlineMs: number;
}): AgentInstallDescription {
  const paths = opencodePaths(options.env);
  const node = options.node ?? process.execPath;
  const plugin = opencodePluginModule({
    node,
    launcher: options.launcher,
    waitMs: options.deadlineMs + OPENCODE_SPAWN_GRACE_MS,
  });
  const server = { type: 'local', command: [node, options.launcher, 'mcp'], enabled: true };
  return {
    agent: 'opencode',
    title: 'OpenCode',
    edits: () => [
      { kind: 'file', file: paths.plugin, text: plugin, what: "engram's plugin" },
      {
        kind: 'json',
        file: paths.settings,
        arrays: [],
        keys: [{ path: ['mcp'], key: 'engram', value: server, what: 'the engram MCP server (mcp.engram)' }],
      },
    ],
    problems(read) {
      const problems: string[] = [];
      let mcp: unknown;
      try {
        mcp = parseJsonObject(paths.settings, read(paths.settings)).mcp;
      } catch (error) {
        return [`cannot read OpenCode's configuration: ${(error as Error).message}`];
      }
      if (!existsSync(options.launcher)) problems.push(`engram's launcher ${options.launcher} is gone: install again`);
      const text = read(paths.plugin);
      if (text === undefined) problems.push(`${paths.plugin} is gone`);
      else if (text !== plugin)
        problems.push(`${paths.plugin} is not the plugin this engram writes (edited, or older)`);
      const entry = mcp !== null && typeof mcp === 'object' ? (mcp as Record<string, unknown>).engram : undefined;
      if (entry === undefined) problems.push(`${paths.settings} has no mcp.engram`);
      return problems;
    },
  };
}
