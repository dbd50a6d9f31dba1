import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import type { AgentInstallDescription } from './agent-installs.js';
import { parseJsonObject } from './agent-install-json.js';
import { AGENT_HOOK_PROTOCOLS } from './agent-hook-protocols.js';
import { agentHookCommand } from './agent-hook-command.js';
import type { HookEventName } from './hook-input.js';
import { readTomlStructure } from './toml-structure.js';

/**
 * Codex's install description (agent-installs.ts does the writing): engram's hooks in
 * `$CODEX_HOME/hooks.json` (default ~/.codex), and in `config.toml` the MCP server
 * (`[mcp_servers.engram]`) and one trust record per hook (`[hooks.state."<hooks.json>:<event>:<group>:<handler>"]
 * trusted_hash`): Codex 0.171 runs a hooks.json hook only when config.toml holds the hash of its
 * definition, and skips it silently otherwise (test/support/agent-clis.md §1). Status recomputes
 * each hash from hooks.json as it is now and says when it no longer matches.
 */

/** Seconds (Codex's unit) Codex gives each hook before it kills it; the hook answers within hooks.deadlineMs long before. */
export const CODEX_HOOK_TIMEOUT_SECONDS = 10;

export interface CodexPaths {
  home: string;
  hooks: string;
  config: string;
}

export function codexPaths(env: Record<string, string | undefined>): CodexPaths {
  const configured = env.CODEX_HOME;
  const userHome = env.HOME && env.HOME !== '' ? env.HOME : homedir();
  const home = configured && configured !== '' ? resolve(configured) : join(userHome, '.codex');
  return { home, hooks: join(home, 'hooks.json'), config: join(home, 'config.toml') };
}

/** The snake_case name Codex's trust keys and hashes give an event. */
const snake = (event: string): string => event.replace(/([a-z])([A-Z])/g, '$1_$2').toLowerCase();

interface Handler {
  type: 'command';
  command: string;
  timeout: number;
}

/** A value as canonical JSON: object keys sorted, no spaces (what Codex hashes). */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object')
    return `{${Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonical((value as Record<string, unknown>)[key])}`)
      .join(',')}}`;
  return JSON.stringify(value);
}

/** Codex's trust hash of one handler in its group (its matcher, if any, counts). */
export function codexTrustHash(event: string, handler: Record<string, unknown>, matcher?: unknown): string {
  const normalized = { async: false, ...handler };
  const identity = {
    event_name: snake(event),
    hooks: [normalized],
    ...(matcher !== undefined && matcher !== null && { matcher }),
  };
  return `sha256:${createHash('sha256').update(canonical(identity)).digest('hex')}`;
}

const trustKey = (hooksFile: string, event: string, group: number, handler: number): string =>
  `${hooksFile}:${snake(event)}:${group}:${handler}`;

/** The hook command Codex runs for one event: this Node and engram's launcher, by absolute path. */
export function codexHookCommand(launcher: string, word: HookEventName, node = process.execPath): string {
  return agentHookCommand('codex', launcher, word, node);
}

function hookGroups(file: string, text: string | undefined): Record<string, unknown> {
  const hooks = parseJsonObject(file, text).hooks;
  return hooks !== null && typeof hooks === 'object' && !Array.isArray(hooks) ? (hooks as Record<string, unknown>) : {};
}

/** The events engram hooks in Codex, and their words on engram's hook command. */
function events(): Array<[HookEventName, string]> {
  return Object.entries(AGENT_HOOK_PROTOCOLS.codex.events) as Array<[HookEventName, string]>;
}

export function codexInstallDescription(options: {
  env: Record<string, string | undefined>;
  /** engram's launcher script (plugins/engram/scripts/engram.mjs). */
  launcher: string;
  node?: string;
}): AgentInstallDescription {
  const paths = codexPaths(options.env);
  const handlerFor = (word: HookEventName): Handler => ({
    type: 'command',
    command: codexHookCommand(options.launcher, word, options.node),
    timeout: CODEX_HOOK_TIMEOUT_SECONDS,
  });
  const mcpLines = [
    `command = ${JSON.stringify(options.node ?? process.execPath)}`,
    `args = ${JSON.stringify([options.launcher, 'mcp'])}`,
  ];
  return {
    agent: 'codex',
    title: 'Codex',
    edits(read) {
      const groups = hookGroups(paths.hooks, read(paths.hooks));
      const hooks = events().map(([word, event]) => {
        const existing = groups[event];
        // engram's group goes last: its index is the count before it.
        const index = Array.isArray(existing) ? existing.length : 0;
        return { word, event, index, handler: handlerFor(word) };
      });
      return [
        {
          kind: 'json',
          file: paths.hooks,
          arrays: hooks.map((hook) => ({
            path: ['hooks', hook.event],
            items: [{ hooks: [hook.handler] }],
            marker: ` hook ${hook.word} --agent codex`,
          })),
        },
        {
          kind: 'toml',
          file: paths.config,
          tables: [
            { header: ['mcp_servers', 'engram'], lines: mcpLines, what: 'the engram MCP server' },
            ...hooks.map((hook) => ({
              header: ['hooks', 'state', trustKey(paths.hooks, hook.event, hook.index, 0)],
              lines: [`trusted_hash = ${JSON.stringify(codexTrustHash(hook.event, { ...hook.handler }))}`],
              what: `trust for engram's ${hook.event} hook`,
            })),
          ],
        },
      ];
    },
    problems(read) {
      const problems: string[] = [];
      let groups: Record<string, unknown>;
      let tables: ReturnType<typeof readTomlStructure>['tables'];
      try {
        groups = hookGroups(paths.hooks, read(paths.hooks));
        tables = readTomlStructure(read(paths.config) ?? '').tables;
      } catch (error) {
        return [`cannot read Codex's configuration: ${(error as Error).message}`];
      }
      if (!existsSync(options.launcher)) problems.push(`engram's launcher ${options.launcher} is gone: install again`);
      if (!tables.has('mcp_servers.engram')) problems.push(`${paths.config} has no [mcp_servers.engram]`);
      for (const [word, event] of events()) {
        const list = Array.isArray(groups[event]) ? (groups[event] as unknown[]) : [];
        let found: { group: number; handler: number; value: Record<string, unknown>; matcher: unknown } | undefined;
        list.forEach((group, g) => {
          const handlers = (group as { hooks?: unknown } | null)?.hooks;
          if (!Array.isArray(handlers)) return;
          handlers.forEach((handler, h) => {
            const command = (handler as { command?: unknown } | null)?.command;
            if (found === undefined && typeof command === 'string' && command.includes(`hook ${word} --agent codex`))
              found = {
                group: g,
                handler: h,
                value: handler as Record<string, unknown>,
                matcher: (group as { matcher?: unknown }).matcher,
              };
          });
        });
        if (found === undefined) {
          problems.push(`${paths.hooks} has no engram ${event} hook`);
          continue;
        }
        const key = trustKey(paths.hooks, event, found.group, found.handler);
        const trusted = tables.get(`hooks.state.${JSON.stringify(key)}`)?.get('trusted_hash');
        if (trusted !== codexTrustHash(event, found.value, found.matcher))
          problems.push(
            `Codex skips engram's ${event} hook: ${trusted === undefined ? 'config.toml holds no trust hash for it' : 'its trust hash in config.toml no longer matches hooks.json'}; run "engram install codex" again`,
          );
      }
      return problems;
    },
  };
}
