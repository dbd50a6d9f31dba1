import { EngramError } from '../../../kernel/errors.js';
import { loadSettings } from '../../../node/load-settings.js';
import {
  installClaudeCode,
  recordedSkillDirectories,
  recordSkillDirectories,
  uninstallClaudeCode,
  type InstallScope,
} from '../../claude-code/claude-code-install.js';
import { duplicateServerWarning, otherEngramMcpServers } from '../../claude-code/claude-code-mcp-servers.js';
import { removeInstalledSkills, syncInstalledSkills } from '../../claude-code/skills/installed-skills.js';
import { openEngram } from '../../../node/open-engram.js';
import { installAgent, uninstallAgent } from '../../claude-code/agent-installs.js';
import { codexInstallDescription } from '../../claude-code/codex-install.js';
import { copilotInstallDescription } from '../../claude-code/copilot-install.js';
import { geminiInstallDescription } from '../../claude-code/gemini-install.js';
import { opencodeInstallDescription } from '../../claude-code/opencode-install.js';
import { qwenInstallDescription } from '../../claude-code/qwen-install.js';
import { runForDetectedAgents } from './install-detect.js';
import type { AgentInstallDescription, AgentUninstallResult } from '../../claude-code/agent-installs.js';
import { pluginFolder } from '../../claude-code/claude-code-install.js';
import { join } from 'node:path';
import { globalSettingFlags } from '../cli-engram.js';
import type { CommandDefinition, CommandInvocation } from '../cli-command.js';

const TARGETS = ['claude-code', 'codex', 'copilot', 'gemini', 'opencode', 'qwen'] as const;

function target(invocation: CommandInvocation): (typeof TARGETS)[number] {
  const [name, ...rest] = invocation.positionals;
  if (name === undefined || !TARGETS.includes(name as (typeof TARGETS)[number]) || rest.length > 0)
    throw new EngramError(
      'INVALID_INPUT',
      `engram ${invocation.name} takes one target: ${TARGETS.join(', ')} (got ${JSON.stringify(invocation.positionals.join(' ').slice(0, 40))}).`,
    );
  return name as (typeof TARGETS)[number];
}

function loaded(invocation: CommandInvocation): ReturnType<typeof loadSettings> {
  return loadSettings({ cwd: invocation.io.cwd, env: invocation.io.env, flags: globalSettingFlags(invocation.global) });
}

