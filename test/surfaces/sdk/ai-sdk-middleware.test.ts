import { writeFile } from 'node:fs/promises';
import { createOpenAI } from '@ai-sdk/openai';
import { generateText, jsonSchema, stepCountIs, streamText, tool, wrapLanguageModel } from 'ai';
import { describe, expect, it } from 'vitest';
import { EngramError } from '../../../src/kernel/errors.js';
import { engramMiddleware } from '../../../src/surfaces/sdk/ai-sdk-middleware.js';
import type { LanguageModelServer } from '../../../src/testing/loopback-model-server.js';
import { DEPLOY_QUESTION, useMemoryWorld } from '../../support/with-memory-support.js';

// The inner model is a real AI SDK provider (@ai-sdk/openai) over loopback: its Chat Completions model
// against the loopback Chat Completions server, its Responses model against the Responses server.
// What is asserted is what the server received and what the store holds after.
const world = useMemoryWorld('chat', 'responses');

function middleware(options = world.folder.options()) {
  return world.keep(engramMiddleware(options));
}

/** The provider's Chat Completions model, wrapped with memory. */
function chatModel(made = middleware()) {
  const provider = createOpenAI({ apiKey: 'test-key', baseURL: world.chat.url });
  return wrapLanguageModel({ model: provider.chat('gpt-test'), middleware: made });
}

type ChatMessage = { role: string; content: unknown; tool_calls?: unknown; tool_call_id?: string };

function messages(index: number): ChatMessage[] {
  return (world.chat.requests[index]!.body as { messages: ChatMessage[] }).messages;
}

function systemOf(index: number): string {
  const [first] = messages(index);
  return first?.role === 'system' ? String(first.content) : '';
}

const types = () => world.folder.events.map((event) => event.type);

