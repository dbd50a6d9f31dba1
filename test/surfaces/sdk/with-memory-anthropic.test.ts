import Anthropic from '@anthropic-ai/sdk';
import { describe, expect, it } from 'vitest';
import { withMemory } from '../../../src/surfaces/sdk/with-memory.js';
import type { LanguageModelServer } from '../../../src/testing/loopback-model-server.js';
import { DEPLOY_QUESTION, readTextStream, useMemoryWorld } from '../../support/with-memory-support.js';

const MODEL = 'claude-test';
const WEATHER_TOOL = {
  name: 'get_weather',
  description: 'Weather of a city',
  input_schema: { type: 'object' as const, properties: { city: { type: 'string' } }, required: ['city'] },
};

const world = useMemoryWorld('anthropic');

function anthropic(): Anthropic {
  return new Anthropic({ apiKey: 'test-key', baseURL: world.anthropic.url, maxRetries: 0 });
}

function wrapped(options = world.folder.options()) {
  return world.keep(withMemory(anthropic(), options));
}

function systemText(index: number): string {
  const system = (world.anthropic.requests[index]!.body as { system?: unknown }).system;
  if (system === undefined || typeof system === 'string') return system ?? '';
  return (system as Array<{ text: string }>).map((block) => block.text).join('\n\n');
}

