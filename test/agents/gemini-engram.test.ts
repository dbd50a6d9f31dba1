import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGeminiGenerateContentServer } from '../../src/testing/gemini-generate-content-server.js';
import type { LanguageModelServer } from '../../src/testing/loopback-model-server.js';
import { findAgentCli } from '../support/agent-clis.js';
import {
  agentTestWorld,
  claudeCodePrompt,
  requestBodiesSince,
  runProcess,
  waitForMemory,
} from '../support/agent-e2e.js';

// engram with the real Gemini CLI (issue 28): `engram install gemini` in a temp HOME, `gemini -p`
// against the loopback generateContent server, the hooks run through engram's one hook runner
// (built dist/, so `npm run build` first). Remembered in project A: in A's request, never in B's;
// the engram MCP server starts; "remember that …" said in Gemini CLI reaches Claude Code's next
// session in A (its real hook command), never B's; a corrupt store leaves Gemini's answer as it
// was; uninstall leaves settings.json byte for byte.

const CLI = join(process.cwd(), 'dist', 'surfaces', 'cli', 'main.js');
const RUN_TIMEOUT_MS = 120_000;
const found = findAgentCli('gemini');
const gemini = 'cli' in found ? found.cli : undefined;
if (!gemini) console.log(`gemini: skipped: ${'missing' in found ? found.missing : ''}`);

const { home, projectA, projectB } = agentTestWorld('gemini');
const settingsFile = join(home, '.gemini', 'settings.json');
let server: LanguageModelServer;
const env = (): Record<string, string> => ({
  PATH: process.env.PATH ?? '',
  HOME: home,
  TERM: 'dumb',
  GEMINI_API_KEY: 'test',
  GOOGLE_GEMINI_BASE_URL: server.url,
  // Headless in a folder Gemini CLI has not been told to trust (test/support/agent-clis.md §2).
  GEMINI_CLI_TRUST_WORKSPACE: 'true',
});

const run = (command: string, args: readonly string[], cwd: string) =>
  runProcess(command, args, { cwd, env: env(), timeoutMs: RUN_TIMEOUT_MS - 10_000 });
const engram = (args: readonly string[], cwd: string) => run(process.execPath, [CLI, ...args], cwd);
const claudeCode = (prompt: string, cwd: string, session: string) =>
  claudeCodePrompt(prompt, { cwd, env: env(), session });

/** The requests one Gemini CLI run made, as text. */
async function ask(prompt: string, cwd: string): Promise<{ body: string; stdout: string }> {
  const before = server.requests.length;
  const result = await run(gemini!.command, [...gemini!.args, '-m', 'gemini-2.5-flash', '-p', prompt], cwd);
  expect(result.code, result.stderr).toBe(0);
  return {
    body: requestBodiesSince(server, before),
    stdout: result.stdout,
  };
}

// The user's own settings, as a person writes them (no final newline: install must not add one for good).
const userSettings = `{
    "security": { "auth": { "selectedType": "gemini-api-key" } },
    "privacy": { "usageStatisticsEnabled": false },
    "telemetry": { "enabled": false },
    "hooks": { "AfterTool": [ { "hooks": [ { "type": "command", "command": "true", "timeout": 5000 } ] } ] }
}`;

describe.skipIf(!gemini)('engram with the real Gemini CLI', () => {
  beforeAll(async () => {
    server = await startGeminiGenerateContentServer();
    for (const folder of [join(home, '.gemini'), projectA, projectB]) mkdirSync(folder, { recursive: true });
    for (const project of [projectA, projectB]) spawnSync('git', ['init', '-q', project]);
    writeFileSync(settingsFile, userSettings);
  });
  afterAll(() => server?.close());

  it(
    "install, recall in A and never in B, remember in Gemini reaching Claude Code's next session, a corrupt store, uninstall byte for byte",
    async () => {
      const settingsBefore = readFileSync(settingsFile);
      const installed = await engram(['install', 'gemini'], projectA);
      expect(installed.code, installed.stderr).toBe(0);
      expect((await engram(['status'], projectA)).stdout).toMatch(/gemini\s+runs engram/);

      const remembered = await engram(
        ['remember', 'The staging database listens on port 6543 (host quartz-heron).'],
        projectA,
      );
      expect(remembered.code, remembered.stderr).toBe(0);
      const inA = await ask('Which port does the staging database use?', projectA);
      // BeforeAgent's context, as Gemini CLI puts a hook's context into the user turn.
      expect(inA.body).toMatch(/<hook_context>[^]*port 6543 \(host quartz-heron\)/);
      // The MCP server install wrote: Gemini CLI started it and passed on its instructions.
      expect(inA.body).toContain("instructions provided by the tool server 'engram'");
      expect((await ask('Which port does the staging database use?', projectB)).body).not.toContain('quartz-heron');

      // Said in Gemini CLI: AfterAgent spools the chat file, the worker stores the explicit statement.
      await ask('Remember that the release branch is called trunk-blue.', projectA);
      expect(await waitForMemory(() => engram(['list', '--json'], projectA), 'trunk-blue')).toContain('trunk-blue');
      // Another agent, same project: Claude Code's prompt hook gives it; in B it does not.
      const claudeA = await claudeCode('What is the release branch called?', projectA, 'claude-a');
      expect(claudeA.stdout).toContain('trunk-blue');
      const claudeB = await claudeCode('What is the release branch called?', projectB, 'claude-b');
      expect(claudeB.stdout).not.toContain('trunk-blue');

      // A corrupt store: Gemini CLI answers as it did, the hook says why in its log.
      const plain = await ask('Say hello.', projectA);
      const database = readdirSync(join(home, '.engram')).find((name) => name.endsWith('.db'));
      expect(database).toBeDefined();
      writeFileSync(join(home, '.engram', database!), 'not a database '.repeat(500));
      const broken = await ask('Say hello.', projectA);
      expect(broken.stdout).toBe(plain.stdout);
      const log = readFileSync(join(home, '.engram', 'logs', 'claude-code-hooks.log'), 'utf8');
      expect(log).toMatch(/"agent":"gemini"[^\n]*"status":"failed"/);

      const removed = await engram(['uninstall', 'gemini'], projectA);
      expect(removed.code, removed.stderr).toBe(0);
      expect(readFileSync(settingsFile).equals(settingsBefore)).toBe(true);
      expect(existsSync(join(home, '.engram', 'agent-installs.json'))).toBe(true);
    },
    RUN_TIMEOUT_MS * 6,
  );
});
