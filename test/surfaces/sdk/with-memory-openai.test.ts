import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { withMemory } from '../../../src/surfaces/sdk/with-memory.js';
import type { LanguageModelServer } from '../../../src/testing/loopback-model-server.js';
import { DEPLOY_QUESTION, useMemoryWorld } from '../../support/with-memory-support.js';

const MODEL = 'gpt-test';
const WEATHER_TOOL = {
  type: 'function' as const,
  function: {
    name: 'get_weather',
    description: 'Weather of a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};

const world = useMemoryWorld('chat', 'responses');

function openai(server: LanguageModelServer): OpenAI {
  return new OpenAI({ apiKey: 'test-key', baseURL: server.url, maxRetries: 0 });
}

function wrapped(server: LanguageModelServer, options = world.folder.options()) {
  return world.keep(withMemory(openai(server), options));
}

type ChatBody = { messages: Array<{ role: string; content: unknown }> };

describe('withMemory over the OpenAI client', () => {
  it('chat.completions.create: the fact is in the system message, the user system text between static part and block', async () => {
    const client = wrapped(world.chat);
    const completion = await client.chat.completions.create({
      model: MODEL,
      messages: [
        { role: 'system', content: 'You are terse.' },
        { role: 'user', content: DEPLOY_QUESTION },
      ],
    });
    expect(completion.choices[0]!.message.content).toBe('OK');
    const body = world.chat.requests[0]!.body as ChatBody;
    expect(body.messages).toHaveLength(2);
    const system = String(body.messages[0]!.content);
    expect(system.startsWith('# Long-term memory')).toBe(true);
    expect(system).toContain('Frankfurt');
    expect(system.lastIndexOf('<memory_context>')).toBeGreaterThan(system.indexOf('You are terse.'));
    expect(body.messages[1]).toEqual({ role: 'user', content: DEPLOY_QUESTION });
  });

  it('adds a system message when the request has none', async () => {
    const client = wrapped(world.chat);
    await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: DEPLOY_QUESTION }] });
    const body = world.chat.requests[0]!.body as ChatBody;
    expect(body.messages.map((message) => message.role)).toEqual(['system', 'user']);
    expect(String(body.messages[0]!.content)).toContain('Frankfurt');
  });

  it('streams chunk by chunk as the unwrapped client does, with the fact in the request', async () => {
    const script = { message: { text: 'Frankfurt, in eu-central-1, as recorded.' } };
    world.chat.script(script, script);
    const reference = await openai(world.chat).chat.completions.create({
      model: MODEL,
      stream: true,
      messages: [{ role: 'user', content: DEPLOY_QUESTION }],
    });
    let expected = 0;
    for await (const _chunk of reference) expected += 1;
    const client = wrapped(world.chat);
    const stream = await client.chat.completions.create({
      model: MODEL,
      stream: true,
      messages: [{ role: 'user', content: DEPLOY_QUESTION }],
    });
    const deltas: string[] = [];
    let chunks = 0;
    for await (const chunk of stream) {
      chunks += 1;
      const text = chunk.choices[0]?.delta.content;
      if (text) deltas.push(text);
    }
    expect(chunks).toBe(expected);
    expect(deltas.length).toBeGreaterThan(5);
    expect(deltas.join('')).toBe('Frankfurt, in eu-central-1, as recorded.');
    expect(JSON.stringify(world.chat.requests[1]!.body)).toContain('Frankfurt');
    await client.memory.flush();
    expect(world.folder.events.map((event) => event.type)).toContain('extraction-queued');
  });

  it('keeps the bytes before <memory_context> identical from turn to turn', async () => {
    const client = wrapped(world.chat);
    const messages: OpenAI.ChatCompletionMessageParam[] = [
      { role: 'system', content: 'You are the ops assistant.' },
      { role: 'user', content: DEPLOY_QUESTION },
    ];
    const first = await client.chat.completions.create({ model: MODEL, messages, tools: [WEATHER_TOOL] });
    messages.push(first.choices[0]!.message, { role: 'user', content: 'Which API region again?' });
    await client.chat.completions.create({ model: MODEL, messages, tools: [WEATHER_TOOL] });
    const prefix = (index: number) => {
      const raw = world.chat.requests[index]!.rawBody;
      return raw.slice(0, raw.lastIndexOf('<memory_context>'));
    };
    expect(prefix(0).length).toBeGreaterThan(200);
    expect(prefix(1)).toBe(prefix(0));
    expect((world.chat.requests[1]!.body as { tools: unknown }).tools).toEqual([WEATHER_TOOL]);
  });

  it('a tool-call loop works unchanged and is queued once, with its final answer', async () => {
    const client = wrapped(world.chat);
    world.chat.script(
      { message: { content: [{ type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Frankfurt' } }] } },
      { message: { text: 'Sunny in Frankfurt.' } },
    );
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: `${DEPLOY_QUESTION} Weather?` }];
    const first = await client.chat.completions.create({ model: MODEL, messages, tools: [WEATHER_TOOL] });
    expect(first.choices[0]!.finish_reason).toBe('tool_calls');
    messages.push(first.choices[0]!.message, { role: 'tool', tool_call_id: 'call_1', content: 'sunny' });
    const second = await client.chat.completions.create({ model: MODEL, messages, tools: [WEATHER_TOOL] });
    expect(second.choices[0]!.message.content).toBe('Sunny in Frankfurt.');
    await client.memory.flush();
    const types = world.folder.events.map((event) => event.type);
    expect(types.filter((type) => type === 'extraction-deferred')).toHaveLength(1);
    expect(types.filter((type) => type === 'extraction-queued')).toHaveLength(1);
    const sent = (world.chat.requests[1]!.body as ChatBody).messages;
    expect(sent.slice(1)).toEqual(JSON.parse(JSON.stringify(messages)));
  });

  it('writes a "remember that …" turn to the store by flush()', async () => {
    const client = wrapped(world.chat);
    await client.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: 'Remember that the staging database runs Postgres 15.' }],
    });
    await client.memory.flush();
    expect(await world.folder.contents()).toContain('The staging database runs Postgres 15.');
  });

  it('responses.create: the fact is in the instructions, after the static part and the user instructions', async () => {
    const client = wrapped(world.responses);
    const response = await client.responses.create({
      model: MODEL,
      instructions: 'You are terse.',
      input: DEPLOY_QUESTION,
    });
    expect(response.output_text).toBe('OK');
    const body = world.responses.requests[0]!.body as { instructions: string; input: string };
    expect(body.input).toBe(DEPLOY_QUESTION);
    expect(body.instructions.startsWith('# Long-term memory')).toBe(true);
    expect(body.instructions).toContain('Frankfurt');
    expect(body.instructions.lastIndexOf('<memory_context>')).toBeGreaterThan(
      body.instructions.indexOf('You are terse.'),
    );
  });

  it('responses.create streamed: events arrive one by one, and the turn is queued after the last', async () => {
    world.responses.script({ message: { text: 'Remembered: staging runs Postgres 15.' } });
    const client = wrapped(world.responses);
    const stream = await client.responses.create({
      model: MODEL,
      stream: true,
      input: [{ role: 'user', content: 'Remember that the staging database runs Postgres 15.' }],
    });
    const types: string[] = [];
    for await (const event of stream) types.push(event.type);
    expect(types[0]).toBe('response.created');
    expect(types.at(-1)).toBe('response.completed');
    expect(types.filter((type) => type === 'response.output_text.delta').length).toBeGreaterThan(5);
    await client.memory.flush();
    expect(await world.folder.contents()).toContain('The staging database runs Postgres 15.');
  });
});

