import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startAnthropicMessagesServer } from '../../src/testing/anthropic-messages-server.js';
import type { LanguageModelServer } from '../../src/testing/loopback-model-server.js';
import { ENGRAM_BINARY, runEngram } from '../support/cli-harness.js';
import {
  claudeBinary,
  claudeFullSessionArgs,
  makeClaudeHome,
  type ClaudeHome,
} from '../support/claude-code-headless.js';
import { answer } from '../support/extraction-support.js';

const run = promisify(execFile);
const TOKEN = 'sk-ant-oat01-FAKE-TOKEN-FOR-TEST';
let server: LanguageModelServer;
let claude: ClaudeHome;

beforeEach(async () => {
  claude = await makeClaudeHome();
  server = await startAnthropicMessagesServer({
    claudeCode: true,
    // The session's own turn has Claude Code's tools; engram's extraction call has none.
    respond: (request) => {
      const body = request.body as { tools?: unknown[] };
      return body.tools && body.tools.length === 0
        ? { message: { text: answer({ content: 'The team deploys on Fridays after the code freeze.' }) } }
        : { message: { text: 'Noted.' } };
    },
  });
});
afterEach(async () => {
  await server.close();
  await claude.close();
});

describe("inside Claude Code with no API key, extraction uses the user's Claude Code login", () => {
  it('a Stop hook running engram extract picks claude-code, its nested call is the second request, and it fires no hook', async () => {
    const project = join(claude.home, 'project');
    const engramHome = join(claude.home, 'engram-home');
    mkdirSync(project);
    mkdirSync(engramHome);
    const output = join(claude.home, 'extract.json');
    // A logged-in user: Claude Code's OAuth credentials, no ANTHROPIC_API_KEY anywhere.
    writeFileSync(
      join(claude.home, '.claude', '.credentials.json'),
      JSON.stringify({
        claudeAiOauth: {
          accessToken: TOKEN,
          refreshToken: 'sk-ant-ort01-FAKE',
          expiresAt: 4_102_444_800_000,
          scopes: ['user:inference', 'user:profile', 'user:sessions:claude_code'],
          subscriptionType: 'pro',
        },
      }),
    );
    const hook = join(claude.home, 'stop-extract.mjs');
    writeFileSync(
      hook,
      `import { readFileSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
const input = JSON.parse(readFileSync(0, 'utf8'));
const done = spawnSync(process.execPath, [${JSON.stringify(ENGRAM_BINARY)}, 'extract', input.transcript_path, '--json'], { cwd: input.cwd, encoding: 'utf8' });
writeFileSync(${JSON.stringify(output)}, JSON.stringify({ status: done.status, stdout: done.stdout, stderr: done.stderr }));
`,
    );
    const settingsPath = join(claude.home, '.claude', 'settings.json');
    const settings = JSON.parse(readFileSync(settingsPath, 'utf8'));
    settings.hooks.Stop.push({ hooks: [{ type: 'command', command: `node '${hook}'`, timeout: 90 }] });
    writeFileSync(settingsPath, JSON.stringify(settings));
    const env = claude.env(server.url, { ENGRAM_HOME: engramHome });
    delete (env as Record<string, string | undefined>).ANTHROPIC_API_KEY;

    const result = await run(
      claudeBinary(),
      ['-p', ...claudeFullSessionArgs(), 'We deploy on Fridays after the code freeze.', '--output-format', 'json'],
      {
        env,
        cwd: project,
        timeout: 120_000,
      },
    );
    expect(JSON.parse(result.stdout)).toMatchObject({ is_error: false, result: 'Noted.' });
    const extracted = JSON.parse(readFileSync(output, 'utf8'));
    expect(extracted.status, extracted.stderr).toBe(0);
    expect(server.requests).toHaveLength(2);
    const nested = server.requests[1]!;
    expect((nested.body as { model: string; tools: unknown[] }).model).toBe('claude-haiku-5-5');
    expect((nested.body as { tools: unknown[] }).tools).toEqual([]);
    expect(nested.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(nested.headers['x-api-key']).toBeUndefined();
    // The outer session's hooks ran once each; the nested call added none.
    const fired = await claude.firedHooks();
    expect(fired.filter((event) => event === 'SessionStart')).toHaveLength(1);
    expect(fired.filter((event) => event === 'UserPromptSubmit')).toHaveLength(1);
    expect(fired.filter((event) => event === 'Stop')).toHaveLength(1);
    const listed = await runEngram(['list', '--json'], { cwd: project, home: engramHome });
    expect(listed.json().memories.map((memory: { content: string }) => memory.content)).toContain(
      'The team deploys on Fridays after the code freeze.',
    );
  }, 150_000);
});