describe('engramMiddleware with a real provider over loopback', () => {
  it('generateText: the request carries the fact, the static part first and the block after the user system prompt', async () => {
    const { text } = await generateText({ model: chatModel(), system: 'You are terse.', prompt: DEPLOY_QUESTION });
    expect(text).toBe('OK');
    const system = systemOf(0);
    expect(system.startsWith('# Long-term memory')).toBe(true);
    expect(system).toContain('Frankfurt');
    expect(system.indexOf('You are terse.')).toBeGreaterThan(0);
    expect(system.lastIndexOf('<memory_context>')).toBeGreaterThan(system.indexOf('You are terse.'));
    expect(messages(0).slice(1)).toEqual([{ role: 'user', content: DEPLOY_QUESTION }]);
    expect(types()).toContain('memory-injected');
  });

  it('streamText: deltas arrive as the server sent them, and a "remember that …" turn is in the store after flush()', async () => {
    world.chat.script({ message: { text: 'Noted: staging runs Postgres 15.' } });
    const made = middleware();
    const result = streamText({
      model: chatModel(made),
      prompt: 'Remember that the staging database runs Postgres 15.',
    });
    const deltas: string[] = [];
    for await (const delta of result.textStream) deltas.push(delta);
    expect(deltas.length).toBeGreaterThan(5);
    expect(deltas.join('')).toBe('Noted: staging runs Postgres 15.');
    expect((world.chat.requests[0]!.body as { stream?: boolean }).stream).toBe(true);
    expect(systemOf(0).startsWith('# Long-term memory')).toBe(true);
    await made.memory.flush();
    expect(await world.folder.contents()).toContain('The staging database runs Postgres 15.');
  });

  it('keeps the request bytes before <memory_context> identical from turn to turn', async () => {
    const model = chatModel();
    await generateText({ model, system: 'You are the ops assistant.', prompt: DEPLOY_QUESTION });
    await generateText({ model, system: 'You are the ops assistant.', prompt: 'Which API region is it?' });
    const prefix = (index: number) => {
      const raw = world.chat.requests[index]!.rawBody;
      return raw.slice(0, raw.lastIndexOf('<memory_context>'));
    };
    expect(prefix(0).length).toBeGreaterThan(200);
    expect(prefix(1)).toBe(prefix(0));
    expect(world.chat.requests[1]!.rawBody).not.toBe(world.chat.requests[0]!.rawBody);
  });

  it('a tool loop runs unchanged; its turn is queued once, with the final answer and without the injected text', async () => {
    world.chat.script(
      { message: { content: [{ type: 'tool_use', id: 'call_1', name: 'weather', input: { city: 'Frankfurt' } }] } },
      { message: { text: 'Sunny in Frankfurt.' } },
    );
    const made = middleware();
    const { text } = await generateText({
      model: chatModel(made),
      prompt: `${DEPLOY_QUESTION} And the weather?`,
      stopWhen: stepCountIs(3),
      tools: {
        weather: tool({
          inputSchema: jsonSchema<{ city: string }>({ type: 'object', properties: { city: { type: 'string' } } }),
          execute: async ({ city }) => `sunny in ${city}`,
        }),
      },
    });
    expect(text).toBe('Sunny in Frankfurt.');
    expect(world.chat.requests).toHaveLength(2);
    const second = messages(1);
    expect(second.map((message) => message.role)).toEqual(['system', 'user', 'assistant', 'tool']);
    expect(second[3]).toEqual(expect.objectContaining({ tool_call_id: 'call_1' }));
    expect(
      (world.chat.requests[1]!.body as { tools: Array<{ function: { name: string } }> }).tools[0]!.function.name,
    ).toBe('weather');
    expect(systemOf(1)).toBe(systemOf(0));
    await made.memory.flush();
    expect(types().filter((type) => type === 'extraction-deferred')).toHaveLength(1);
    expect(types().filter((type) => type === 'extraction-queued')).toHaveLength(1);
    const jobs = await world.folder.jobs();
    expect(jobs).toHaveLength(1);
    const payload = JSON.stringify((jobs[0]!.payload as { messages: unknown }).messages);
    expect(payload).toContain('call_1');
    expect(payload).not.toContain('memory_context');
  });

  it('the Responses model: generateText and streamText carry the memory as the provider sends a system prompt', async () => {
    const made = middleware();
    const provider = createOpenAI({ apiKey: 'test-key', baseURL: world.responses.url });
    const model = wrapLanguageModel({ model: provider.responses('gpt-test'), middleware: made });
    const { text } = await generateText({ model, prompt: DEPLOY_QUESTION });
    expect(text).toBe('OK');
    world.responses.script({ message: { text: 'Frankfurt, eu-central-1.' } });
    const streamed = streamText({ model, prompt: DEPLOY_QUESTION });
    let joined = '';
    for await (const delta of streamed.textStream) joined += delta;
    expect(joined).toBe('Frankfurt, eu-central-1.');
    for (const index of [0, 1]) {
      const input = (world.responses.requests[index]!.body as { input: Array<{ role: string; content: unknown }> })
        .input;
      expect(['system', 'developer']).toContain(input[0]!.role);
      expect(JSON.stringify(input[0]!.content)).toContain('Frankfurt');
    }
    await made.memory.flush();
    expect(types().filter((type) => type === 'extraction-queued')).toHaveLength(2);
  });

  it('a stream cut by an error event: the text so far reaches the caller, and the broken turn is not queued', async () => {
    world.chat.script({
      message: { text: 'Frankfurt is where it deploys.' },
      streamBreak: { afterTextDeltas: 2, then: { error: { kind: 'server' } } },
    });
    const made = middleware();
    const errors: unknown[] = [];
    const result = streamText({
      model: chatModel(made),
      prompt: DEPLOY_QUESTION,
      onError: ({ error }) => {
        errors.push(error);
      },
    });
    let joined = '';
    for await (const delta of result.textStream) joined += delta;
    expect(joined).toBe('Frankfurt is where it deploys.'.slice(0, 8));
    expect(errors).toHaveLength(1);
    await made.memory.flush();
    expect(types()).not.toContain('extraction-queued');
    expect(await world.folder.jobs()).toHaveLength(0);
  });

  it('fails open: a corrupt store leaves the request as it was and says why, once', async () => {
    await writeFile(world.folder.store, 'not a database'.repeat(100));
    const model = chatModel();
    const { text } = await generateText({ model, prompt: DEPLOY_QUESTION });
    expect(text).toBe('OK');
    const streamed = streamText({ model, prompt: DEPLOY_QUESTION });
    expect(await streamed.text).toBe('OK');
    expect(messages(0)).toEqual([{ role: 'user', content: DEPLOY_QUESTION }]);
    expect(messages(1)).toEqual([{ role: 'user', content: DEPLOY_QUESTION }]);
    expect(types().filter((type) => type === 'memory-unavailable')).toHaveLength(1);
  });

  it('fails open: an unreachable Postgres store, the call answers', async () => {
    const made = middleware(
      world.folder.options({ store: 'postgres://engram:engram@127.0.0.1:9/engram', recallTimeoutMs: 5_000 }),
    );
    const { text } = await generateText({ model: chatModel(made), prompt: DEPLOY_QUESTION });
    expect(text).toBe('OK');
    expect(messages(0)).toEqual([{ role: 'user', content: DEPLOY_QUESTION }]);
    expect(types()).toContain('memory-unavailable');
  });

  it('a 2 MB prompt reaches the model as sent, with the memory in front', async () => {
    const huge = `${DEPLOY_QUESTION} ${'y'.repeat(2 * 1024 * 1024)}`;
    const { text } = await generateText({ model: chatModel(), prompt: huge });
    expect(text).toBe('OK');
    expect(messages(0)[1]).toEqual({ role: 'user', content: huge });
    expect(systemOf(0).startsWith('# Long-term memory')).toBe(true);
  });

  it('refuses bad options when it is made', () => {
    expect(() => engramMiddleware({ maxTokens: -5 })).toThrow(EngramError);
    expect(() => engramMiddleware({ scopes: ['nope:'] })).toThrow(EngramError);
  });
});
