import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { codexTrustHash } from '../../../src/surfaces/claude-code/codex-install.js';
import { readTomlStructure } from '../../../src/surfaces/claude-code/toml-structure.js';
import { useWorkspace } from '../../support/cli-harness.js';
import { runHook } from '../../support/claude-code-hook-run.js';

// `engram install codex` without the Codex CLI (test/agents/codex-engram.test.ts runs the real one):
// the files it writes, what it refuses, what status says, what uninstall gives back.

describe('engram install / uninstall / status codex', () => {
  const workspace = useWorkspace();
  let codexHome: string;
  let config: string;
  let hooks: string;
  beforeEach(() => {
    codexHome = join(workspace.home, '.codex');
    mkdirSync(codexHome);
    config = join(codexHome, 'config.toml');
    hooks = join(codexHome, 'hooks.json');
  });

  it("adds hooks after the user's own, trusts each by the hash Codex computes, and uninstall gives back both files byte for byte", async () => {
    const ownConfig =
      'model = \'o3\' # mine\r\n[profiles.fast]\r\nmodel = """\r\nmini"""\r\nflags = [\r\n  1, # one\r\n  2,\r\n]\r\n';
    const ownHooks = '{"hooks":{"UserPromptSubmit":[{"hooks":[{"type":"command","command":"mine","timeout":3}]}]}}';
    writeFileSync(config, ownConfig);
    writeFileSync(hooks, ownHooks);
    const installed = await workspace.json(['install', 'codex']);
    expect(installed.changed.map((entry: { file: string }) => entry.file)).toEqual([hooks, config]);
    const written = JSON.parse(readFileSync(hooks, 'utf8'));
    const prompt = written.hooks.UserPromptSubmit;
    expect(prompt[0].hooks[0].command).toBe('mine');
    const ours = prompt[1].hooks[0];
    expect(ours.command).toMatch(/ hook user-prompt-submit --agent codex$/);
    expect(Object.keys(written.hooks).sort()).toEqual(['PreCompact', 'SessionStart', 'Stop', 'UserPromptSubmit']);
    // The hash as test/agents/agent-cli-hooks.test.ts found Codex 0.171 to accept it (a canonical JSON, written out here).
    const identity = `{"event_name":"user_prompt_submit","hooks":[{"async":false,"command":${JSON.stringify(ours.command)},"timeout":${ours.timeout},"type":"command"}]}`;
    const expected = `sha256:${createHash('sha256').update(identity).digest('hex')}`;
    expect(codexTrustHash('UserPromptSubmit', ours)).toBe(expected);
    const tables = readTomlStructure(readFileSync(config, 'utf8')).tables;
    // Index 1: after the user's own group.
    expect(tables.get(`hooks.state.${JSON.stringify(`${hooks}:user_prompt_submit:1:0`)}`)?.get('trusted_hash')).toBe(
      expected,
    );
    expect(tables.get(`hooks.state.${JSON.stringify(`${hooks}:session_start:0:0`)}`)?.get('trusted_hash')).toMatch(
      /^sha256:/,
    );
    expect(tables.get('mcp_servers.engram')?.get('args')).toContain('"mcp"');
    expect(readFileSync(config, 'utf8').startsWith(ownConfig)).toBe(true);
    expect((await workspace.json(['status'])).codex.problems).toEqual([]);
    expect((await workspace.json(['install', 'codex'])).changed).toEqual([]);

    await workspace.json(['uninstall', 'codex']);
    expect(readFileSync(config, 'utf8')).toBe(ownConfig);
    expect(readFileSync(hooks, 'utf8')).toBe(ownHooks);
    expect((await workspace.json(['status'])).codex).toBeUndefined();
    expect((await workspace.json(['uninstall', 'codex'])).changed).toEqual([]);
  });

  it('a hook edited since install: status says its trust hash no longer matches; install again, then uninstall, gives back the files', async () => {
    await workspace.json(['install', 'codex']);
    const edited = readFileSync(hooks, 'utf8').replace(/"timeout": 10/g, '"timeout": 30');
    writeFileSync(hooks, edited);
    const status = await workspace.run(['status']);
    expect(status.stdout).toContain('no longer matches');
    expect((await workspace.json(['status'])).codex.problems).toHaveLength(4);
    await workspace.json(['install', 'codex']);
    expect((await workspace.json(['status'])).codex.problems).toEqual([]);
    // A user's own change to config.toml after install stays through uninstall.
    writeFileSync(config, `${readFileSync(config, 'utf8')}\n[profiles.mine]\nmodel = "x"\n`);
    const removed = await workspace.json(['uninstall', 'codex']);
    expect(existsSync(hooks)).toBe(false);
    expect(removed.changed.map((entry: { how: string }) => entry.how)).toEqual(['removed-file', 'entries-removed']);
    expect(readFileSync(config, 'utf8').trim()).toBe('[profiles.mine]\nmodel = "x"');
  });

  it.each([
    ['an unclosed array', 'flags = [1,\n'],
    ['an unclosed string', 'model = "o3\n'],
    ['a line that is no statement', 'model o3\n'],
    ['a table given twice', '[a]\nx = 1\n[a]\ny = 2\n'],
    ['a broken header', '[a\nx = 1\n'],
  ])('refuses a config.toml with %s and changes neither file', async (_what, text) => {
    writeFileSync(config, text);
    const result = await workspace.run(['install', 'codex']);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain('is not valid TOML');
    expect(readFileSync(config, 'utf8')).toBe(text);
    expect(existsSync(hooks)).toBe(false);
  });

  it('refuses a hooks.json that is not JSON or whose hooks list is not an array, and changes neither file', async () => {
    for (const text of ['{"hooks": {', '{"hooks":{"Stop":{"x":1}}}']) {
      writeFileSync(hooks, text);
      writeFileSync(config, 'model = "o3"\n');
      const result = await workspace.run(['install', 'codex']);
      expect(result.code).not.toBe(0);
      expect(result.stderr).toMatch(/not valid JSON|is not an array/);
      expect(readFileSync(hooks, 'utf8')).toBe(text);
      expect(readFileSync(config, 'utf8')).toBe('model = "o3"\n');
    }
  });

  it('leaves an MCP server named engram the user added alone, and says so', async () => {
    const own = '[mcp_servers.engram]\ncommand = "engram"\nargs = ["mcp"]\n';
    writeFileSync(config, own);
    const result = await workspace.run(['install', 'codex']);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('has [mcp_servers.engram] already');
    await workspace.json(['uninstall', 'codex']);
    expect(readFileSync(config, 'utf8')).toBe(own);
  });

  it("the hook runner answers Codex's events in its shape and ignores those Codex has no protocol entry for", async () => {
    await workspace.run(['remember', 'The staging database listens on port 6543.']);
    const input = (event: string, extra: Record<string, unknown> = {}) =>
      JSON.stringify({ session_id: 's-1', cwd: workspace.cwd, hook_event_name: event, ...extra });
    const prompt = await runHook(
      workspace,
      'user-prompt-submit',
      input('UserPromptSubmit', { prompt: 'staging port?' }),
      {},
      ['--agent', 'codex'],
    );
    expect(prompt.code).toBe(0);
    const output = JSON.parse(prompt.stdout);
    expect(output.hookSpecificOutput.hookEventName).toBe('UserPromptSubmit');
    expect(output.hookSpecificOutput.additionalContext).toContain('6543');
    // Codex fires no SessionEnd: engram's runner has none for it, and says so in the log.
    const end = await runHook(workspace, 'session-end', input('SessionEnd'), {}, ['--agent', 'codex']);
    expect(end).toEqual({ code: 0, stdout: '' });
    const unknown = await runHook(workspace, 'session-start', input('SessionStart'), {}, ['--agent', 'nobody']);
    expect(unknown).toEqual({ code: 0, stdout: '' });
    const log = readFileSync(join(workspace.home, 'logs', 'claude-code-hooks.log'), 'utf8');
    expect(log).toContain('unknown hook event \\"session-end\\" for codex');
    expect(log).toContain('unknown agent \\"nobody\\"');
  });
});
