import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { createOpenAI } from '@ai-sdk/openai';
import { generateText, streamText, wrapLanguageModel } from 'ai';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openEngram } from '../../../src/node/open-engram.js';
import { engramMiddleware } from '../../../src/surfaces/sdk/ai-sdk-middleware.js';
import type { WithMemoryEvent } from '../../../src/surfaces/sdk/client-memory-options.js';
import { withMemory } from '../../../src/surfaces/sdk/with-memory.js';
import { startAnthropicMessagesServer } from '../../../src/testing/anthropic-messages-server.js';
import type { LanguageModelServer } from '../../../src/testing/loopback-model-server.js';
import { startOpenAiChatCompletionsServer } from '../../../src/testing/openai-chat-completions-server.js';
import { startOpenAiResponsesServer } from '../../../src/testing/openai-responses-server.js';
import {
  DEPLOY_FACT,
  DEPLOY_QUESTION,
  openMemoryFolder,
  type MemoryFolder,
} from '../../support/with-memory-support.js';
import { holdWriteLock, type WriteLockHolder } from '../../support/write-lock-holder.js';

// Another process holds the store's SQLite write lock while wrapped calls run. The store waits up to
// store.busyTimeoutMs for it; set far past the SDKs' own timeout here, so a memory step that waited in
// SQLite's busy handler (on the event loop) would make the SDK call time out. The calls must answer,
// with memory, and what they write must land once the lock is gone.
const BUSY_TIMEOUT_MS = '60000';
const SDK_TIMEOUT_MS = 10_000;

let folder: MemoryFolder;
let holder: WriteLockHolder | undefined;
const closers: Array<() => Promise<void>> = [];

beforeEach(async () => {
  folder = await openMemoryFolder();
  await folder.seed([DEPLOY_FACT]);
});

afterEach(async () => {
  await holder?.stop();
  holder = undefined;
  for (const close of closers.splice(0).reverse()) await close();
  await folder.close();
});

async function server<T extends LanguageModelServer>(start: () => Promise<T>): Promise<T> {
  const started = await start();
  closers.push(() => started.close());
  return started;
}

function options(busyTimeoutMs = BUSY_TIMEOUT_MS) {
  return folder.options({ env: { ...folder.env, ENGRAM_BUSY_TIMEOUT_MS: busyTimeoutMs } });
}

function types(events: readonly WithMemoryEvent[]): string[] {
  return events.map((event) => event.type);
}

async function hitCount(): Promise<number> {
  const { engram, close } = await openEngram({
    cwd: folder.directory,
    env: folder.env,
    flags: { 'store.url': folder.store },
  });
  try {
    const memory = (await engram.list()).find((entry) => entry.name === DEPLOY_FACT.name);
    return memory!.hitCount;
  } finally {
    await close();
  }
}

/** Lets timers and I/O run for a while: work that was going to land at once would have. */
async function turnsOfTheEventLoop(count: number): Promise<void> {
  for (let index = 0; index < count; index += 1) await new Promise((resolve) => setImmediate(resolve));
}

/**
 * The longest the event loop went without running a 10 ms timer while `work` ran: a memory step that
 * waited for the lock in SQLite's busy handler would hold it for the whole busy timeout.
 */
async function longestStall(work: () => Promise<void>): Promise<number> {
  let last = performance.now();
  let longest = 0;
  const ticker = setInterval(() => {
    const now = performance.now();
    longest = Math.max(longest, now - last);
    last = now;
  }, 10);
  try {
    await work();
    await turnsOfTheEventLoop(50);
    await new Promise((resolve) => setTimeout(resolve, 50));
  } finally {
    clearInterval(ticker);
  }
  return Math.max(longest, performance.now() - last);
}

/** Far below the busy timeout (a wait in SQLite's busy handler), far above a loaded machine's pauses. */
const MAX_STALL_MS = 3_000;

