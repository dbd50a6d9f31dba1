import { execFile } from 'node:child_process';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ClaudeCodeLanguageModel } from '../../../src/adapters/models/claude-code-language-model.js';
import { startAnthropicMessagesServer } from '../../../src/testing/anthropic-messages-server.js';
import type { LanguageModelServer, ScriptedModelError } from '../../../src/testing/loopback-model-server.js';
import {
  claudeBinary,
  claudeFullSessionArgs,
  makeClaudeHome,
  type ClaudeHome,
} from '../../support/claude-code-headless.js';

const run = promisify(execFile);
const CLAUDE = claudeBinary();
const SYSTEM = 'ENGRAM-EXTRACTION-SYSTEM: read the conversation and answer with memories as JSON.';

let server: LanguageModelServer;
let claude: ClaudeHome;
/** Every request fails with this while it is set (the CLI retries, so one scripted error is not enough). */
let failWith: ScriptedModelError | undefined;

beforeAll(async () => {
  server = await startAnthropicMessagesServer({
    claudeCode: true,
    respond: () => (failWith ? { error: failWith } : undefined),
  });
});
afterAll(async () => server.close());
beforeEach(async () => {
  claude = await makeClaudeHome();
});
afterEach(async () => {
  failWith = undefined;
  await claude.close();
});

function model(options: { env?: Record<string, string>; timeoutMs?: number; command?: string } = {}) {
  return new ClaudeCodeLanguageModel({
    model: 'haiku',
    command: options.command ?? CLAUDE,
    env: options.env ?? claude.env(server.url),
    ...(options.timeoutMs !== undefined && { timeoutMs: options.timeoutMs }),
  });
}

describe('the claude-code provider, through the real Claude Code CLI', () => {
  it('sends the system prompt and the prompt through claude -p, with no tools, and reads the JSON answer; no hook fires', async () => {
    server.script({ message: { text: 'Here you go:\n[{"content":"Deploys happen on Fridays."}]' } });
    const before = server.requests.length;
    const answer = await model().generate({
      system: [{ text: SYSTEM, cache: true }],
      messages: [{ role: 'user', content: 'User: we deploy on Fridays.\nAssistant: Noted.' }],
      maxOutputTokens: 500,
      responseFormat: 'json',
    });
    expect(answer.text).toBe('[{"content":"Deploys happen on Fridays."}]');
    expect(answer.stopReason).toBe('end');
    expect(answer.usage.inputTokens).toBeGreaterThan(0);
    const sent = server.requests.slice(before);
    expect(sent).toHaveLength(1);
    const body = sent[0]!.body as {
      model: string;
      tools: unknown[];
      system: Array<{ text: string }>;
      messages: Array<{ role: string; content: unknown }>;
    };
    expect(sent[0]!.path).toMatch(/^\/v1\/messages/);
    expect(body.model).toBe('claude-haiku-5-5');
    expect(body.tools).toEqual([]);
    expect(body.system.map((block) => block.text).join('\n')).toContain(SYSTEM);
    expect(body.system.map((block) => block.text).join('\n')).toContain('Answer with exactly one JSON value');
    expect(JSON.stringify(body.messages[0])).toContain('we deploy on Fridays.');
    // The HOME's user settings hold a hook on every event: the nested call fired none of them.
    expect(await claude.firedHooks()).toEqual([]);
    // And no transcript was written that engram's transcript import would later read.
    await expect(run('find', [join(claude.home, '.claude'), '-name', '*.jsonl'])).resolves.toMatchObject({
      stdout: '',
    });
  }, 60_000);

  it('(control) the same HOME fires its hooks for a plain claude -p, so the check above can fail', async () => {
    await run(CLAUDE, ['-p', ...claudeFullSessionArgs(CLAUDE), 'hello', '--output-format', 'json'], {
      env: claude.env(server.url),
      cwd: claude.home,
      timeout: 60_000,
    });
    expect(await claude.firedHooks()).toEqual(expect.arrayContaining(['SessionStart', 'UserPromptSubmit', 'Stop']));
  }, 60_000);

  it('says Claude Code is not logged in (MODEL_AUTH) when there is no login and no key, sending nothing', async () => {
    const env = claude.env(server.url);
    delete (env as Record<string, string | undefined>).ANTHROPIC_API_KEY;
    const before = server.requests.length;
    await expect(
      model({ env }).generate({ messages: [{ role: 'user', content: 'hi' }], maxOutputTokens: 10 }),
    ).rejects.toMatchObject({ code: 'MODEL_AUTH', message: expect.stringMatching(/not logged in.*\/login/i) });
    expect(server.requests.length).toBe(before);
  }, 60_000);

  it('reports a refused key (401) as MODEL_AUTH and a server error as MODEL_UNAVAILABLE, with the exit code', async () => {
    failWith = { kind: 'auth' };
    await expect(
      model().generate({ messages: [{ role: 'user', content: 'hi' }], maxOutputTokens: 10 }),
    ).rejects.toMatchObject({ code: 'MODEL_AUTH', details: { exitCode: 1 } });
    failWith = { kind: 'invalid_request', message: 'bad thing' };
    await expect(
      model().generate({ messages: [{ role: 'user', content: 'hi' }], maxOutputTokens: 10 }),
    ).rejects.toMatchObject({ code: 'MODEL_REQUEST_INVALID', message: expect.stringContaining('exited with code 1') });
    failWith = { kind: 'server' };
    await expect(
      model().generate({ messages: [{ role: 'user', content: 'hi' }], maxOutputTokens: 10 }),
    ).rejects.toMatchObject({ code: 'MODEL_UNAVAILABLE', message: expect.stringContaining('exited with code 1') });
  }, 120_000);

  it('stops the CLI at its deadline (MODEL_TIMEOUT) and on abort (MODEL_ABORTED)', async () => {
    server.script({ hang: true });
    await expect(
      model({ timeoutMs: 4_000 }).generate({ messages: [{ role: 'user', content: 'hi' }], maxOutputTokens: 10 }),
    ).rejects.toMatchObject({ code: 'MODEL_TIMEOUT' });
    server.script({ hang: true });
    const controller = new AbortController();
    const pending = model().generate({
      messages: [{ role: 'user', content: 'hi' }],
      maxOutputTokens: 10,
      signal: controller.signal,
    });
    setTimeout(() => controller.abort(), 3_000);
    await expect(pending).rejects.toMatchObject({ code: 'MODEL_ABORTED' });
  }, 60_000);
});