describe('withMemory over the Anthropic client', () => {
  it('puts a remembered fact in the request of messages.create, the user prompt between the static part and the block', async () => {
    const client = wrapped();
    const message = await client.messages.create({
      model: MODEL,
      max_tokens: 100,
      system: 'You are terse.',
      messages: [{ role: 'user', content: DEPLOY_QUESTION }],
    });
    expect(message.content).toEqual([expect.objectContaining({ type: 'text', text: 'OK' })]);
    const system = systemText(0);
    expect(system).toContain('Frankfurt');
    expect(system.indexOf('# Long-term memory')).toBe(0);
    expect(system.indexOf('You are terse.')).toBeGreaterThan(0);
    expect(system.lastIndexOf('<memory_context>')).toBeGreaterThan(system.indexOf('You are terse.'));
    expect((world.anthropic.requests[0]!.body as { messages: unknown }).messages).toEqual([
      { role: 'user', content: DEPLOY_QUESTION },
    ]);
    expect(world.folder.events.map((event) => event.type)).toContain('memory-injected');
  });

  it('streams with stream: true delta by delta as the unwrapped client does, with the fact in the request', async () => {
    const script = { message: { text: 'Frankfurt, in eu-central-1, as recorded.' } };
    world.anthropic.script(script, script);
    const reference = await anthropic().messages.create({
      model: MODEL,
      max_tokens: 100,
      stream: true,
      messages: [{ role: 'user', content: DEPLOY_QUESTION }],
    });
    const expected: string[] = [];
    for await (const event of reference) expected.push(event.type);

    const client = wrapped();
    const stream = await client.messages.create({
      model: MODEL,
      max_tokens: 100,
      stream: true,
      messages: [{ role: 'user', content: DEPLOY_QUESTION }],
    });
    const seen: string[] = [];
    const deltas: string[] = [];
    for await (const event of stream) {
      seen.push(event.type);
      if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') deltas.push(event.delta.text);
    }
    expect(seen).toEqual(expected);
    expect(deltas.length).toBeGreaterThan(5);
    expect(deltas.join('')).toBe('Frankfurt, in eu-central-1, as recorded.');
    expect(systemText(0)).not.toContain('Frankfurt');
    expect(systemText(1)).toContain('Frankfurt');
  });

  it('gives messages.stream memory through the wrapped create, with its events and final message unchanged', async () => {
    const client = wrapped();
    world.anthropic.script({ message: { text: 'It deploys to Frankfurt.' } });
    const { texts, final } = await readTextStream(
      client.messages.stream({ model: MODEL, max_tokens: 100, messages: [{ role: 'user', content: DEPLOY_QUESTION }] }),
    );
    expect(final.content).toEqual([expect.objectContaining({ type: 'text', text: 'It deploys to Frankfurt.' })]);
    expect(texts.length).toBeGreaterThan(3);
    expect(systemText(0)).toContain('Frankfurt');
    expect((world.anthropic.requests[0]!.body as { stream?: boolean }).stream).toBe(true);
  });

  it('keeps the bytes before <memory_context> identical from turn to turn, the user cache_control blocks untouched', async () => {
    const client = wrapped();
    const system = [
      { type: 'text' as const, text: 'You are the ops assistant.', cache_control: { type: 'ephemeral' as const } },
    ];
    const messages: Anthropic.MessageParam[] = [{ role: 'user', content: DEPLOY_QUESTION }];
    const first = await client.messages.create({
      model: MODEL,
      max_tokens: 100,
      system,
      messages,
      tools: [WEATHER_TOOL],
    });
    messages.push({ role: 'assistant', content: first.content }, { role: 'user', content: 'And the API region name?' });
    await client.messages.create({ model: MODEL, max_tokens: 100, system, messages, tools: [WEATHER_TOOL] });
    const prefix = (index: number) => {
      const raw = world.anthropic.requests[index]!.rawBody;
      return raw.slice(0, raw.lastIndexOf('<memory_context>'));
    };
    const [one, two] = [0, 1].map(
      (index) => world.anthropic.requests[index]!.body as { system: unknown[]; tools: unknown },
    );
    expect(one!.system).toHaveLength(3);
    expect(one!.system[1]).toEqual(system[0]);
    expect(two!.system[1]).toEqual(system[0]);
    expect(one!.tools).toEqual([WEATHER_TOOL]);
    const systemPrefix = (index: number) =>
      JSON.stringify((world.anthropic.requests[index]!.body as { system: unknown[] }).system.slice(0, 2));
    expect(systemPrefix(1)).toBe(systemPrefix(0));
    expect(prefix(0)).toContain('"system":[');
    expect(prefix(1)).toBe(prefix(0));
    expect(world.anthropic.requests[1]!.rawBody).not.toBe(world.anthropic.requests[0]!.rawBody);
    expect(world.anthropic.requests[0]!.summary!.cachedSystemBlocks).toEqual(['You are the ops assistant.']);
    expect(JSON.stringify(one!.system[2])).toContain('<memory_context>');
    expect(JSON.stringify(two!.system[2])).toContain('<memory_context>');
  });

  it('writes a "remember that …" turn to the store by flush()', async () => {
    const client = wrapped();
    await client.messages.create({
      model: MODEL,
      max_tokens: 100,
      messages: [{ role: 'user', content: 'Remember that the staging database runs Postgres 15.' }],
    });
    await client.memory.flush();
    expect(await world.folder.contents()).toContain('The staging database runs Postgres 15.');
    expect(world.folder.events.map((event) => event.type)).toContain('extraction-queued');
  });

  it('leaves a tool-use loop unchanged and queues it once, with the final answer, without the injected text', async () => {
    const client = wrapped();
    world.anthropic.script(
      {
        message: { content: [{ type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Frankfurt' } }] },
      },
      { message: { text: 'It is sunny in Frankfurt, where the API deploys.' } },
    );
    const messages: Anthropic.MessageParam[] = [{ role: 'user', content: `${DEPLOY_QUESTION} And the weather there?` }];
    const first = await client.messages.create({ model: MODEL, max_tokens: 100, messages, tools: [WEATHER_TOOL] });
    expect(first.stop_reason).toBe('tool_use');
    messages.push({ role: 'assistant', content: first.content });
    messages.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'sunny' }] });
    const second = await client.messages.create({ model: MODEL, max_tokens: 100, messages, tools: [WEATHER_TOOL] });
    expect(second.content[0]).toEqual(
      expect.objectContaining({ text: 'It is sunny in Frankfurt, where the API deploys.' }),
    );
    await client.memory.flush();
    const types = world.folder.events.map((event) => event.type);
    expect(types.filter((type) => type === 'extraction-deferred')).toHaveLength(1);
    expect(types.filter((type) => type === 'extraction-queued')).toHaveLength(1);
    // The tool round recalls for the user's question, so both requests carry the same memory.
    expect(systemText(1)).toBe(systemText(0));
    expect((world.anthropic.requests[1]!.body as { messages: unknown }).messages).toEqual(
      JSON.parse(JSON.stringify(messages)),
    );
    const jobs = await world.folder.jobs();
    expect(jobs).toHaveLength(1);
    const payload = JSON.stringify((jobs[0]!.payload as { messages: unknown }).messages);
    expect(payload).not.toContain('memory_context');
    expect(payload).not.toContain('eu-central-1');
    expect(payload).toContain('toolu_1');
    expect((jobs[0]!.payload as { recalled: Array<{ content?: string }> }).recalled[0]!.content).toContain('Frankfurt');
  });

  it('queues only the new messages of each turn of a chat loop', async () => {
    const client = wrapped();
    const messages: Anthropic.MessageParam[] = [{ role: 'user', content: 'Hello there.' }];
    for (const next of ['How are you?', 'Bye.']) {
      const answer = await client.messages.create({ model: MODEL, max_tokens: 100, messages });
      messages.push({ role: 'assistant', content: answer.content }, { role: 'user', content: next });
    }
    await client.messages.create({ model: MODEL, max_tokens: 100, messages });
    await client.memory.flush();
    const queued = world.folder.events.flatMap((event) => (event.type === 'extraction-queued' ? [event.messages] : []));
    expect(queued).toEqual([2, 2, 2]);
  });

  it('recall: false sends the request unchanged; extract: false queues nothing', async () => {
    const client = wrapped(world.folder.options({ recall: false, extract: false }));
    await client.messages.create({
      model: MODEL,
      max_tokens: 100,
      messages: [{ role: 'user', content: DEPLOY_QUESTION }],
    });
    await client.memory.flush();
    expect((world.anthropic.requests[0]!.body as { system?: unknown }).system).toBeUndefined();
    expect(await world.folder.jobs()).toHaveLength(0);
  });

  it('passes withResponse() and the API errors through as the SDK gives them', async () => {
    const client = wrapped();
    const { data, response } = await client.messages
      .create({ model: MODEL, max_tokens: 100, messages: [{ role: 'user', content: DEPLOY_QUESTION }] })
      .withResponse();
    expect(response.status).toBe(200);
    expect(data.content[0]).toEqual(expect.objectContaining({ text: 'OK' }));
    world.anthropic.script({ error: { kind: 'invalid_request', message: 'max_tokens: too large' } });
    const failed = client.messages.create({
      model: MODEL,
      max_tokens: 100,
      messages: [{ role: 'user', content: 'x' }],
    });
    await expect(failed).rejects.toBeInstanceOf(Anthropic.BadRequestError);
  });
});
