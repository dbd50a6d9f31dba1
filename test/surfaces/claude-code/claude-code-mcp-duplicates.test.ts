import { execFile } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createWorkspace, ENGRAM_BINARY, type Workspace } from '../../support/cli-harness.js';
import { claudeBinary } from '../../support/claude-code-headless.js';

// Following both of README's ways to give Claude Code engram's tools (the plugin, and `claude mcp add`)
// would start engram's MCP server twice, every tool listed twice. The real Claude Code CLI adds the
// other server here, in each of its scopes; engram install and engram status must say so, with the
// command that removes it, and say nothing of servers that are not engram's.
const run = promisify(execFile);

let workspace: Workspace;

beforeEach(() => {
  workspace = createWorkspace();
});

afterEach(() => workspace.cleanup());

async function claude(args: readonly string[], env: Record<string, string> = {}): Promise<void> {
  await run(claudeBinary(), [...args], {
    cwd: workspace.cwd,
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: workspace.home,
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      ...env,
    },
    timeout: 60_000,
  });
}

describe('engram MCP server added twice', () => {
  it.each([
    { scope: 'local', add: ['mcp', 'add', '--transport', 'stdio', 'engram', '--', 'engram', 'mcp'] },
    { scope: 'user', add: ['mcp', 'add', '-s', 'user', 'memory', '--', process.execPath, ENGRAM_BINARY, 'mcp'] },
    {
      scope: 'project',
      add: ['mcp', 'add', '-s', 'project', '--transport', 'http', 'engram', 'http://127.0.0.1:7437/mcp'],
    },
  ])('by "claude mcp add" ($scope scope): install and status say so and how to remove it', async ({ scope, add }) => {
    await claude(add);
    const name = add[add.indexOf('--transport') === -1 ? 4 : add.indexOf('--transport') + 2]!;
    await claude(['mcp', 'add', '-s', scope, '--transport', 'stdio', 'weather', '--', 'node', 'weather-server.js']);

    const install = await workspace.run(['install', 'claude-code']);
    expect(install.code).toBe(0);
    const remove = `claude mcp remove ${name} -s ${scope}`;
    expect(install.stdout).toContain(remove);
    expect(install.stdout).toMatch(/listed twice/);
    expect(install.stdout).not.toContain('weather');
    const status = await workspace.run(['status']);
    expect(status.stdout).toContain(remove);
    const json = await workspace.json(['status']);
    expect(json.claudeCode.otherMcpServers).toEqual([expect.objectContaining({ name, scope })]);

    // Removed the way engram says: nothing left to warn about.
    await claude(['mcp', 'remove', name, '-s', scope]);
    expect((await workspace.run(['install', 'claude-code'])).stdout).not.toMatch(/listed twice/);
    expect((await workspace.json(['status'])).claudeCode.otherMcpServers).toEqual([]);
  });

  it('with CLAUDE_CONFIG_DIR, the servers Claude Code keeps there', async () => {
    const configDir = join(workspace.root, 'claude-config');
    mkdirSync(configDir);
    await claude(['mcp', 'add', '-s', 'user', 'engram', '--', 'npx', 'engram', 'mcp'], {
      CLAUDE_CONFIG_DIR: configDir,
    });
    const install = await workspace.run(['install', 'claude-code'], { env: { CLAUDE_CONFIG_DIR: configDir } });
    expect(install.stdout).toContain('claude mcp remove engram -s user');
    expect((await workspace.run(['install', 'claude-code'])).stdout).not.toMatch(/listed twice/);
  });
});
