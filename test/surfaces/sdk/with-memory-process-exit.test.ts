import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EXTRACTION_QUEUE } from '../../../src/extraction/extraction-job-payload.js';
import { openEngram } from '../../../src/node/open-engram.js';
import { startAnthropicMessagesServer } from '../../../src/testing/anthropic-messages-server.js';
import type { LanguageModelServer, ModelServerResponder } from '../../../src/testing/loopback-model-server.js';
import { startOpenAiChatCompletionsServer } from '../../../src/testing/openai-chat-completions-server.js';

// A user's script (test/fixtures/with-memory-never-closes.mjs, run with the built package) wraps a
// client, makes one call and ends without close(), while the model that extracts its turn never
// answers: the process must exit once the script's own work is done, and the turn stays queued in
// the store for the next worker. The script's own work lasts until the extraction call has reached
// the model, so the call is in flight when the process should end. (A model timeout of two minutes
// and a test wait of twenty seconds: an exit observed is an exit that did not wait for the model.)
const FIXTURE = fileURLToPath(new URL('../../fixtures/with-memory-never-closes.mjs', import.meta.url));
const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const EXIT_WAIT_MS = 20_000;

/** The wrapped call gets an answer; every later request (extraction's) hangs. */
const FIRST_ANSWERED: ModelServerResponder = (_request, index) =>
  index === 0 ? { message: { text: 'Noted.' } } : { hang: true };

let directory: string;
const servers: LanguageModelServer[] = [];

beforeEach(() => {
  directory = mkdtempSync(join(tmpdir(), 'engram-never-closes-'));
});

afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
  rmSync(directory, { recursive: true, force: true });
});

async function server<T extends LanguageModelServer>(started: Promise<T>): Promise<T> {
  const value = await started;
  servers.push(value);
  return value;
}

function env(extra: Record<string, string>): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    HOME: directory,
    ENGRAM_HOME: join(directory, 'home'),
    ENGRAM_MODEL_TIMEOUT_MS: '120000',
    ...extra,
  };
}

