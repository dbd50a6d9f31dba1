import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createWorkspace, type Workspace, expectInstalledOnce } from '../../support/cli-harness.js';
import { runHook } from '../../support/claude-code-hook-run.js';

// `engram install gemini|qwen` without the CLIs (test/agents/gemini-engram.test.ts and
// qwen-engram.test.ts run the real ones): the settings file it writes, in each agent's timeout unit,
// what it refuses, what status says, what uninstall gives back, and the hook runner's answers in
// each agent's protocol.

const AGENTS = [
  {
    agent: 'gemini',
    folder: '.gemini',
    events: {
      'session-start': 'SessionStart',
      'user-prompt-submit': 'BeforeAgent',
      stop: 'AfterAgent',
      'session-end': 'SessionEnd',
    },
    timeout: 10_000,
    homeEnv: { name: 'GEMINI_CLI_HOME', settings: (folder: string) => join(folder, '.gemini', 'settings.json') },
  },
  {
    agent: 'qwen',
    folder: '.qwen',
    events: {
      'session-start': 'SessionStart',
      'user-prompt-submit': 'UserPromptSubmit',
      stop: 'Stop',
      'pre-compact': 'PreCompact',
      'session-end': 'SessionEnd',
    },
    timeout: 10,
    homeEnv: { name: 'QWEN_HOME', settings: (folder: string) => join(folder, 'settings.json') },
  },
] as const;