describe('the claude-code provider, its edges (no CLI needed)', () => {
  let folder: string;
  beforeEach(async () => {
    folder = await mkdtemp(join(tmpdir(), 'engram-cc-fake-'));
  });
  afterEach(async () => rm(folder, { recursive: true, force: true }));

  /** A stand-in CLI that records its argv, environment and stdin, then prints `output` and exits with `code`. */
  async function fakeCli(output: string, code = 0): Promise<string> {
    const path = join(folder, 'claude');
    const record = join(folder, 'record.json');
    await writeFile(
      path,
      `#!/usr/bin/env node
const fs = require('node:fs');
const stdin = fs.readFileSync(0, 'utf8');
const file = process.argv[process.argv.indexOf('--system-prompt-file') + 1];
fs.writeFileSync(${JSON.stringify(record)}, JSON.stringify({ argv: process.argv.slice(2), env: process.env, stdin, system: fs.readFileSync(file, 'utf8'), cwd: process.cwd() }));
process.stdout.write(${JSON.stringify(output)});
process.exit(${code});
`,
    );
    await chmod(path, 0o755);
    return path;
  }
  const record = async (): Promise<{
    argv: string[];
    env: Record<string, string>;
    stdin: string;
    system: string;
  }> => JSON.parse(await readFile(join(folder, 'record.json'), 'utf8'));
  const ok = JSON.stringify({ type: 'result', is_error: false, result: 'fine', stop_reason: 'end_turn', usage: {} });

  it('passes the guard flags and ENGRAM_NESTED=1, the prompt on stdin and the system prompt in a file it removes after', async () => {
    const command = await fakeCli(`warning: something\n${ok}\n`);
    const subject = new ClaudeCodeLanguageModel({ model: 'haiku', command, env: { PATH: process.env.PATH ?? '' } });
    const huge = 'x'.repeat(400_000);
    const answer = await subject.generate({
      system: 'SYS',
      messages: [
        { role: 'user', content: huge },
        { role: 'assistant', content: 'ok' },
        { role: 'user', content: 'last' },
      ],
      maxOutputTokens: 77,
    });
    expect(answer.text).toBe('fine');
    const seen = await record();
    expect(seen.argv).toEqual(
      expect.arrayContaining([
        '-p',
        '--output-format',
        'json',
        '--safe-mode',
        '--no-session-persistence',
        '--tools',
        '',
      ]),
    );
    expect(seen.argv).not.toContain('--bare');
    expect(seen.argv[seen.argv.indexOf('--model') + 1]).toBe('haiku');
    expect(seen.env.ENGRAM_NESTED).toBe('1');
    expect(seen.env.CLAUDE_CODE_MAX_RETRIES).toBe('1');
    expect(seen.env.CLAUDE_CODE_MAX_OUTPUT_TOKENS).toBe('77');
    expect(seen.system).toBe('SYS');
    expect(seen.stdin).toContain(huge);
    expect(seen.stdin).toContain('User:\nlast');
    const file = seen.argv[seen.argv.indexOf('--system-prompt-file') + 1]!;
    await expect(readFile(file)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('refuses tools and malformed requests before starting anything', async () => {
    const command = await fakeCli(ok);
    const subject = new ClaudeCodeLanguageModel({ model: 'haiku', command });
    await expect(
      subject.generate({
        messages: [{ role: 'user', content: 'hi' }],
        maxOutputTokens: 10,
        tools: [{ name: 'memory', description: 'd', inputSchema: { type: 'object' } }],
      }),
    ).rejects.toMatchObject({ code: 'MODEL_REQUEST_INVALID' });
    for (const bad of [null, {}, { messages: [], maxOutputTokens: 1 }, { messages: [{ role: 'user', content: 'x' }] }])
      await expect(subject.generate(bad as never)).rejects.toMatchObject({ code: 'MODEL_REQUEST_INVALID' });
    await expect(readFile(join(folder, 'record.json'))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('says what went wrong: a missing CLI, unreadable output, an exit with stderr, a non-JSON answer to a JSON request', async () => {
    const missing = new ClaudeCodeLanguageModel({ model: 'haiku', command: join(folder, 'nope') });
    const request = { messages: [{ role: 'user' as const, content: 'hi' }], maxOutputTokens: 10 };
    await expect(missing.generate(request)).rejects.toMatchObject({
      code: 'MODEL_NOT_CONFIGURED',
      message: expect.stringContaining('ENGRAM_CLAUDE_CODE_COMMAND'),
    });
    const garbage = new ClaudeCodeLanguageModel({ model: 'haiku', command: await fakeCli('<html>not json') });
    await expect(garbage.generate(request)).rejects.toMatchObject({ code: 'MODEL_OUTPUT_INVALID' });
    const crashed = new ClaudeCodeLanguageModel({ model: 'haiku', command: await fakeCli('', 3) });
    await expect(crashed.generate(request)).rejects.toMatchObject({
      code: 'MODEL_UNAVAILABLE',
      message: expect.stringContaining('exited with code 3'),
    });
    const prose = new ClaudeCodeLanguageModel({ model: 'haiku', command: await fakeCli(ok) });
    await expect(prose.generate({ ...request, responseFormat: 'json' })).rejects.toMatchObject({
      code: 'MODEL_OUTPUT_INVALID',
      details: { text: 'fine' },
    });
  });

  it('refuses bad options', () => {
    for (const options of [null, { model: '' }, { model: 'haiku', command: '' }, { model: 'haiku', timeoutMs: 0 }])
      expect(() => new ClaudeCodeLanguageModel(options as never)).toThrow(
        expect.objectContaining({ code: 'CONFIG_INVALID' }),
      );
    expect(new ClaudeCodeLanguageModel({ model: 'haiku' })).toMatchObject({
      provider: 'claude-code',
      modelId: 'haiku',
      interactive: false,
      command: 'claude',
    });
  });
});
