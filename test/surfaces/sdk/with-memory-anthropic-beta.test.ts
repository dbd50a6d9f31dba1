import { writeFile } from 'node:fs/promises';
import Anthropic from '@anthropic-ai/sdk';
import { betaTool } from '@anthropic-ai/sdk/helpers/beta/json-schema';
import { describe, expect, it } from 'vitest';
import { withMemory } from '../../../src/surfaces/sdk/with-memory.js';
import type { LanguageModelServer } from '../../../src/testing/loopback-model-server.js';
import { DEPLOY_QUESTION, readTextStream, useMemoryWorld } from '../../support/with-memory-support.js';

// client.beta.messages against the loopback Messages server (which holds message threads as the API
// does): the same memory as client.messages, and a thread's later turns read for extraction only.
const MODEL = 'claude-test';

const world = useMemoryWorld('anthropic');

function wrapped(options = world.folder.options()) {
  return world.keep(
    withMemory(new Anthropic({ apiKey: 'test-key', baseURL: world.anthropic.url, maxRetries: 0 }), options),
  );
}

function body(index: number): Record<string, unknown> {
  return world.anthropic.requests[index]!.body as Record<string, unknown>;
}

function systemText(index: number): string {
  const system = body(index).system;
  if (system === undefined || typeof system === 'string') return system ?? '';
  return (system as Array<{ text: string }>).map((block) => block.text).join('\n\n');
}

const types = () => world.folder.events.map((event) => event.type);