describe.each(AGENTS)('engram install / uninstall / status $agent', ({ agent, folder, events, timeout, homeEnv }) => {
  let workspace: Workspace;
  let settings: string;
  beforeEach(() => {
    workspace = createWorkspace();
    mkdirSync(join(workspace.home, folder));
    settings = join(workspace.home, folder, 'settings.json');
  });
  afterEach(() => workspace.cleanup());

  it("adds one hook per event after the user's own, in the agent's timeout unit, and the MCP server; uninstall gives the file back byte for byte", async () => {
    // The user's own file: CRLF, odd spacing, a hook of theirs on the prompt event, an MCP server of theirs.
    const own = `{\r\n  "theme":"Dracula" ,\r\n  "hooks": { "${events['user-prompt-submit']}": [ { "hooks": [ { "type": "command", "command": "mine", "timeout": 5 } ] } ] },\r\n  "mcpServers": { "other": { "command": "other-mcp" } }\r\n}`;
    writeFileSync(settings, own);
    const installed = await workspace.json(['install', agent]);
    expect(installed.changed.map((entry: { file: string }) => entry.file)).toEqual([settings]);
    const written = JSON.parse(readFileSync(settings, 'utf8'));
    expect(written.theme).toBe('Dracula');
    expect(Object.keys(written.hooks).sort()).toEqual(Object.values(events).sort());
    for (const [word, event] of Object.entries(events)) {
      const groups = written.hooks[event];
      const ours = groups.at(-1).hooks[0];
      expect(ours.command).toMatch(new RegExp(` hook ${word} --agent ${agent}$`));
      expect(ours.timeout).toBe(timeout);
      expect(ours.type).toBe('command');
    }
    expect(written.hooks[events['user-prompt-submit']][0].hooks[0].command).toBe('mine');
    expect(written.mcpServers.other).toEqual({ command: 'other-mcp' });
    expect(written.mcpServers.engram.args.at(-1)).toBe('mcp');
    expect((await workspace.json(['status'])).problems).toBeUndefined();
    await expectInstalledOnce(workspace, agent);

    await workspace.json(['uninstall', agent]);
    expect(readFileSync(settings, 'utf8')).toBe(own);
    expect((await workspace.json(['status']))[agent]).toBeUndefined();
    expect((await workspace.json(['uninstall', agent])).changed).toEqual([]);
  });

  it('a hook taken out since install: status names it, install again puts it back, and uninstall keeps what the user changed', async () => {
    await workspace.json(['install', agent]);
    const edited = JSON.parse(readFileSync(settings, 'utf8'));
    delete edited.hooks[events.stop];
    edited.theme = 'mine';
    writeFileSync(settings, JSON.stringify(edited));
    const status = await workspace.run(['status']);
    expect(status.stdout).toContain(`has no engram ${events.stop} hook`);
    await workspace.json(['install', agent]);
    expect((await workspace.json(['status']))[agent].problems).toEqual([]);
    await workspace.json(['uninstall', agent]);
    // Install made the file: what is left is the user's change only.
    expect(JSON.parse(readFileSync(settings, 'utf8'))).toEqual({ theme: 'mine' });
  });

  it('refuses a settings file that is not JSON, or whose hooks list is not an array, and changes nothing', async () => {
    for (const text of ['{"hooks": {', `{"hooks":{"${events.stop}":{"x":1}}}`, '[1]']) {
      writeFileSync(settings, text);
      const result = await workspace.run(['install', agent]);
      expect(result.code).not.toBe(0);
      expect(result.stderr).toMatch(/not valid JSON|is not an array|not a JSON object/);
      expect(readFileSync(settings, 'utf8')).toBe(text);
      expect(existsSync(join(workspace.home, 'agent-installs.json'))).toBe(false);
    }
  });

  it('leaves an MCP server named engram the user added alone, and says so', async () => {
    const own = '{"mcpServers":{"engram":{"command":"engram","args":["mcp"]}}}\n';
    writeFileSync(settings, own);
    const result = await workspace.run(['install', agent]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('has "mcpServers.engram" already');
    await workspace.json(['uninstall', agent]);
    expect(readFileSync(settings, 'utf8')).toBe(own);
  });

  it(`writes where ${homeEnv.name} says, and nowhere else`, async () => {
    const elsewhere = join(workspace.root, 'elsewhere');
    mkdirSync(elsewhere);
    const target = homeEnv.settings(elsewhere);
    const env = { [homeEnv.name]: elsewhere };
    await workspace.json(['install', agent], 0, { env });
    expect(JSON.parse(readFileSync(target, 'utf8')).mcpServers.engram).toBeDefined();
    expect(existsSync(settings)).toBe(false);
    await workspace.json(['uninstall', agent], 0, { env });
    expect(existsSync(target)).toBe(false);
  });
});

describe("the hook runner in Gemini CLI's and Qwen Code's protocols", () => {
  let workspace: Workspace;
  beforeEach(async () => {
    workspace = createWorkspace();
    await workspace.run(['remember', 'The staging database listens on port 6543.']);
  });
  afterEach(() => workspace.cleanup());
  const input = (cwd: string, event: string, extra: Record<string, unknown> = {}) =>
    JSON.stringify({ session_id: `s-${event}`, cwd, hook_event_name: event, ...extra });
  /** engram's `hook <event> --agent <agent>` in the workspace, given the agent's `agentEvent` input. */
  const agentHook = (agent: string, event: string, agentEvent: string, extra: Record<string, unknown> = {}) =>
    runHook(workspace, event, input(workspace.cwd, agentEvent, extra), {}, ['--agent', agent]);

  it("Gemini's BeforeAgent: one JSON document on stdout, the memory in hookSpecificOutput; PreCompress is not one of its events", async () => {
    const prompt = await agentHook('gemini', 'user-prompt-submit', 'BeforeAgent', { prompt: 'staging port?' });
    expect(prompt.code).toBe(0);
    // Pure JSON: the whole of stdout parses (Gemini CLI injects nothing otherwise).
    const output = JSON.parse(prompt.stdout);
    expect(output.hookSpecificOutput.hookEventName).toBe('BeforeAgent');
    expect(output.hookSpecificOutput.additionalContext).toContain('6543');
    const start = await agentHook('gemini', 'session-start', 'SessionStart', { source: 'startup' });
    if (start.stdout !== '') expect(JSON.parse(start.stdout).hookSpecificOutput.hookEventName).toBe('SessionStart');
    const compress = await agentHook('gemini', 'pre-compact', 'PreCompress');
    expect(compress).toEqual({ code: 0, stdout: '' });
    expect(readFileSync(join(workspace.home, 'logs', 'claude-code-hooks.log'), 'utf8')).toContain(
      'unknown hook event \\"pre-compact\\" for gemini',
    );
  });

  it("Qwen's UserPromptSubmit recalls for the user's submitted text only, never for a tool-result continuation's prompt", async () => {
    const typed = await agentHook('qwen', 'user-prompt-submit', 'UserPromptSubmit', {
      prompt: 'staging port?',
      submitted_prompt: 'staging port?',
    });
    expect(JSON.parse(typed.stdout).hookSpecificOutput.additionalContext).toContain('6543');
    // A tool result going back to the model: `prompt` is set (the model-bound text), `submitted_prompt` is not.
    const continuation = await agentHook('qwen', 'user-prompt-submit', 'UserPromptSubmit', {
      prompt: 'staging database port? (tool output)',
      session_id: 's-continuation',
    });
    expect(continuation).toEqual({ code: 0, stdout: '' });
    // Claude Code's and Codex's prompt hooks still read `prompt`.
    const codex = await agentHook('codex', 'user-prompt-submit', 'UserPromptSubmit', {
      prompt: 'staging port?',
      session_id: 's-codex',
    });
    expect(JSON.parse(codex.stdout).hookSpecificOutput.additionalContext).toContain('6543');
  });

  it.each([
    ['gemini', 'AfterAgent', 'gemini/session-0.61.0-tool-call-resume.jsonl', '1a08c5f0-4971-4da2-99c9-7057cac4adae'],
    ['qwen', 'Stop', 'qwen/chat-0.24.4-tool-call-continue.jsonl', '556b17b3-3c57-4b97-a6e8-6b36f60363fe'],
  ])(
    "%s's end-of-turn hook (%s) queues its own chat file, recorded from the real CLI, and the worker stores what was said",
    async (agent, event, fixture, sessionId) => {
      const transcript = join(workspace.root, 'chats', sessionId, 'chat.jsonl');
      mkdirSync(join(workspace.root, 'chats', sessionId), { recursive: true });
      copyFileSync(fileURLToPath(new URL(`../../fixtures/agents/${fixture}`, import.meta.url)), transcript);
      const stop = await agentHook(agent, 'stop', event, { session_id: sessionId, transcript_path: transcript });
      expect(stop).toEqual({ code: 0, stdout: '' });
      let listed = '';
      for (let waited = 0; waited < 60_000 && !/tabs/i.test(listed); waited += 1_000) {
        await new Promise((resolve) => setTimeout(resolve, 1_000));
        listed = (await workspace.run(['list', '--json'])).stdout;
      }
      expect(listed).toMatch(/prefer[^"]*tabs/i);
    },
    90_000,
  );
});