/** `engram install claude-code`: a plain `claude` session loads engram's plugin (hooks, MCP server, skills). */
export const installCommand: CommandDefinition = {
  name: 'install',
  summary:
    'Make a coding agent use engram (hooks, MCP server): engram install claude-code|codex|copilot|gemini|opencode|qwen, or --detect',
  usage: 'install claude-code [--project] [--skills] | install codex|copilot|gemini|opencode|qwen | install --detect',
  options: {
    detect: {
      type: 'boolean',
      description:
        'Install for every supported agent found here (its config folder exists or its command is on PATH), one line per agent',
    },
    project: {
      type: 'boolean',
      description: "Enable it for this project only (the project's .claude/settings.json) instead of every project",
    },
    skills: {
      type: 'boolean',
      description:
        "Also render procedure memories as Claude Code skills (the project's in <project>/.claude/skills, global ones in ~/.claude/skills), kept in step at each session start",
    },
  },
  details:
    'Declares engram as a Claude Code plugin marketplace (a folder: the plugin runs in place, nothing is copied and no npm runs) and ' +
    'enables the plugin in ~/.claude/settings.json, or with --project in <project>/.claude/settings.json. The next claude session ' +
    'runs the hooks. "engram uninstall claude-code" removes exactly what this added; "engram status" tells whether Claude Code will load it. ' +
    '"engram install codex" adds engram\'s hooks to $CODEX_HOME/hooks.json (default ~/.codex) and, in config.toml, the MCP server and the trust hash Codex needs to run each hook. ' +
    '"engram install copilot" writes engram\'s hooks file $COPILOT_HOME/hooks/engram.json (default ~/.copilot) and adds mcpServers.engram to mcp-config.json there. ' +
    '"engram install gemini" and "engram install qwen" add engram\'s hooks and the engram MCP server to ~/.gemini/settings.json or ~/.qwen/settings.json. ' +
    '"engram install opencode" writes engram\'s plugin to ~/.config/opencode/plugin/engram.js ($XDG_CONFIG_HOME) and the MCP server as mcp.engram in opencode.json.',
  async run(invocation) {
    if (invocation.values.detect === true)
      return runForDetectedAgents(invocation, (one) => installCommand.run(one), { everyAgent: false });
    const name = target(invocation);
    if (name !== 'claude-code') return installAgentTarget(name, invocation);
    // --project is this command's flag here; the global one is --project=<id>, or before the command's name.
    const scope: InstallScope = invocation.values.project === true ? 'project' : 'user';
    const settings = loaded(invocation);
    const result = await installClaudeCode({
      env: invocation.io.env,
      projectRoot: settings.project.root,
      engramHome: settings.home,
      scope,
    });
    let skills: Awaited<ReturnType<typeof syncInstalledSkills>> = [];
    if (invocation.values.skills === true) {
      const opened = await openEngram({
        cwd: invocation.io.cwd,
        env: invocation.io.env,
        flags: globalSettingFlags(invocation.global),
      });
      try {
        skills = await syncInstalledSkills({
          engram: opened.engram,
          env: invocation.io.env,
          projectRoot: settings.project.root,
        });
      } finally {
        await opened.close();
      }
      await recordSkillDirectories(
        settings.home,
        skills.map((report) => report.dir),
      );
    }
    // The plugin brings engram's MCP server: one added another way (`claude mcp add`) would run beside it.
    for (const other of otherEngramMcpServers(invocation.io.env, settings.project.root, {
      cwd: invocation.io.cwd,
      servePort: settings.settings.server.port,
    }))
      result.warnings.push(duplicateServerWarning(other));
    const lines = [
      result.changed.length === 0 && skills.length === 0
        ? `engram is already installed for Claude Code (${scope} scope); nothing changed.`
        : `Installed engram for Claude Code (${scope} scope${scope === 'project' ? `: ${settings.project.root}` : ''}):`,
      ...result.changed.map((entry) => `  ${entry.file}: ${entry.keys.join(', ')}`),
      `  plugin ${result.plugin} from ${result.marketplace}`,
      ...skills.map(
        (report) =>
          `  skills in ${report.dir}: ${report.added.length} added, ${report.updated.length} updated, ${report.removed.length} removed, ${report.unchanged.length} unchanged`,
      ),
      ...result.warnings.map((warning) => `warning: ${warning}`),
      'The next claude session loads it. "engram status" checks it; "engram uninstall claude-code" removes it.',
    ];
    return { data: { ...result, skills }, text: lines.join('\n') };
  },
};

/** `engram uninstall claude-code`: removes what install added; memories stay. */
export const uninstallCommand: CommandDefinition = {
  name: 'uninstall',
  summary: 'Remove what "engram install <agent>" added to the agent\'s settings (memories stay)',
  usage: 'uninstall claude-code [--project] | uninstall codex|copilot|gemini|opencode|qwen | uninstall --detect',
  options: {
    detect: {
      type: 'boolean',
      description:
        'Remove engram from every supported agent, found here or not (each says when it had nothing to remove)',
    },
    project: {
      type: 'boolean',
      description:
        "Remove it from this project only (what install --project added to the project's .claude/settings.json); the user settings stay",
    },
  },
  async run(invocation) {
    if (invocation.values.detect === true)
      return runForDetectedAgents(invocation, (one) => uninstallCommand.run(one), { everyAgent: true });
    const name = target(invocation);
    if (name !== 'claude-code') {
      const { title } = AGENT_TARGETS[name];
      const result = await uninstallAgent({ agent: name }, loaded(invocation).home);
      const lines =
        result.changed.length === 0
          ? [`engram was not installed for ${title}; nothing changed.`]
          : [
              `Removed engram from ${title} (memories are kept):`,
              ...result.changed.map((entry) => `  ${entry.file}: ${UNINSTALLED_HOW[entry.how]}`),
            ];
      return { data: result, text: [...lines, ...result.warnings.map((warning) => `warning: ${warning}`)].join('\n') };
    }
    const settings = loaded(invocation);
    const onlyProject = invocation.values.project === true;
    const skillDirectories = onlyProject ? [] : recordedSkillDirectories(settings.home);
    const result = await uninstallClaudeCode({
      env: invocation.io.env,
      projectRoot: settings.project.root,
      engramHome: settings.home,
      ...(onlyProject && { scope: 'project' as const }),
    });
    const removedSkills = await removeInstalledSkills(skillDirectories);
    const lines =
      result.changed.length === 0 && removedSkills.length === 0
        ? ['engram was not installed for Claude Code; nothing changed.']
        : [
            'Removed engram from Claude Code (memories are kept):',
            ...result.changed.map(
              (entry) =>
                `  ${entry.file}: ${entry.keys.join(', ')}${entry.removedFile ? ' (file removed: install created it)' : ''}${entry.removedFolders.length > 0 ? `; empty folders install made removed: ${entry.removedFolders.join(', ')}` : ''}`,
            ),
            ...(removedSkills.length > 0 ? [`  procedure skills removed: ${removedSkills.join(', ')}`] : []),
          ];
    return { data: { ...result, removedSkills }, text: lines.join('\n') };
  },
};

