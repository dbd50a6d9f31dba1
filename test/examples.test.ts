import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { openEngram } from '../src/node/open-engram.js';
import { startAnthropicMessagesServer } from '../src/testing/anthropic-messages-server.js';
import type { LanguageModelServer } from '../src/testing/loopback-model-server.js';
import { startOpenAiChatCompletionsServer } from '../src/testing/openai-chat-completions-server.js';

// Each file of examples/ runs as a user would run it (node, importing `engram/…` through the
// package's own exports, so dist/ must be built), against the loopback servers: an example that rots
// fails here.

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const hasAiSdkOpenAi = (() => {
  try {
    createRequire(join(ROOT, 'package.json')).resolve('@ai-sdk/openai');
    return true;
  } catch {
    return false;
  }
})();

let anthropic: LanguageModelServer;
let openai: LanguageModelServer;
let directory = '';
let env: Record<string, string> = {};

beforeAll(async () => {
  if (!existsSync(join(ROOT, 'dist', 'node.js')))
    throw new Error('Run `npm run build` first: the examples import engram from dist/.');
  anthropic = await startAnthropicMessagesServer();
  openai = await startOpenAiChatCompletionsServer();
});

afterAll(async () => {
  await anthropic?.close();
  await openai?.close();
});

beforeEach(async () => {
  if (directory) await rm(directory, { recursive: true, force: true });
  directory = await mkdtemp(join(tmpdir(), 'engram-examples-'));
  env = {
    PATH: process.env.PATH ?? '',
    HOME: directory,
    ENGRAM_HOME: join(directory, 'home'),
    ENGRAM_STORE: join(directory, 'engram.db'),
    ENGRAM_MODEL_PROVIDER: 'none',
    ANTHROPIC_API_KEY: 'test-key',
    ANTHROPIC_BASE_URL: anthropic.url,
    OPENAI_API_KEY: 'test-key',
    OPENAI_BASE_URL: openai.url,
    EXAMPLE_MODEL: 'test-model',
  };
});

afterAll(async () => {
  if (directory) await rm(directory, { recursive: true, force: true });
});

function run(file: string, args: string[] = [], input = ''): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      process.execPath,
      [join(ROOT, 'examples', file), ...args],
      { cwd: directory, env, timeout: 60_000 },
      (error, stdout, stderr) =>
        error ? reject(new Error(`${file}: ${error.message}\n${stderr}`)) : resolve({ stdout, stderr }),
    );
    child.stdin?.end(input);
  });
}

async function storedContents(): Promise<string[]> {
  const { engram, close } = await openEngram({ cwd: directory, env });
  const memories = await engram.list();
  await close();
  return memories.map((memory) => memory.content);
}

describe('examples/', () => {
  it('anthropic-chat.mjs: remembers a line and brings it back into a later request', async () => {
    const before = anthropic.requests.length;
    anthropic.script({ message: { text: 'Noted.' } }, { message: { text: 'Frankfurt.' } });
    const { stdout } = await run(
      'anthropic-chat.mjs',
      [],
      'Remember that the API deploys to the Frankfurt region.\nWhere does the API deploy?\n',
    );
    expect(stdout).toContain('Noted.');
    expect(stdout).toContain('Frankfurt.');
    expect(await storedContents()).toContain('The API deploys to the Frankfurt region.');
    const second = JSON.stringify(anthropic.requests[before + 1]!.body);
    expect(second).toContain('<memory_context>');
    expect(second).toContain('deploys to the Frankfurt region');
  });

  it('openai-chat.mjs: answers and tells what it injected', async () => {
    const { engram, close } = await openEngram({ cwd: directory, env });
    await engram.remember({ content: 'The API deploys to the Frankfurt region.', type: 'project' });
    await close();
    openai.script({ message: { text: 'In Frankfurt.' } });
    const before = openai.requests.length;
    const { stdout, stderr } = await run('openai-chat.mjs', ['Where does the API deploy?']);
    expect(stdout.trim()).toBe('In Frankfurt.');
    expect(stderr).toContain('memories injected');
    expect(JSON.stringify(openai.requests[before]!.body)).toContain('Frankfurt region');
  });

  it('tool-loop.mjs: runs the tool and prints the final answer', async () => {
    anthropic.script(
      {
        message: { content: [{ type: 'tool_use', id: 'toolu_9', name: 'get_weather', input: { city: 'Frankfurt' } }] },
      },
      { message: { text: 'It is sunny in Frankfurt.' } },
    );
    const before = anthropic.requests.length;
    const { stdout } = await run('tool-loop.mjs', ['What is the weather in Frankfurt?']);
    expect(stdout).toContain('(ran 1 tool call)');
    expect(stdout).toContain('It is sunny in Frankfurt.');
    expect(JSON.stringify(anthropic.requests[before + 1]!.body)).toContain('Sunny, 21°C in Frankfurt');
  });

  it('facade.mjs: remembers, recalls, injects, forgets and names an error code', async () => {
    const { stdout } = await run('facade.mjs');
    expect(stdout).toContain('recalled: test-style');
    expect(stdout).toMatch(/static part: \d+ characters; block: \d+ tokens/);
    expect(stdout).toContain('forgotten: test-style');
    expect(stdout).toMatch(/error code: [A-Z_]+/);
  });

  it.skipIf(!hasAiSdkOpenAi)('ai-sdk-stream.mjs: streams an answer with memory (needs @ai-sdk/openai)', async () => {
    openai.script({ message: { text: 'Streaming from Frankfurt.' } });
    const { stdout } = await run('ai-sdk-stream.mjs', ['Where does the API deploy?']);
    expect(stdout).toContain('Streaming from Frankfurt.');
  });
});
