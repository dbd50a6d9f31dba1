import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeEach, describe, expect, it } from 'vitest';
import { expectInstalledOnce, useWorkspace } from '../../support/cli-harness.js';
import { runHook } from '../../support/claude-code-hook-run.js';

// `engram install copilot` without the Copilot CLI (test/agents/copilot-engram.test.ts runs the real
// one): the files it writes where COPILOT_HOME says, what it refuses, what status says, what uninstall
// gives back; and the hook runner speaking Copilot's camelCase protocol.

const FIXTURE = fileURLToPath(
  new URL('../../fixtures/agents/copilot/events-1.0.102-tool-call-continue.jsonl', import.meta.url),
);

describe('engram install / uninstall / status copilot', () => {
  const workspace = useWorkspace();
  let copilotHome: string;
  let mcpConfig: string;
  let hooks: string;
  beforeEach(() => {
    copilotHome = join(workspace.home, '.copilot');
    mcpConfig = join(copilotHome, 'mcp-config.json');
    hooks = join(copilotHome, 'hooks', 'engram.json');
  });

  it("writes engram's hooks file and MCP entry beside the user's servers; uninstall gives mcp-config.json back byte for byte", async () => {
    mkdirSync(copilotHome);
    const own =
      '{\r\n\t"mcpServers": { "notes": { "type": "local", "command": "notes-mcp", "args": [] } },\r\n\t"x": [1,2]\r\n}';
    writeFileSync(mcpConfig, own);
    const installed = await workspace.json(['install', 'copilot']);
    expect(installed.changed.map((entry: { file: string }) => entry.file)).toEqual([hooks, mcpConfig]);
    const file = JSON.parse(readFileSync(hooks, 'utf8'));
    expect(file.version).toBe(1);
    expect(Object.keys(file.hooks)).toEqual(['sessionStart', 'userPromptSubmitted', 'agentStop', 'sessionEnd']);
    expect(file.hooks.userPromptSubmitted[0]).toMatchObject({ type: 'command', timeoutSec: 10 });
    expect(file.hooks.userPromptSubmitted[0].bash).toMatch(/ hook user-prompt-submit --agent copilot$/);
    const servers = JSON.parse(readFileSync(mcpConfig, 'utf8')).mcpServers;
    expect(servers.notes.command).toBe('notes-mcp');
    expect(servers.engram).toMatchObject({ type: 'local', tools: ['*'] });
    expect(servers.engram.args.at(-1)).toBe('mcp');
    await expectInstalledOnce(workspace, 'copilot');

    await workspace.json(['uninstall', 'copilot']);
    expect(readFileSync(mcpConfig, 'utf8')).toBe(own);
    expect(existsSync(hooks)).toBe(false);
    expect((await workspace.json(['status'])).copilot).toBeUndefined();
    expect((await workspace.json(['uninstall', 'copilot'])).changed).toEqual([]);
  });

  it('follows COPILOT_HOME, and with no config at all uninstall leaves no file behind', async () => {
    const elsewhere = join(workspace.root, 'copilot-elsewhere');
    const env = { COPILOT_HOME: elsewhere };
    await workspace.json(['install', 'copilot'], 0, { env });
    expect(existsSync(join(elsewhere, 'hooks', 'engram.json'))).toBe(true);
    expect(existsSync(join(elsewhere, 'mcp-config.json'))).toBe(true);
    expect(existsSync(copilotHome)).toBe(false);
    // Status looks where Copilot looks: without COPILOT_HOME the files are not there.
    expect((await workspace.json(['status'], 0, { env })).copilot.problems).toEqual([]);
    expect((await workspace.json(['status'])).copilot.problems.join(' ')).toContain('is gone');
    await workspace.json(['uninstall', 'copilot'], 0, { env });
    expect(existsSync(join(elsewhere, 'hooks', 'engram.json'))).toBe(false);
    expect(existsSync(join(elsewhere, 'mcp-config.json'))).toBe(false);
  });

  it("a hooks file edited away is reported and left as the user's; deleted, install again puts it back; a user edit to mcp-config.json stays through uninstall", async () => {
    await workspace.json(['install', 'copilot']);
    const edited = JSON.stringify({ version: 1, hooks: { sessionStart: [] } });
    writeFileSync(hooks, edited);
    const problems: string[] = (await workspace.json(['status'])).copilot.problems;
    expect(problems).toHaveLength(4);
    expect(problems.join(' ')).toContain('has no engram userPromptSubmitted hook');
    expect((await workspace.run(['status'])).stdout).toContain('will NOT run engram');
    // engram's file changed since install is the user's now: install again says so and leaves it.
    const again = await workspace.run(['install', 'copilot']);
    expect(again.stdout).toContain('was changed since install');
    expect(readFileSync(hooks, 'utf8')).toBe(edited);
    rmSync(hooks);
    await workspace.json(['install', 'copilot']);
    expect((await workspace.json(['status'])).copilot.problems).toEqual([]);
    const mine = JSON.parse(readFileSync(mcpConfig, 'utf8'));
    mine.mcpServers.mine = { type: 'local', command: 'mine', args: [] };
    writeFileSync(mcpConfig, JSON.stringify(mine));
    await workspace.json(['uninstall', 'copilot']);
    expect(JSON.parse(readFileSync(mcpConfig, 'utf8'))).toEqual({
      mcpServers: { mine: { type: 'local', command: 'mine', args: [] } },
    });
    expect(existsSync(hooks)).toBe(false);
  });

  it.each([
    ['not JSON', '{"mcpServers": {'],
    ['a JSON array', '[]'],
    ['mcpServers that is not an object', '{"mcpServers": [1]}'],
  ])('refuses an mcp-config.json that is %s and writes no file', async (_what, text) => {
    mkdirSync(copilotHome);
    writeFileSync(mcpConfig, text);
    const result = await workspace.run(['install', 'copilot']);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain(mcpConfig);
    expect(readFileSync(mcpConfig, 'utf8')).toBe(text);
    expect(existsSync(hooks)).toBe(false);
  });

  it('leaves an engram MCP server and a hooks file named engram.json the user has alone, and says so', async () => {
    mkdirSync(join(copilotHome, 'hooks'), { recursive: true });
    const ownMcp = '{"mcpServers":{"engram":{"type":"local","command":"engram","args":["mcp"]}}}';
    const ownHooks = '{"version":1,"hooks":{}}';
    writeFileSync(mcpConfig, ownMcp);
    writeFileSync(hooks, ownHooks);
    const result = await workspace.run(['install', 'copilot']);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('has "mcpServers.engram" already');
    expect(result.stdout).toContain("is there already and is not engram's");
    await workspace.json(['uninstall', 'copilot']);
    expect(readFileSync(mcpConfig, 'utf8')).toBe(ownMcp);
    expect(readFileSync(hooks, 'utf8')).toBe(ownHooks);
  });

  it("the hook runner reads Copilot's camelCase stdin and answers {additionalContext}; snake_case input is not Copilot's", async () => {
    await workspace.run(['remember', 'The staging database listens on port 6543.']);
    const agent = ['--agent', 'copilot'];
    const prompt = await runHook(
      workspace,
      'user-prompt-submit',
      JSON.stringify({ sessionId: 'c-1', timestamp: Date.now(), cwd: workspace.cwd, prompt: 'staging port?' }),
      {},
      agent,
    );
    expect(prompt.code).toBe(0);
    expect(Object.keys(JSON.parse(prompt.stdout))).toEqual(['additionalContext']);
    expect(JSON.parse(prompt.stdout).additionalContext).toContain('6543');
    const start = await runHook(
      workspace,
      'session-start',
      JSON.stringify({ sessionId: 'c-2', cwd: workspace.cwd, source: 'new', initialPrompt: 'staging port?' }),
      {},
      agent,
    );
    expect(JSON.parse(start.stdout).additionalContext).toContain('6543');
    const snake = await runHook(
      workspace,
      'user-prompt-submit',
      JSON.stringify({ session_id: 'c-3', cwd: workspace.cwd, prompt: 'staging port?' }),
      {},
      agent,
    );
    expect(snake).toEqual({ code: 0, stdout: '' });
    // Copilot fires no compaction event in 1.0.102: the runner has none for it.
    const compact = await runHook(workspace, 'pre-compact', JSON.stringify({ sessionId: 'c-1' }), {}, agent);
    expect(compact).toEqual({ code: 0, stdout: '' });
    const log = readFileSync(join(workspace.home, 'logs', 'claude-code-hooks.log'), 'utf8');
    expect(log).toContain('stdin has no usable sessionId');
    expect(log).toContain('unknown hook event \\"pre-compact\\" for copilot');
  });

  it("sessionEnd names no file: the session's events.jsonl is found in COPILOT_HOME and what was said there is stored", async () => {
    const sessionId = '3c98c264-582a-459b-aef8-ceb1a9970d5c';
    const elsewhere = join(workspace.root, 'copilot-elsewhere');
    const events = join(elsewhere, 'session-state', sessionId, 'events.jsonl');
    mkdirSync(join(events, '..'), { recursive: true });
    copyFileSync(FIXTURE, events);
    const env = { COPILOT_HOME: elsewhere, ENGRAM_HOOK_WORKER: 'false' };
    const input = (id: string) => JSON.stringify({ sessionId: id, cwd: workspace.cwd, reason: 'complete' });
    // An id that is not one folder name never becomes a path.
    for (const id of [sessionId, '../../etc', 'a/b'])
      expect(await runHook(workspace, 'session-end', input(id), env, ['--agent', 'copilot'])).toEqual({
        code: 0,
        stdout: '',
      });
    const spooled = readFileSync(join(workspace.home, 'spool', 'claude-code-hooks.jsonl'), 'utf8')
      .split('\n')
      .filter((line) => line.trim() !== '')
      .map((line) => JSON.parse(line));
    expect(spooled.map((entry) => [entry.sessionId, entry.agent, entry.transcriptPath])).toEqual([
      [sessionId, 'copilot', events],
      ['../../etc', 'copilot', undefined],
      ['a/b', 'copilot', undefined],
    ]);
    const drained = await workspace.run(['queue', 'run', '--force'], { env });
    expect(drained.code, drained.stderr).toBe(0);
    const stored = await workspace.run(['list', '--json']);
    expect(stored.stdout).toContain('tabs');
  });
});