/** The description `engram install codex` writes: this engram's launcher and Node. */
export function codexDescription(env: Record<string, string | undefined>): ReturnType<typeof codexInstallDescription> {
  return codexInstallDescription({ env, launcher: join(pluginFolder(), 'scripts', 'engram.mjs') });
}

/** The description `engram install opencode` writes: this engram's launcher and Node, the hooks' deadline. */
export function opencodeDescription(
  env: Record<string, string | undefined>,
  deadlineMs: number,
): ReturnType<typeof opencodeInstallDescription> {
  return opencodeInstallDescription({ env, launcher: join(pluginFolder(), 'scripts', 'engram.mjs'), deadlineMs });
}

/** engram's launcher in the plugin folder, which every agent's hook command runs with this Node. */
/** What `engram uninstall <agent>` says of each file or folder it put back. */
const UNINSTALLED_HOW: Record<AgentUninstallResult['changed'][number]['how'], string> = {
  restored: 'as it was before install',
  'removed-file': 'removed (install created it)',
  'removed-folder': 'removed (install made the folder, empty again)',
  'entries-removed': "engram's entries removed",
};

const launcher = (): string => join(pluginFolder(), 'scripts', 'engram.mjs');

/** The agents installed through agent-installs.ts: each one's description, its name for people, what runs it next. */
export const AGENT_TARGETS: Record<
  Exclude<(typeof TARGETS)[number], 'claude-code'>,
  {
    title: string;
    next: string;
    /** What `engram status` says when nothing is wrong. */
    ready: string;
    description: (
      env: Record<string, string | undefined>,
      settings: ReturnType<typeof loadSettings>,
    ) => AgentInstallDescription;
  }
> = {
  codex: {
    title: 'Codex',
    next: 'The next codex session runs its hooks.',
    ready: 'runs engram (hooks trusted, MCP server configured)',
    description: (env) => codexDescription(env),
  },
  copilot: {
    title: 'Copilot CLI',
    next: 'The next copilot session runs its hooks.',
    ready: 'runs engram (hooks file, MCP server configured)',
    description: (env) => copilotInstallDescription({ env, launcher: launcher() }),
  },
  gemini: {
    title: 'Gemini CLI',
    next: 'The next gemini session runs its hooks.',
    ready: 'runs engram (hooks and MCP server configured)',
    description: (env) => geminiInstallDescription({ env, launcher: launcher() }),
  },
  qwen: {
    title: 'Qwen Code',
    next: 'The next qwen session runs its hooks.',
    ready: 'runs engram (hooks and MCP server configured)',
    description: (env) => qwenInstallDescription({ env, launcher: launcher() }),
  },
  opencode: {
    title: 'OpenCode',
    next: 'The next opencode session loads the plugin.',
    ready: 'loads engram (plugin and MCP server in place)',
    description: (env, settings) => opencodeDescription(env, settings.settings.hooks.deadlineMs),
  },
};

async function installAgentTarget(
  name: keyof typeof AGENT_TARGETS,
  invocation: CommandInvocation,
): Promise<{ data: unknown; text: string }> {
  const settings = loaded(invocation);
  const { title, next, description } = AGENT_TARGETS[name];
  const result = await installAgent(description(invocation.io.env, settings), settings.home);
  const lines = [
    result.changed.length === 0
      ? `engram is already installed for ${title}; nothing changed.`
      : `Installed engram for ${title}:`,
    ...result.changed.map((entry) => `  ${entry.file}: ${entry.added.join(', ')}`),
    ...result.warnings.map((warning) => `warning: ${warning}`),
    `${next} "engram status" checks it; "engram uninstall ${name}" removes it.`,
  ];
  return { data: result, text: lines.join('\n') };
}
