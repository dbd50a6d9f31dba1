import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOpenAiChatCompletionsServer } from '../../src/testing/openai-chat-completions-server.js';
import type { LanguageModelServer } from '../../src/testing/loopback-model-server.js';
import { findAgentCli } from '../support/agent-clis.js';
import {
  agentTestWorld,
  claudeCodePrompt,
  requestBodiesSince,
  runProcess,
  waitForMemory,
} from '../support/agent-e2e.js';

// engram with the real Qwen Code (issue 28): `engram install qwen` in a temp HOME, `qwen -p`
// against the loopback chat completions server, the hooks run through engram's one hook runner
// (built dist/, so `npm run build` first). Remembered in project A: in A's request, never in B's;
// the engram MCP server starts; "remember that …" said in Qwen Code reaches Claude Code's next
// session in A (its real hook command), never B's; a corrupt store leaves Qwen's answer as it
// was; uninstall leaves settings.json byte for byte.

const CLI = join(process.cwd(), 'dist', 'surfaces', 'cli', 'main.js');
const RUN_TIMEOUT_MS = 120_000;
const found = findAgentCli('qwen');
const qwen = 'cli' in found ? found.cli : undefined;
if (!qwen) console.log(`qwen: skipped: ${'missing' in found ? found.missing : ''}`);

const { home, projectA, projectB } = agentTestWorld('qwen');
const settingsFile = join(home, '.qwen', 'settings.json');
let server: LanguageModelServer;
const env = (): Record<string, string> => ({
  PATH: process.env.PATH ?? '',
  HOME: home,
  TERM: 'dumb',
  OPENAI_API_KEY: 'test',
  OPENAI_BASE_URL: server.url,
  OPENAI_MODEL: 'loop-model',
});

const run = (command: string, args: readonly string[], cwd: string) =>
  runProcess(command, args, { cwd, env: env(), timeoutMs: RUN_TIMEOUT_MS - 10_000 });
const engram = (args: readonly string[], cwd: string) => run(process.execPath, [CLI, ...args], cwd);
const claudeCode = (prompt: string, cwd: string, session: string) =>
  claudeCodePrompt(prompt, { cwd, env: env(), session });

/** The requests one Qwen Code run made, as text. */
async function ask(prompt: string, cwd: string): Promise<{ body: string; stdout: string }> {
  const before = server.requests.length;
  const result = await run(qwen!.command, [...qwen!.args, '-p', prompt], cwd);
  expect(result.code, result.stderr).toBe(0);
  return {
    body: requestBodiesSince(server, before),
    stdout: result.stdout,
  };
}

// The user's own settings, as a person writes them (no final newline: install must not add one for
// good), with the "$version" Qwen Code 0.24.4 adds on its first run (it rewrites a file without it).
const userSettings = `{
    "security": { "auth": { "selectedType": "openai" } },
    "privacy": { "usageStatisticsEnabled": false },
    "telemetry": { "enabled": false },
    "hooks": { "PostToolUse": [ { "hooks": [ { "type": "command", "command": "true", "timeout": 5 } ] } ] },
    "$version": 4
}`;

describe.skipIf(!qwen)('engram with the real Qwen Code', () => {
  beforeAll(async () => {
    // Qwen Code's own memory step asks the model after each turn; it is answered like any other.
    server = await startOpenAiChatCompletionsServer();
    for (const folder of [join(home, '.qwen'), projectA, projectB]) mkdirSync(folder, { recursive: true });
    for (const project of [projectA, projectB]) spawnSync('git', ['init', '-q', project]);
    writeFileSync(settingsFile, userSettings);
  });
  afterAll(() => server?.close());

  it(
    "install, recall in A and never in B, remember in Qwen reaching Claude Code's next session, a corrupt store, uninstall byte for byte",
    async () => {
      const settingsBefore = readFileSync(settingsFile);
      const installed = await engram(['install', 'qwen'], projectA);
      expect(installed.code, installed.stderr).toBe(0);
      expect((await engram(['status'], projectA)).stdout).toMatch(/qwen\s+runs engram/);

      const remembered = await engram(
        ['remember', 'The staging database listens on port 6543 (host quartz-heron).'],
        projectA,
      );
      expect(remembered.code, remembered.stderr).toBe(0);
      const inA = await ask('Which port does the staging database use?', projectA);
      // UserPromptSubmit's context, as Qwen Code puts it into the user turn (its submitted_prompt is the typed text).
      expect(inA.body).toMatch(/<qwen:user-prompt-submit-context>[^]*port 6543 \(host quartz-heron\)/);
      // The MCP server install wrote: Qwen Code started it and offers its tools.
      expect(inA.body).toContain('memory_search');
      expect((await ask('Which port does the staging database use?', projectB)).body).not.toContain('quartz-heron');

      // Said in Qwen Code: Stop spools the chat file, the worker stores the explicit statement.
      await ask('Remember that the release branch is called trunk-blue.', projectA);
      expect(await waitForMemory(() => engram(['list', '--json'], projectA), 'trunk-blue')).toContain('trunk-blue');
      // Another agent, same project: Claude Code's prompt hook gives it; in B it does not.
      const claudeA = await claudeCode('What is the release branch called?', projectA, 'claude-a');
      expect(claudeA.stdout).toContain('trunk-blue');
      const claudeB = await claudeCode('What is the release branch called?', projectB, 'claude-b');
      expect(claudeB.stdout).not.toContain('trunk-blue');

      // A corrupt store: Qwen Code answers as it did, the hook says why in its log.
      const plain = await ask('Say hello.', projectA);
      const database = readdirSync(join(home, '.engram')).find((name) => name.endsWith('.db'));
      expect(database).toBeDefined();
      writeFileSync(join(home, '.engram', database!), 'not a database '.repeat(500));
      const broken = await ask('Say hello.', projectA);
      expect(broken.stdout).toBe(plain.stdout);
      const log = readFileSync(join(home, '.engram', 'logs', 'claude-code-hooks.log'), 'utf8');
      expect(log).toMatch(/"agent":"qwen"[^\n]*"status":"failed"/);

      const removed = await engram(['uninstall', 'qwen'], projectA);
      expect(removed.code, removed.stderr).toBe(0);
      expect(readFileSync(settingsFile).equals(settingsBefore)).toBe(true);
      expect(existsSync(join(home, '.engram', 'agent-installs.json'))).toBe(true);
    },
    RUN_TIMEOUT_MS * 6,
  );
});
