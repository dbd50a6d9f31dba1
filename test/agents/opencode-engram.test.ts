import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LanguageModelServer } from '../../src/testing/loopback-model-server.js';
import { startOpenAiChatCompletionsServer } from '../../src/testing/openai-chat-completions-server.js';
import { findAgentCli } from '../support/agent-clis.js';
import { agentTestWorld, requestBodiesSince, runProcess } from '../support/agent-e2e.js';

// engram with the real OpenCode CLI (issue 28): `engram install opencode` in a temp HOME, `opencode
// run` against the loopback chat completions server, engram's plugin running the one hook runner
// (built dist/, so `npm run build` first). OpenCode starts slowly under load: three runs in all.
// Remembered in project A: in A's request, never in B's; "remember that …" said in OpenCode is
// stored (from OpenCode's SQLite rows at session.idle) and reaches Claude Code's next session in A;
// a corrupt store leaves the answer as it was; uninstall leaves opencode.json byte for byte.

const CLI = join(process.cwd(), 'dist', 'surfaces', 'cli', 'main.js');
const LAUNCHER = join(process.cwd(), 'plugins', 'engram', 'scripts', 'engram.mjs');
const RUN_TIMEOUT_MS = 200_000;
const found = findAgentCli('opencode');
const opencode = 'cli' in found ? found.cli : undefined;
if (!opencode) console.log(`opencode: skipped: ${'missing' in found ? found.missing : ''}`);

const { home, projectA, projectB } = agentTestWorld('opencode');
const config = join(home, '.config', 'opencode');
const env = {
  PATH: process.env.PATH ?? '',
  HOME: home,
  TERM: 'dumb',
  OPENCODE_DISABLE_AUTOUPDATE: '1',
  OPENCODE_DISABLE_MODELS_FETCH: '1',
  // The wiring is tested here, not the latency (npm run bench): OpenCode's start loads a shared
  // two-core machine so much that a hook past the default 1 s deadline would answer with nothing.
  ENGRAM_HOOK_DEADLINE_MS: '8000',
};

const run = (command: string, args: readonly string[], cwd: string, input?: string) =>
  runProcess(command, args, { cwd, env, ...(input !== undefined && { input }), timeoutMs: RUN_TIMEOUT_MS - 10_000 });

const engram = (args: readonly string[], cwd: string) => run(process.execPath, [CLI, ...args], cwd);

let server: LanguageModelServer;
/** The requests one OpenCode run made (its title request and the turn), as text. */
async function ask(prompt: string, cwd: string): Promise<{ body: string; stdout: string }> {
  const before = server.requests.length;
  const result = await run(opencode!.command, [...opencode!.args, 'run', prompt], cwd);
  expect(result.code, result.stderr).toBe(0);
  return {
    body: requestBodiesSince(server, before),
    stdout: result.stdout,
  };
}

// The user's own settings (a provider, no telemetry), tab-indented with no final newline: uninstall must give these bytes back.
const userSettings = (url: string): string =>
  JSON.stringify(
    {
      $schema: 'https://opencode.ai/config.json',
      model: 'loop/loop-model',
      share: 'disabled',
      autoupdate: false,
      provider: {
        loop: {
          npm: '@ai-sdk/openai-compatible',
          name: 'Loop',
          options: { baseURL: url, apiKey: 'test' },
          models: { 'loop-model': { name: 'Loop model' } },
        },
      },
    },
    null,
    '\t',
  );

describe.skipIf(!opencode)('engram with the real OpenCode CLI', () => {
  beforeAll(async () => {
    server = await startOpenAiChatCompletionsServer({
      respond: (request) =>
        request.rawBody.includes('Generate a title for this conversation') ? { message: { text: 'Notes' } } : undefined,
    });
    for (const folder of [config, projectA, projectB]) mkdirSync(folder, { recursive: true });
    for (const project of [projectA, projectB]) spawnSync('git', ['init', '-q', project]);
    writeFileSync(join(config, 'opencode.json'), userSettings(server.url));
  });
  afterAll(() => server?.close());

  it(
    'install, recall in A and never in B, remember in OpenCode reaching Claude Code, a corrupt store, uninstall byte for byte',
    async () => {
      const settingsBefore = readFileSync(join(config, 'opencode.json'));
      const installed = await engram(['install', 'opencode'], projectA);
      expect(installed.code, installed.stderr).toBe(0);
      expect((await engram(['status'], projectA)).stdout).toMatch(/opencode\s+loads engram/);

      const remembered = await engram(
        ['remember', 'The staging database listens on port 6543 (host quartz-heron).'],
        projectA,
      );
      expect(remembered.code, remembered.stderr).toBe(0);
      // One turn: the recall for the question, and a statement to remember said in OpenCode.
      const first = await ask(
        'Remember that the release branch is called trunk-blue. Which port does the staging database use?',
        projectA,
      );
      expect(first.body).toContain('port 6543 (host quartz-heron)');
      expect((await ask('Which port does the staging database use?', projectB)).body).not.toContain('quartz-heron');

      // session.idle spooled the session (its rows in opencode.db); the worker stores the statement.
      let stored = '';
      for (let waited = 0; waited < 90_000 && !stored.includes('trunk-blue'); waited += 1_000) {
        await new Promise((resolve) => setTimeout(resolve, 1_000));
        stored = (await engram(['list', '--json'], projectA)).stdout;
      }
      expect(stored).toContain('trunk-blue');
      // Another agent's next session in A (Claude Code's session-start hook) is given it; B's is not.
      const claude = (cwd: string) =>
        run(
          process.execPath,
          [LAUNCHER, 'hook', 'session-start', '--from', 'engram-plugin'],
          cwd,
          JSON.stringify({ session_id: `claude-${cwd.length}-${Date.now()}`, cwd, source: 'startup' }),
        );
      expect((await claude(projectA)).stdout).toContain('trunk-blue');
      expect((await claude(projectB)).stdout).not.toContain('trunk-blue');

      // A corrupt store: OpenCode answers as it did, the plugin's runner says why in its log.
      const database = readdirSync(join(home, '.engram')).find((name) => name.endsWith('.db'));
      expect(database).toBeDefined();
      writeFileSync(join(home, '.engram', database!), 'not a database '.repeat(500));
      const broken = await ask(
        'Remember that the release branch is called trunk-blue. Which port does the staging database use?',
        projectA,
      );
      expect(broken.stdout).toBe(first.stdout);
      expect(broken.body).not.toContain('quartz-heron');
      const log = readFileSync(join(home, '.engram', 'logs', 'claude-code-hooks.log'), 'utf8');
      expect(log).toMatch(/"event":"chat.message","agent":"opencode"[^\n]*"status":"failed"/);

      const removed = await engram(['uninstall', 'opencode'], projectA);
      expect(removed.code, removed.stderr).toBe(0);
      expect(readFileSync(join(config, 'opencode.json')).equals(settingsBefore)).toBe(true);
      expect(existsSync(join(config, 'plugin', 'engram.js'))).toBe(false);
    },
    RUN_TIMEOUT_MS * 4,
  );
});