/** Runs the script until the extraction call reaches `model`, ends its own work, and waits for the exit. */
async function runScript(
  wrapped: 'anthropic' | 'openai' | 'ai-sdk',
  main: LanguageModelServer,
  model: LanguageModelServer,
  extraEnv: Record<string, string> = {},
): Promise<{ code: number | null; stdout: string }> {
  const done = join(directory, 'own-work-done');
  const child = spawn(process.execPath, [FIXTURE], {
    cwd: ROOT,
    env: env({
      WRAPPED: wrapped,
      MAIN_URL: main.url,
      STORE: join(directory, 'engram.db'),
      PROJECT_DIR: directory,
      OWN_WORK_UNTIL: done,
      ...extraEnv,
    }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  try {
    const deadline = Date.now() + EXIT_WAIT_MS;
    const extractionCalls = () => model.requests.filter((request) => request !== main.requests[0]).length;
    while (extractionCalls() === 0) {
      if (Date.now() > deadline) throw new Error(`the extraction call never reached the model; ${stdout}${stderr}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    writeFileSync(done, '');
    let timer: NodeJS.Timeout | undefined;
    const code = await Promise.race([
      exited,
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`still running ${EXIT_WAIT_MS} ms after its own work ended; ${stdout}${stderr}`)),
          EXIT_WAIT_MS,
        );
      }),
    ]).finally(() => clearTimeout(timer));
    return { code, stdout };
  } finally {
    child.kill('SIGKILL');
  }
}

async function queuedJobs() {
  const { engram, close } = await openEngram({
    cwd: directory,
    env: { ENGRAM_HOME: join(directory, 'home'), ENGRAM_MODEL_PROVIDER: 'none' },
    flags: { 'store.url': join(directory, 'engram.db') },
  });
  try {
    return await engram.store.jobs!.list({ queue: EXTRACTION_QUEUE });
  } finally {
    await close();
  }
}

describe('a script that never calls close() exits once its own work is done', () => {
  it('Anthropic client, extraction by its own endpoint, which hangs: exit 0, the turn waits in the store', async () => {
    const main = await server(startAnthropicMessagesServer({ respond: FIRST_ANSWERED }));
    // The environment's key names the same server: before the wrapper chose the client's own model, this one extracted.
    const { code, stdout } = await runScript('anthropic', main, main, {
      ANTHROPIC_API_KEY: 'test-key',
      ANTHROPIC_BASE_URL: main.url,
    });
    expect(code).toBe(0);
    expect(stdout).toContain('own work done');
    const jobs = await queuedJobs();
    expect(jobs).toHaveLength(1);
    expect(['pending', 'running']).toContain(jobs[0]!.state);
    expect(JSON.stringify(jobs[0]!.payload)).toContain('Frankfurt');
  });

  it('OpenAI client with jobs already queued, extraction by the configured model, which hangs: exit 0, every job kept', async () => {
    const main = await server(startOpenAiChatCompletionsServer({ respond: FIRST_ANSWERED }));
    const hanging = await server(startAnthropicMessagesServer({ respond: { hang: true } }));
    // Three turns of earlier runs, waiting for a worker.
    {
      const { engram, close } = await openEngram({
        cwd: directory,
        env: { ENGRAM_HOME: join(directory, 'home'), ENGRAM_MODEL_PROVIDER: 'none' },
        flags: { 'store.url': join(directory, 'engram.db') },
      });
      for (const key of ['a', 'b', 'c'])
        await engram.store.jobs!.enqueue({
          queue: EXTRACTION_QUEUE,
          key: `earlier-${key}`,
          payload: { version: 1, sessionId: `earlier-${key}`, sequence: 1, messages: [], recalled: [], scopes: {} },
        });
      await close();
    }
    const { code } = await runScript('openai', main, hanging, {
      ENGRAM_MODEL_PROVIDER: 'anthropic',
      ANTHROPIC_API_KEY: 'test-key',
      ANTHROPIC_BASE_URL: hanging.url,
    });
    expect(code).toBe(0);
    expect(await queuedJobs()).toHaveLength(4);
  });
  it('the AI SDK middleware, streamText read to the end, extraction by the OpenAI endpoint of OPENAI_BASE_URL, which hangs: exit 0, the turn waits', async () => {
    const main = await server(startOpenAiChatCompletionsServer({ respond: FIRST_ANSWERED, streamChunkCharacters: 3 }));
    const { code, stdout } = await runScript('ai-sdk', main, main, {
      STREAM: '1',
      OPENAI_API_KEY: 'test-key',
      OPENAI_BASE_URL: main.url,
    });
    expect(code).toBe(0);
    // Another host than OpenAI's: the OpenAI-compatible API there, with the model the call used.
    expect(stdout).toContain(
      `"provider":"openai-compatible","model":"gpt-test","endpoint":"${new URL(main.url).origin}`,
    );
    expect((main.requests[0]!.body as { stream?: boolean }).stream).toBe(true);
    const jobs = await queuedJobs();
    expect(jobs).toHaveLength(1);
    expect(JSON.stringify(jobs[0]!.payload)).toContain('Frankfurt');
  });

  it('Anthropic messages.stream read to the end, extraction by its own endpoint, which hangs: exit 0, the turn waits', async () => {
    const main = await server(startAnthropicMessagesServer({ respond: FIRST_ANSWERED }));
    const { code, stdout } = await runScript('anthropic', main, main, {
      STREAM: '1',
      ANTHROPIC_API_KEY: 'test-key',
      ANTHROPIC_BASE_URL: main.url,
    });
    expect(code).toBe(0);
    expect(stdout).toContain('"type":"extraction-model-chosen","provider":"anthropic"');
    expect((main.requests[0]!.body as { stream?: boolean }).stream).toBe(true);
    const jobs = await queuedJobs();
    expect(jobs).toHaveLength(1);
    expect(JSON.stringify(jobs[0]!.payload)).toContain('Frankfurt');
  });
});