describe('wrapped calls while another process holds the write lock', () => {
  it('Anthropic: create and stream answer with memory while the lock is held; hits and the queued turns land once it is free', async () => {
    const anthropic = await server(() => startAnthropicMessagesServer());
    holder = await holdWriteLock(folder.store);
    const client = withMemory(
      new Anthropic({ apiKey: 'test-key', baseURL: anthropic.url, maxRetries: 0, timeout: SDK_TIMEOUT_MS }),
      options(),
    );
    closers.push(() => client.memory.close());

    // The first call opens the store under the held lock too.
    for (let turn = 0; turn < 3; turn += 1) {
      const message = await client.messages.create({
        model: 'claude-test',
        max_tokens: 50,
        messages: [{ role: 'user', content: `${DEPLOY_QUESTION} (turn ${turn})` }],
      });
      expect(message.content[0]).toEqual(expect.objectContaining({ type: 'text' }));
    }
    const stream = client.messages.stream({
      model: 'claude-test',
      max_tokens: 50,
      messages: [{ role: 'user', content: 'Remember that the release train leaves on Tuesdays.' }],
    });
    expect((await stream.finalMessage()).content[0]).toEqual(expect.objectContaining({ type: 'text' }));
    for (const request of anthropic.requests.slice(0, 3))
      expect(JSON.stringify((request.body as { system?: unknown }).system)).toContain('Frankfurt');

    await turnsOfTheEventLoop(50);
    expect(await folder.jobs()).toEqual([]);
    expect(await hitCount()).toBe(0);

    await holder.release();
    await client.memory.flush();
    expect(types(folder.events)).not.toContain('hits-failed');
    expect(types(folder.events)).not.toContain('extraction-failed');
    expect(await hitCount()).toBe(3);
    const jobs = await folder.jobs();
    expect(jobs.length).toBeGreaterThanOrEqual(4);
    expect(jobs.every((job) => job.state === 'done')).toBe(true);
    expect(await folder.contents()).toContain('The release train leaves on Tuesdays.');
  });

  it('OpenAI: chat completions (plain and streamed) and responses answer with memory while the lock is held', async () => {
    const chat = await server(() => startOpenAiChatCompletionsServer({ streamChunkCharacters: 4 }));
    const responses = await server(() => startOpenAiResponsesServer({ streamChunkCharacters: 4 }));
    holder = await holdWriteLock(folder.store);
    const clientOptions = { apiKey: 'test-key', maxRetries: 0, timeout: SDK_TIMEOUT_MS };
    const chatClient = withMemory(new OpenAI({ ...clientOptions, baseURL: chat.url }), options());
    const responsesClient = withMemory(new OpenAI({ ...clientOptions, baseURL: responses.url }), options());
    closers.push(
      () => chatClient.memory.close(),
      () => responsesClient.memory.close(),
    );

    const completion = await chatClient.chat.completions.create({
      model: 'gpt-test',
      messages: [{ role: 'user', content: DEPLOY_QUESTION }],
    });
    expect(completion.choices[0]!.message.content).toBeTruthy();
    const streamed = await chatClient.chat.completions.create({
      model: 'gpt-test',
      stream: true,
      messages: [{ role: 'user', content: `${DEPLOY_QUESTION} Again, please.` }],
    });
    let text = '';
    for await (const chunk of streamed) text += chunk.choices[0]?.delta?.content ?? '';
    expect(text).not.toBe('');
    const response = await responsesClient.responses.create({ model: 'gpt-test', input: DEPLOY_QUESTION });
    expect(response.output_text).toBeTruthy();
    for (const request of [...chat.requests, ...responses.requests])
      expect(JSON.stringify(request.body)).toContain('Frankfurt');

    await holder.release();
    await chatClient.memory.flush();
    await responsesClient.memory.flush();
    expect(types(folder.events)).not.toContain('extraction-failed');
    expect((await folder.jobs()).length).toBeGreaterThanOrEqual(3);
  });

  it('the AI SDK middleware: generateText answers with memory while the lock is held, and its turn is queued after', async () => {
    const chat = await server(() => startOpenAiChatCompletionsServer());
    holder = await holdWriteLock(folder.store);
    const middleware = engramMiddleware(options());
    closers.push(() => middleware.memory.close());
    const provider = createOpenAI({ apiKey: 'test-key', baseURL: chat.url });
    const model = wrapLanguageModel({ model: provider.chat('gpt-test'), middleware });
    const { text } = await generateText({ model, prompt: DEPLOY_QUESTION, maxRetries: 0, timeout: SDK_TIMEOUT_MS });
    expect(text).not.toBe('');
    expect(JSON.stringify(chat.requests[0]!.body)).toContain('Frankfurt');
    await holder.release();
    await middleware.memory.flush();
    expect(await folder.jobs()).toHaveLength(1);
  });

  it('a lock held past store.busyTimeoutMs: every call still answers, and the memory writes are dropped with events saying why', async () => {
    const anthropic = await server(() => startAnthropicMessagesServer());
    holder = await holdWriteLock(folder.store);
    const client = withMemory(
      new Anthropic({ apiKey: 'test-key', baseURL: anthropic.url, maxRetries: 0, timeout: SDK_TIMEOUT_MS }),
      options('300'),
    );
    closers.push(() => client.memory.close());
    const first = [{ role: 'user' as const, content: DEPLOY_QUESTION }];
    await client.messages.create({ model: 'claude-test', max_tokens: 50, messages: first });
    await client.memory.flush();
    const failures = folder.events.filter(
      (event): event is Extract<WithMemoryEvent, { error: unknown }> =>
        (event.type === 'hits-failed' || event.type === 'extraction-failed') && 'error' in event,
    );
    expect(failures.map((event) => event.type).sort()).toEqual(['extraction-failed', 'hits-failed']);
    for (const event of failures) expect(event.error.message).toMatch(/write lock/);

    // Nothing is lost for good: once the lock is free, the next call of the conversation queues both turns.
    await holder.release();
    const answer = { role: 'assistant' as const, content: 'In Frankfurt.' };
    await client.messages.create({
      model: 'claude-test',
      max_tokens: 50,
      messages: [...first, answer, { role: 'user', content: 'Thanks.' }],
    });
    await client.memory.flush();
    const jobs = await folder.jobs();
    expect(jobs).toHaveLength(1);
    expect(JSON.stringify(jobs[0]!.payload)).toContain(DEPLOY_QUESTION);
  });
  it('every other wrapped path (beta.messages create and stream, a derived client, the AI SDK streamText) answers and never holds the event loop for the lock', async () => {
    const anthropic = await server(() => startAnthropicMessagesServer());
    const chat = await server(() => startOpenAiChatCompletionsServer({ streamChunkCharacters: 4 }));
    holder = await holdWriteLock(folder.store);
    const client = withMemory(
      new Anthropic({ apiKey: 'test-key', baseURL: anthropic.url, maxRetries: 0, timeout: SDK_TIMEOUT_MS }),
      options(),
    );
    const middleware = engramMiddleware(options());
    closers.push(
      () => client.memory.close(),
      () => middleware.memory.close(),
    );
    const ask = (turn: string) => [{ role: 'user' as const, content: `${DEPLOY_QUESTION} (${turn})` }];

    const stall = await longestStall(async () => {
      const beta = await client.beta.messages.create({ model: 'claude-test', max_tokens: 50, messages: ask('beta') });
      expect(beta.content[0]).toEqual(expect.objectContaining({ type: 'text' }));
      const betaStream = client.beta.messages.stream({
        model: 'claude-test',
        max_tokens: 50,
        messages: ask('beta stream'),
      });
      expect((await betaStream.finalMessage()).content[0]).toEqual(expect.objectContaining({ type: 'text' }));
      const derived = client.withOptions({ timeout: SDK_TIMEOUT_MS });
      const raw = await derived.messages.create({
        model: 'claude-test',
        max_tokens: 50,
        messages: ask('derived'),
        stream: true,
      });
      for await (const event of raw) void event;
      const provider = createOpenAI({ apiKey: 'test-key', baseURL: chat.url });
      const model = wrapLanguageModel({ model: provider.chat('gpt-test'), middleware });
      const streamed = streamText({
        model,
        prompt: `${DEPLOY_QUESTION} Remember that the release train leaves on Tuesdays.`,
        maxRetries: 0,
        timeout: SDK_TIMEOUT_MS,
      });
      let text = '';
      for await (const delta of streamed.textStream) text += delta;
      expect(text).not.toBe('');
    });
    expect(stall).toBeLessThan(MAX_STALL_MS);
    for (const request of anthropic.requests)
      expect(JSON.stringify((request.body as { system?: unknown }).system)).toContain('Frankfurt');
    expect(JSON.stringify(chat.requests[0]!.body)).toContain('Frankfurt');
    expect(await folder.jobs()).toEqual([]);

    await holder.release();
    await client.memory.flush();
    await middleware.memory.flush();
    expect(types(folder.events)).not.toContain('hits-failed');
    expect(types(folder.events)).not.toContain('extraction-failed');
    expect(await hitCount()).toBe(4);
    expect((await folder.jobs()).length).toBeGreaterThanOrEqual(4);
    expect(await folder.contents()).toContain('The release train leaves on Tuesdays.');
  });
});