describe('withMemory over the OpenAI helpers', () => {
  it('chat.completions.stream() goes through the wrapped create: the fact reaches the request', async () => {
    const client = wrapped(world.chat);
    world.chat.script({ message: { text: 'Frankfurt it is.' } });
    const stream = client.chat.completions.stream({
      model: MODEL,
      messages: [{ role: 'user', content: DEPLOY_QUESTION }],
    });
    const final = await stream.finalChatCompletion();
    expect(final.choices[0]!.message.content).toBe('Frankfurt it is.');
    expect(JSON.stringify(world.chat.requests[0]!.body)).toContain('eu-central-1');
    await client.memory.flush();
    expect(world.folder.events.map((event) => event.type)).toContain('extraction-queued');
  });
});

describe('withMemory over chat.completions.parse()', () => {
  it('parses through the wrapped create, with memory in the request and the turn queued', async () => {
    const client = wrapped(world.chat);
    world.chat.script({ message: { text: '{"region":"eu-central-1"}' } });
    const parsed = await client.chat.completions.parse({
      model: MODEL,
      messages: [{ role: 'user', content: DEPLOY_QUESTION }],
      response_format: {
        type: 'json_schema',
        json_schema: {
          name: 'region',
          strict: true,
          schema: { type: 'object', properties: { region: { type: 'string' } }, required: ['region'] },
        },
      },
    });
    expect(parsed.choices[0]!.message.content).toBe('{"region":"eu-central-1"}');
    expect(JSON.stringify(world.chat.requests[0]!.body)).toContain('Frankfurt');
    await client.memory.flush();
    expect(world.folder.events.map((event) => event.type)).toContain('extraction-queued');
  });
});
