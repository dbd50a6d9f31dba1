import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AGENT_NAMES } from '../../../src/surfaces/claude-code/agent-hook-protocols.js';
import { createWorkspace, type Workspace } from '../../support/cli-harness.js';

// `engram install --detect` without any agent CLI: a temp HOME where an agent is "on the machine"
// by its config folder or by an executable shim of its command on PATH, and nothing else is found
// (PATH holds only the shim folders, so a real claude or codex of this machine does not count).

describe('engram install / uninstall / status --detect', () => {
  let workspace: Workspace;
  let bin: string;
  let env: Record<string, string>;
  beforeEach(() => {
    workspace = createWorkspace();
    bin = join(workspace.root, 'bin');
    mkdirSync(bin);
    env = { PATH: bin };
  });
  afterEach(() => workspace.cleanup());

  const shim = (name: string, executable = true): void => {
    const file = join(bin, name);
    writeFileSync(file, '#!/bin/sh\nexit 0\n');
    chmodSync(file, executable ? 0o755 : 0o644);
  };
  const lineOf = (text: string, agent: string): string =>
    text.split('\n').find((line) => line.startsWith(`${agent}: `)) ?? '';

  it('with no agent found: one "not found" line per agent, exit 0, no file written', async () => {
    shim('codex', false); // Not executable: a shell would not run it either.
    const result = await workspace.run(['install', '--detect'], { env });
    expect(result.code, result.stderr).toBe(0);
    for (const agent of AGENT_NAMES) expect(lineOf(result.stdout, agent)).toMatch(/not found \(no .+ on PATH\)$/);
    expect(result.stdout).toContain('No coding agent found here; nothing changed.');
    expect(existsSync(join(workspace.home, '.claude'))).toBe(false);
    expect(existsSync(join(workspace.home, '.codex'))).toBe(false);
    expect(existsSync(join(workspace.home, 'agent-installs.json'))).toBe(false);
    const json = await workspace.json(['install', '--detect'], 0, { env });
    expect(json.agents.map((entry: { outcome: string }) => entry.outcome)).toEqual(AGENT_NAMES.map(() => 'not-found'));
  });

  it('finds Claude Code by its config folder and Codex by its command on PATH, installs each as "install <agent>" would, and uninstall --detect gives the files back', async () => {
    mkdirSync(join(workspace.home, '.claude'));
    const ownSettings = '{\n  "theme": "dark"\n}\n';
    writeFileSync(join(workspace.home, '.claude', 'settings.json'), ownSettings);
    shim('codex');
    const before = await workspace.run(['status'], { env });
    expect(before.stdout).toMatch(/codex\s+found \(codex on PATH .*\), engram not installed/);

    const result = await workspace.run(['install', '--detect'], { env });
    expect(result.code, result.stderr).toBe(0);
    expect(lineOf(result.stdout, 'claude-code')).toBe(
      `claude-code: Installed engram for Claude Code (user scope) (found: ${join(workspace.home, '.claude')})`,
    );
    expect(lineOf(result.stdout, 'codex')).toBe(
      `codex: Installed engram for Codex (found: codex on PATH (${join(bin, 'codex')}))`,
    );
    expect(result.stdout.split('\n').filter((line) => /^[a-z-]+: /.test(line))).toHaveLength(AGENT_NAMES.length);
    const settings = JSON.parse(readFileSync(join(workspace.home, '.claude', 'settings.json'), 'utf8'));
    expect(settings.enabledPlugins['engram@engram']).toBe(true);
    expect(readFileSync(join(workspace.home, '.codex', 'hooks.json'), 'utf8')).toContain('--agent codex');
    const status = await workspace.json(['status'], 0, { env });
    expect(status.claudeCode.loads).toBe(true);
    expect(status.codex.problems).toEqual([]);
    expect(status.foundWithoutEngram).toBeUndefined();

    const again = await workspace.run(['install', '--detect'], { env });
    expect(lineOf(again.stdout, 'codex')).toMatch(/^codex: engram is already installed for Codex; nothing changed\./);
    expect(lineOf(again.stdout, 'claude-code')).toMatch(/already installed for Claude Code/);

    // Uninstall visits every agent, found or not (codex is no longer on PATH; the folder install made remains).
    const removed = await workspace.run(['uninstall', '--detect'], { env: { PATH: join(workspace.root, 'empty') } });
    expect(removed.code, removed.stderr).toBe(0);
    expect(lineOf(removed.stdout, 'codex')).toMatch(/^codex: Removed engram from Codex \(memories are kept\)/);
    expect(lineOf(removed.stdout, 'claude-code')).toMatch(/^claude-code: Removed engram from Claude Code/);
    expect(readFileSync(join(workspace.home, '.claude', 'settings.json'), 'utf8')).toBe(ownSettings);
    expect(existsSync(join(workspace.home, '.codex', 'hooks.json'))).toBe(false);
  });

  it("honours each agent's own config-folder variable (CLAUDE_CONFIG_DIR, CODEX_HOME)", async () => {
    const codexHome = join(workspace.root, 'elsewhere-codex');
    mkdirSync(codexHome);
    const result = await workspace.run(['install', '--detect'], {
      env: { ...env, CODEX_HOME: codexHome, CLAUDE_CONFIG_DIR: join(workspace.root, 'no-claude-here') },
    });
    expect(result.code, result.stderr).toBe(0);
    expect(lineOf(result.stdout, 'codex')).toBe(`codex: Installed engram for Codex (found: ${codexHome})`);
    expect(lineOf(result.stdout, 'claude-code')).toContain(`not found (no ${join(workspace.root, 'no-claude-here')}`);
    expect(existsSync(join(codexHome, 'hooks.json'))).toBe(true);
    expect(existsSync(join(workspace.home, '.codex'))).toBe(false);
  });

  it("one agent's broken config file fails that agent only: the others are installed, the exit is non-zero, the broken file unchanged", async () => {
    mkdirSync(join(workspace.home, '.claude'));
    mkdirSync(join(workspace.home, '.codex'));
    const broken = 'model = "o3\n';
    writeFileSync(join(workspace.home, '.codex', 'config.toml'), broken);
    const result = await workspace.run(['install', '--detect'], { env });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/codex: FAILED \(found: .*\): .*is not valid TOML/);
    expect(result.stderr).toContain('1 agent(s) failed (codex)');
    expect(result.stderr).toMatch(/claude-code: Installed engram for Claude Code/);
    expect(readFileSync(join(workspace.home, '.codex', 'config.toml'), 'utf8')).toBe(broken);
    expect(existsSync(join(workspace.home, '.codex', 'hooks.json'))).toBe(false);
    expect(JSON.parse(readFileSync(join(workspace.home, '.claude', 'settings.json'), 'utf8')).enabledPlugins).toEqual({
      'engram@engram': true,
    });
    const json = await workspace.run(['install', '--detect', '--json'], { env });
    expect(JSON.parse(json.stdout).error.details.agents.map((entry: { outcome: string }) => entry.outcome)).toEqual(
      AGENT_NAMES.map((agent) => (agent === 'codex' ? 'failed' : agent === 'claude-code' ? 'done' : 'not-found')),
    );
  });

  it('refuses an agent name beside --detect and changes nothing', async () => {
    mkdirSync(join(workspace.home, '.codex'));
    const result = await workspace.run(['install', 'codex', '--detect'], { env });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--detect takes no agent name');
    expect(existsSync(join(workspace.home, '.codex', 'hooks.json'))).toBe(false);
  });
});
