import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  installAgent,
  uninstallAgent,
  type AgentInstallDescription,
} from '../../../src/surfaces/claude-code/agent-installs.js';

// The shared install mechanism's object keys (an MCP server entry in a settings file) and whole files
// (a plugin module), as the JSON-settings agents and OpenCode's plugin use them.

describe('agent installs: object keys and whole files', () => {
  let dir: string;
  let settings: string;
  let plugin: string;
  let description: AgentInstallDescription;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'engram-agent-installs-'));
    settings = join(dir, 'agent', 'settings.json');
    plugin = join(dir, 'agent', 'plugin', 'engram.js');
    description = {
      agent: 'probe',
      title: 'Probe',
      edits: () => [
        {
          kind: 'json',
          file: settings,
          arrays: [{ path: ['hooks', 'BeforeAgent'], items: [{ command: 'engram hook x' }] }],
          keys: [{ path: ['mcpServers'], key: 'engram', value: { command: 'engram', args: ['mcp'] }, what: 'MCP' }],
        },
        { kind: 'file', file: plugin, text: 'export const Engram = async () => ({});\n', what: 'the plugin' },
      ],
      problems: () => [],
    };
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("sets a key beside the user's own and uninstall gives the file back byte for byte", async () => {
    const own = '{\n    "mcpServers": {"mine": {"command": "x"}},\n    "theme": "dark"\n}';
    mkdirSync(join(dir, 'agent'), { recursive: true });
    writeFileSync(settings, own);
    const result = await installAgent(description, join(dir, 'home'));
    expect(result.changed.map((entry) => entry.file)).toEqual([settings, plugin]);
    const written = JSON.parse(readFileSync(settings, 'utf8'));
    expect(written.mcpServers).toEqual({ mine: { command: 'x' }, engram: { command: 'engram', args: ['mcp'] } });
    expect(readFileSync(plugin, 'utf8')).toContain('Engram');
    await uninstallAgent(description, join(dir, 'home'));
    expect(readFileSync(settings, 'utf8')).toBe(own);
    expect(existsSync(plugin)).toBe(false);
  });

  it('uninstall removes the folders install made, deepest first, and keeps one the agent has filled since', async () => {
    // Nothing of the agent's there before install: after uninstall the tree is as it was, no empty
    // agent/ or agent/plugin/ folder left behind.
    const tree = (): string[] =>
      readdirSync(dir, { recursive: true, encoding: 'utf8' })
        .filter((name) => !name.startsWith('home'))
        .sort();
    const before = tree();
    await installAgent(description, join(dir, 'home'));
    expect(existsSync(join(dir, 'agent', 'plugin'))).toBe(true);
    const result = await uninstallAgent(description, join(dir, 'home'));
    expect(tree()).toEqual(before);
    expect(result.changed.filter((entry) => entry.how === 'removed-folder').map((entry) => entry.file)).toEqual([
      join(dir, 'agent', 'plugin'),
      join(dir, 'agent'),
    ]);

    // The agent wrote its own file into a folder install made: that folder and its file stay.
    await installAgent(description, join(dir, 'home'));
    writeFileSync(join(dir, 'agent', 'sessions.db'), 'the agent');
    await uninstallAgent(description, join(dir, 'home'));
    expect(existsSync(join(dir, 'agent', 'plugin'))).toBe(false);
    expect(readFileSync(join(dir, 'agent', 'sessions.db'), 'utf8')).toBe('the agent');
  });

  it('after the user edits the file, takes out only its key and the objects it made', async () => {
    await installAgent(description, join(dir, 'home'));
    const edited = JSON.parse(readFileSync(settings, 'utf8'));
    edited.theme = 'light';
    writeFileSync(settings, JSON.stringify(edited));
    const result = await uninstallAgent(description, join(dir, 'home'));
    expect(result.warnings).toEqual([]);
    expect(JSON.parse(readFileSync(settings, 'utf8'))).toEqual({ theme: 'light' });
  });

  it("leaves a key the user had, an entry the user changed and a plugin file that is not engram's", async () => {
    mkdirSync(join(dir, 'agent', 'plugin'), { recursive: true });
    writeFileSync(plugin, '// mine\n');
    writeFileSync(settings, '{"mcpServers":{"engram":{"command":"my-own-engram"}}}');
    const result = await installAgent(description, join(dir, 'home'));
    expect(result.warnings.join('\n')).toMatch(/mcpServers\.engram" already/);
    expect(result.warnings.join('\n')).toMatch(/not engram's/);
    expect(readFileSync(plugin, 'utf8')).toBe('// mine\n');
    expect(JSON.parse(readFileSync(settings, 'utf8')).mcpServers.engram.command).toBe('my-own-engram');
    await uninstallAgent(description, join(dir, 'home'));
    expect(readFileSync(plugin, 'utf8')).toBe('// mine\n');
    expect(readFileSync(settings, 'utf8')).toBe('{"mcpServers":{"engram":{"command":"my-own-engram"}}}');

    rmSync(settings);
    rmSync(plugin);
    await installAgent(description, join(dir, 'home'));
    const changed = JSON.parse(readFileSync(settings, 'utf8'));
    changed.mcpServers.engram.args = ['mcp', '--verbose'];
    changed.other = 1;
    writeFileSync(settings, JSON.stringify(changed));
    writeFileSync(plugin, '// edited\n');
    const removed = await uninstallAgent(description, join(dir, 'home'));
    expect(removed.warnings.join('\n')).toMatch(/mcpServers\.engram" was changed since install/);
    expect(removed.warnings.join('\n')).toMatch(/engram\.js was changed since install/);
    expect(JSON.parse(readFileSync(settings, 'utf8')).mcpServers.engram.args).toEqual(['mcp', '--verbose']);
    expect(readFileSync(plugin, 'utf8')).toBe('// edited\n');
  });

  it('refuses a settings file whose MCP holder is not an object and writes nothing', async () => {
    mkdirSync(join(dir, 'agent'), { recursive: true });
    writeFileSync(settings, '{"mcpServers":[]}');
    await expect(installAgent(description, join(dir, 'home'))).rejects.toMatchObject({ code: 'CONFIG_INVALID' });
    expect(readFileSync(settings, 'utf8')).toBe('{"mcpServers":[]}');
    expect(existsSync(plugin)).toBe(false);
  });
});