describe('withMemory over client.beta.messages', () => {
  it('create: the fact is in the system prompt as with messages.create, the betas header as the SDK sends it', async () => {
    const client = wrapped();
    const message = await client.beta.messages.create({
      model: MODEL,
      max_tokens: 100,
      betas: ['context-1m-2025-08-07'],
      system: 'You are terse.',
      messages: [{ role: 'user', content: DEPLOY_QUESTION }],
    });
    expect(message.content).toEqual([expect.objectContaining({ type: 'text', text: 'OK' })]);
    expect(world.anthropic.requests[0]!.headers['anthropic-beta']).toContain('context-1m-2025-08-07');
    expect(body(0).betas).toBeUndefined();
    const system = systemText(0);
    expect(system.indexOf('# Long-term memory')).toBe(0);
    expect(system.lastIndexOf('<memory_context>')).toBeGreaterThan(system.indexOf('You are terse.'));
    expect(system).toContain('Frankfurt');
  });

  it('create with stream: true streams delta by delta and queues the turn after the last event', async () => {
    const client = wrapped();
    world.anthropic.script({ message: { text: 'Noted: staging runs Postgres 15.' } });
    const stream = await client.beta.messages.create({
      model: MODEL,
      max_tokens: 100,
      stream: true,
      messages: [{ role: 'user', content: 'Remember that the staging database runs Postgres 15.' }],
    });
    const deltas: string[] = [];
    for await (const event of stream)
      if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') deltas.push(event.delta.text);
    expect(deltas.length).toBeGreaterThan(5);
    expect(deltas.join('')).toBe('Noted: staging runs Postgres 15.');
    await client.memory.flush();
    expect(await world.folder.contents()).toContain('The staging database runs Postgres 15.');
  });

  it('stream() and parse() go through the wrapped create, with their events and parsed output unchanged', async () => {
    const client = wrapped();
    world.anthropic.script(
      { message: { text: 'It deploys to Frankfurt.' } },
      { message: { text: '{"region":"eu-central-1"}' } },
    );
    const { texts, final } = await readTextStream(
      client.beta.messages.stream({
        model: MODEL,
        max_tokens: 100,
        messages: [{ role: 'user', content: DEPLOY_QUESTION }],
      }),
    );
    expect(final.content).toEqual([expect.objectContaining({ text: 'It deploys to Frankfurt.' })]);
    expect(texts.length).toBeGreaterThan(3);
    expect(systemText(0)).toContain('Frankfurt');

    const parsed = await client.beta.messages.parse({
      model: MODEL,
      max_tokens: 100,
      messages: [{ role: 'user', content: 'Which region, as JSON?' }],
      output_config: {
        format: {
          type: 'json_schema',
          schema: { type: 'object', properties: { region: { type: 'string' } }, required: ['region'] },
        },
      },
    });
    expect(parsed.parsed_output).toEqual({ region: 'eu-central-1' });
    expect(systemText(1)).toContain('<memory_context>');
    await client.memory.flush();
    expect(types().filter((type) => type === 'extraction-queued')).toHaveLength(2);
  });

  it('a thread: the first turn carries the memory, later turns send no system prompt and are queued with the whole conversation', async () => {
    const client = wrapped();
    world.anthropic.script({ message: { text: 'Frankfurt.' } }, { message: { text: 'eu-central-1.' } });
    const thread = client.beta.messages.thread({ model: MODEL, max_tokens: 100, system: 'You are terse.' });
    await thread.send({ role: 'user', content: DEPLOY_QUESTION });
    const second = await thread.send({ role: 'user', content: 'And the region code?' });
    expect(second.content[0]).toEqual(expect.objectContaining({ text: 'eu-central-1.' }));
    expect(body(0).thread).toEqual({ type: 'create' });
    expect(systemText(0)).toContain('Frankfurt');
    expect(body(1).thread).toEqual(expect.objectContaining({ type: 'continue' }));
    expect(body(1).system).toBeUndefined();
    expect(body(1).messages).toEqual([{ role: 'user', content: 'And the region code?' }]);
    await client.memory.flush();
    const queued = world.folder.events.flatMap((event) =>
      event.type === 'extraction-queued' ? [[event.sessionId, event.messages]] : [],
    );
    // One conversation: the second turn's two new messages follow the first's two, under the same name.
    expect(queued).toHaveLength(2);
    expect(queued[1]![0]).toBe(queued[0]![0]);
    expect(queued.map(([, messages]) => messages)).toEqual([2, 2]);
  });

  it('toolRunner over a thread (its default) runs the tool loop unchanged and queues it once, with the final answer', async () => {
    const client = wrapped();
    world.anthropic.script(
      {
        message: { content: [{ type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Frankfurt' } }] },
      },
      { message: { text: 'Sunny in Frankfurt, where the API deploys.' } },
    );
    const seenCities: string[] = [];
    const runner = client.beta.messages.toolRunner({
      model: MODEL,
      max_tokens: 100,
      messages: [{ role: 'user', content: `${DEPLOY_QUESTION} And the weather there?` }],
      tools: [
        betaTool({
          name: 'get_weather',
          description: 'Weather of a city',
          inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
          run: async ({ city }) => {
            seenCities.push(String(city));
            return 'sunny';
          },
        }),
      ],
    });
    const final = await runner.runUntilDone();
    expect(final.content[0]).toEqual(expect.objectContaining({ text: 'Sunny in Frankfurt, where the API deploys.' }));
    expect(seenCities).toEqual(['Frankfurt']);
    expect(world.anthropic.requests).toHaveLength(2);
    expect(systemText(0)).toContain('Frankfurt');
    expect(body(1).system).toBeUndefined();
    await client.memory.flush();
    expect(types().filter((type) => type === 'extraction-deferred')).toHaveLength(1);
    expect(types().filter((type) => type === 'extraction-queued')).toHaveLength(1);
    const jobs = await world.folder.jobs();
    expect(jobs).toHaveLength(1);
    const payload = JSON.stringify((jobs[0]!.payload as { messages: unknown }).messages);
    expect(payload).toContain(DEPLOY_QUESTION);
    expect(payload).toContain('toolu_1');
    expect(payload).not.toContain('memory_context');
  });

  it('a thread streamed: text arrives delta by delta, and each turn is queued after its last event as one conversation', async () => {
    const client = wrapped();
    world.anthropic.script(
      { message: { text: 'It deploys to Frankfurt.' } },
      { message: { text: 'Region eu-central-1.' } },
    );
    const thread = client.beta.messages.thread({ model: MODEL, max_tokens: 100 });
    const texts: string[] = [];
    const first = thread.stream({ role: 'user', content: DEPLOY_QUESTION });
    first.on('text', (text) => texts.push(text));
    await first.finalMessage();
    const second = await thread.stream({ role: 'user', content: 'And the region code?' }).finalMessage();
    expect(second.content[0]).toEqual(expect.objectContaining({ text: 'Region eu-central-1.' }));
    expect(texts.length).toBeGreaterThan(3);
    expect(texts.join('')).toBe('It deploys to Frankfurt.');
    expect(systemText(0)).toContain('Frankfurt');
    expect(body(1).system).toBeUndefined();
    await client.memory.flush();
    const queued = world.folder.events.flatMap((event) =>
      event.type === 'extraction-queued' ? [[event.sessionId, event.messages]] : [],
    );
    expect(queued).toHaveLength(2);
    expect(queued[1]![0]).toBe(queued[0]![0]);
  });

  it('a thread stream the caller aborts: the stream ends as without memory, and the broken turn is not queued', async () => {
    const client = wrapped();
    world.anthropic.script({ message: { text: 'A long answer about Frankfurt and its region.' }, chunkDelayMs: 20 });
    const thread = client.beta.messages.thread({ model: MODEL, max_tokens: 100 });
    const stream = thread.stream({ role: 'user', content: DEPLOY_QUESTION });
    const texts: string[] = [];
    stream.on('text', (text) => {
      texts.push(text);
      if (texts.length === 2) stream.abort();
    });
    await expect(stream.done()).rejects.toBeInstanceOf(Anthropic.APIUserAbortError);
    expect(texts).toHaveLength(2);
    await client.memory.flush();
    expect(types()).not.toContain('extraction-queued');
    expect(await world.folder.jobs()).toHaveLength(0);
  });

  it('a streaming toolRunner over a thread runs its loop and queues it once, with the final answer', async () => {
    const client = wrapped();
    world.anthropic.script(
      { message: { content: [{ type: 'tool_use', id: 'toolu_3', name: 'get_weather', input: { city: 'Paris' } }] } },
      { message: { text: 'Rain in Paris.' } },
    );
    const runner = client.beta.messages.toolRunner({
      model: MODEL,
      max_tokens: 100,
      stream: true,
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
      tools: [
        betaTool({
          name: 'get_weather',
          description: 'Weather of a city',
          inputSchema: { type: 'object', properties: { city: { type: 'string' } } },
          run: async () => 'rain',
        }),
      ],
    });
    const finals: string[] = [];
    for await (const stream of runner) {
      const message = await stream.finalMessage();
      finals.push(message.stop_reason ?? '');
    }
    expect(finals).toEqual(['tool_use', 'end_turn']);
    expect(body(1).system).toBeUndefined();
    await client.memory.flush();
    expect(types().filter((type) => type === 'extraction-queued')).toHaveLength(1);
    const payload = JSON.stringify(((await world.folder.jobs())[0]!.payload as { messages: unknown }).messages);
    expect(payload).toContain('Weather in Paris?');
    expect(payload).toContain('Rain in Paris.');
  });

  it('toolRunner with thread: false sends the whole history each turn, both with the same memory', async () => {
    const client = wrapped();
    world.anthropic.script(
      { message: { content: [{ type: 'tool_use', id: 'toolu_2', name: 'get_weather', input: { city: 'Berlin' } }] } },
      { message: { text: 'Cloudy.' } },
    );
    const final = await client.beta.messages
      .toolRunner({
        model: MODEL,
        max_tokens: 100,
        thread: false,
        messages: [{ role: 'user', content: `${DEPLOY_QUESTION} Weather in Berlin?` }],
        tools: [
          betaTool({
            name: 'get_weather',
            description: 'Weather of a city',
            inputSchema: { type: 'object', properties: { city: { type: 'string' } } },
            run: async () => 'cloudy',
          }),
        ],
      })
      .runUntilDone();
    expect(final.content[0]).toEqual(expect.objectContaining({ text: 'Cloudy.' }));
    expect(body(1).thread).toBeUndefined();
    expect(systemText(1)).toBe(systemText(0));
    expect(systemText(1)).toContain('Frankfurt');
  });

  it('fails open: a corrupt store leaves beta requests as they were, one memory-unavailable event', async () => {
    await writeFile(world.folder.store, 'not a database'.repeat(100));
    const client = wrapped();
    const message = await client.beta.messages.create({
      model: MODEL,
      max_tokens: 100,
      messages: [{ role: 'user', content: DEPLOY_QUESTION }],
    });
    expect(message.content[0]).toEqual(expect.objectContaining({ text: 'OK' }));
    const final = await client.beta.messages
      .stream({ model: MODEL, max_tokens: 100, messages: [{ role: 'user', content: 'Hi' }] })
      .finalMessage();
    expect(final.content[0]).toEqual(expect.objectContaining({ text: 'OK' }));
    const thread = client.beta.messages.thread({ model: MODEL, max_tokens: 100 });
    expect((await thread.stream({ role: 'user', content: 'Hi' }).finalMessage()).content[0]).toEqual(
      expect.objectContaining({ text: 'OK' }),
    );
    expect((await thread.send({ role: 'user', content: 'Again' })).content[0]).toEqual(
      expect.objectContaining({ text: 'OK' }),
    );
    for (const index of [0, 1, 2, 3]) expect(body(index).system).toBeUndefined();
    expect(body(3).thread).toEqual(expect.objectContaining({ type: 'continue' }));
    await client.memory.flush();
    expect(types().filter((type) => type === 'memory-unavailable')).toHaveLength(1);
  });

  it('a 2 MB message and odd content shapes reach the model as sent', async () => {
    const client = wrapped();
    const huge = `${DEPLOY_QUESTION} ${'x'.repeat(2 * 1024 * 1024)}`;
    const messages = [
      { role: 'user' as const, content: huge },
      { role: 'assistant' as const, content: [] },
      { role: 'user' as const, content: [{ type: 'text' as const, text: 'and?' }] },
    ];
    await client.beta.messages.create({ model: MODEL, max_tokens: 100, messages });
    expect(body(0).messages).toEqual(messages);
    expect(systemText(0)).toContain('<memory_context>');
  });
});
