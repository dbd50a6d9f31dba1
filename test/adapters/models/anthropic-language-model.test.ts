import Anthropic from '@anthropic-ai/sdk';
import { describe, expect, it } from 'vitest';
import {
  AnthropicLanguageModel,
  type AnthropicLanguageModelOptions,
} from '../../../src/adapters/models/anthropic-language-model.js';
import { EngramError } from '../../../src/kernel/errors.js';
import { memoryToolDefinition } from '../../../src/contracts/memory-tool-definition.js';
import {
  startAnthropicMessagesServer,
  type AnthropicMessagesServerOptions,
} from '../../../src/testing/anthropic-messages-server.js';
import { runLanguageModelSuite } from '../../../src/testing/suites.js';
import type { LanguageModelServer } from '../../../src/testing/loopback-model-server.js';
import { useClosedAfterTest } from '../../support/per-test.js';

runLanguageModelSuite({
  name: 'anthropic',
  startServer: (options) => startAnthropicMessagesServer(options),
  createModel: (url, options) => new AnthropicLanguageModel({ model: 'claude-haiku-5-5', baseUrl: url, ...options }),
  capabilities: { explicitCacheMarks: true, reportsCacheWrites: true, serverContextEditing: true },
});

const closeAfterTest = useClosedAfterTest();

/** A loopback server for this test, closed after it. */
async function server(options: AnthropicMessagesServerOptions = {}): Promise<LanguageModelServer> {
  return closeAfterTest(await startAnthropicMessagesServer(options));
}

function model(url: string, options: Partial<AnthropicLanguageModelOptions> = {}): AnthropicLanguageModel {
  return new AnthropicLanguageModel({
    model: 'claude-haiku-5-5',
    baseUrl: url,
    apiKey: 'sk-ant-test',
    maxRetries: 0,
    ...options,
  });
}

const wire = (api: LanguageModelServer, index = 0): Record<string, any> =>
  api.requests[index]!.body as Record<string, any>;

describe('Anthropic language model on the wire', () => {
  it('puts cache_control on marked system blocks only, at most the last four, and the JSON instruction after them', async () => {
    const api = await server();
    api.script({ message: { text: '{}' } }, { message: { text: 'ok' } });
    const system = [
      { text: 'one', cache: true },
      { text: 'two', cache: true },
      { text: '', cache: true },
      { text: 'three', cache: true },
      { text: 'four', cache: true },
      { text: 'five', cache: true },
      { text: 'dynamic' },
    ];
    await model(api.url).generate({
      system,
      messages: [{ role: 'user', content: 'x' }],
      maxOutputTokens: 10,
      responseFormat: 'json',
    });
    const sent = wire(api).system as Array<{ text: string; cache_control?: unknown }>;
    expect(sent.map((block) => block.text)).toEqual([
      'one',
      'two',
      'three',
      'four',
      'five',
      'dynamic',
      expect.stringMatching(/JSON/),
    ]);
    expect(sent.map((block) => block.cache_control !== undefined)).toEqual([
      false,
      true,
      true,
      true,
      true,
      false,
      false,
    ]);
    expect(sent[1]!.cache_control).toEqual({ type: 'ephemeral' });

    await model(api.url, { cacheTtl: '1h' }).generate({
      system: [{ text: 'stable', cache: true }],
      messages: [{ role: 'user', content: 'x' }],
      maxOutputTokens: 10,
    });
    expect(wire(api, 1).system).toEqual([
      { type: 'text', text: 'stable', cache_control: { type: 'ephemeral', ttl: '1h' } },
    ]);
  });

  it("puts a message's cache mark on its last block; message marks end the longest prefixes, so they win the four breakpoints", async () => {
    const api = await server();
    api.script({ message: { text: 'ok' } }, { message: { text: 'ok' } });
    const system = [
      { text: 'one', cache: true },
      { text: 'two', cache: true },
      { text: 'three', cache: true },
    ];
    const messages = [
      { role: 'user' as const, content: 'first question', cache: true },
      {
        role: 'assistant' as const,
        content: [
          { type: 'text' as const, text: 'an answer' },
          { type: 'tool_use' as const, id: 'toolu_1', name: 'look', input: {} },
        ],
      },
      {
        role: 'user' as const,
        content: [
          { type: 'tool_result' as const, toolUseId: 'toolu_1', content: 'seen' },
          { type: 'text' as const, text: 'go on' },
        ],
        cache: true,
      },
    ];
    await model(api.url).generate({
      system,
      messages,
      tools: [{ name: 'look', description: 'Looks.', inputSchema: { type: 'object' } }],
      maxOutputTokens: 10,
    });
    const sent = wire(api) as { system: Array<{ cache_control?: unknown }>; messages: Array<{ content: unknown }> };
    expect(sent.system.map((block) => block.cache_control !== undefined)).toEqual([false, true, true]);
    expect(sent.messages[0]!.content).toEqual([
      { type: 'text', text: 'first question', cache_control: { type: 'ephemeral' } },
    ]);
    expect(sent.messages[1]!.content).toEqual([
      { type: 'text', text: 'an answer' },
      { type: 'tool_use', id: 'toolu_1', name: 'look', input: {} },
    ]);
    expect(sent.messages[2]!.content).toEqual([
      { type: 'tool_result', tool_use_id: 'toolu_1', content: 'seen' },
      { type: 'text', text: 'go on', cache_control: { type: 'ephemeral' } },
    ]);
    // An unmarked string message stays a string; a mark that is not a boolean is refused before sending.
    await model(api.url).generate({ messages: [{ role: 'user', content: 'plain' }], maxOutputTokens: 10 });
    expect((wire(api, 1) as { messages: Array<{ content: unknown }> }).messages[0]!.content).toBe('plain');
    await expect(
      model(api.url).generate({
        messages: [{ role: 'user', content: 'x', cache: 'yes' as never }],
        maxOutputTokens: 10,
      }),
    ).rejects.toMatchObject({ code: 'MODEL_REQUEST_INVALID' });
    expect(api.requests).toHaveLength(2);
  });

  it('sends tools, tool choice and tool results in the Messages API shapes', async () => {
    const api = await server();
    const tool = {
      name: 'lookup',
      description: 'Looks up.',
      inputSchema: { type: 'object', properties: { q: { type: 'string' } } },
    };
    await model(api.url).generate({
      messages: [
        { role: 'user', content: 'find it' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_9', name: 'lookup', input: { q: 'it' } }] },
        {
          role: 'user',
          content: [
            { type: 'tool_result', toolUseId: 'toolu_9', content: 'not found', isError: true },
            { type: 'text', text: 'try again' },
          ],
        },
      ],
      maxOutputTokens: 10,
      tools: [tool],
      toolChoice: 'none',
    });
    const body = wire(api);
    expect(body.tools).toEqual([{ name: 'lookup', description: 'Looks up.', input_schema: tool.inputSchema }]);
    expect(body.tool_choice).toEqual({ type: 'none' });
    expect(body.messages[1].content).toEqual([{ type: 'tool_use', id: 'toolu_9', name: 'lookup', input: { q: 'it' } }]);
    expect(body.messages[2].content).toEqual([
      { type: 'tool_result', tool_use_id: 'toolu_9', content: 'not found', is_error: true },
      { type: 'text', text: 'try again' },
    ]);
  });

  it("sends the memory tool as Anthropic's native entry, with its folder layout in the system prompt, and other tools with their schema", async () => {
    const api = await server();
    const layout =
      'In the memory tool, /memories/<name>.md holds memories of scope project:acme; /memories/global/<name>.md holds memories of scope global.';
    const memory = memoryToolDefinition(layout);
    const lookup = {
      name: 'lookup',
      description: 'Looks up.',
      inputSchema: { type: 'object', properties: { q: { type: 'string' } } },
    };
    api.script({
      message: {
        content: [{ type: 'tool_use', id: 'toolu_1', name: 'memory', input: { command: 'view', path: '/memories' } }],
      },
    });
    const answer = await model(api.url).generate({
      system: [{ text: 'You keep memories.', cache: true }],
      messages: [{ role: 'user', content: 'remember that deploys run on Fridays' }],
      maxOutputTokens: 50,
      tools: [memory, lookup],
    });
    const body = wire(api);
    expect(body.tools).toEqual([
      { type: 'memory_20250818', name: 'memory' },
      { name: 'lookup', description: 'Looks up.', input_schema: lookup.inputSchema },
    ]);
    expect(body.system).toEqual([
      { type: 'text', text: 'You keep memories.', cache_control: { type: 'ephemeral' } },
      { type: 'text', text: layout },
    ]);
    expect(answer.content).toEqual([
      { type: 'tool_use', id: 'toolu_1', name: 'memory', input: { command: 'view', path: '/memories' } },
    ]);

    // A look-alike definition (a copy, or a tool merely named "memory") keeps its JSON Schema.
    await model(api.url).generate({
      messages: [{ role: 'user', content: 'x' }],
      maxOutputTokens: 5,
      tools: [{ ...memory }],
    });
    expect(wire(api, 1).tools).toEqual([
      { name: 'memory', description: memory.description, input_schema: memory.inputSchema },
    ]);
    expect(wire(api, 1).system).toBeUndefined();
  });

  it('maps stop reasons and skips blocks engram has no place for (thinking)', async () => {
    const api = await server();
    const message = (stop: string, content: unknown[] = [{ type: 'text', text: 'a' }]): unknown => ({
      id: 'msg_1',
      type: 'message',
      role: 'assistant',
      model: 'claude-haiku-5-5',
      content,
      stop_reason: stop,
      usage: { input_tokens: 3, output_tokens: 1, cache_creation_input_tokens: null, cache_read_input_tokens: null },
    });
    api.script(
      { body: message('model_context_window_exceeded') },
      { body: message('refusal') },
      { body: message('pause_turn') },
      {
        body: message('end_turn', [
          { type: 'thinking', thinking: 'hmm', signature: 's' },
          { type: 'text', text: 'answer' },
        ]),
      },
    );
    const underTest = model(api.url);
    const ask = { messages: [{ role: 'user' as const, content: 'x' }], maxOutputTokens: 10 };
    expect((await underTest.generate(ask)).stopReason).toBe('max_tokens');
    expect((await underTest.generate(ask)).stopReason).toBe('other');
    expect((await underTest.generate(ask)).stopReason).toBe('other');
    const last = await underTest.generate(ask);
    expect(last).toEqual({
      text: 'answer',
      content: [{ type: 'text', text: 'answer' }],
      stopReason: 'end',
      usage: { inputTokens: 3, outputTokens: 1 },
    });
  });

  it('refuses answers whose blocks or usage are malformed', async () => {
    const api = await server();
    const base = { id: 'msg_1', type: 'message', role: 'assistant', stop_reason: 'end_turn' };
    api.script(
      {
        body: {
          ...base,
          content: [{ type: 'tool_use', id: 't', name: 'x', input: 'not an object' }],
          usage: { input_tokens: 1, output_tokens: 1 },
        },
      },
      { body: { ...base, content: [{ type: 'text', text: 'x' }], usage: { input_tokens: 'many', output_tokens: 1 } } },
      { body: { ...base, content: [{ type: 'text', text: 'x' }] } },
    );
    for (let index = 0; index < 3; index += 1) {
      const error = await model(api.url)
        .generate({ messages: [{ role: 'user', content: 'x' }], maxOutputTokens: 10 })
        .catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(EngramError);
      expect((error as EngramError).code).toBe('MODEL_OUTPUT_INVALID');
    }
  });

  it('sends the configured key as the SDK does, and no credentials at all without one, whatever the environment holds', async () => {
    const api = await server();
    const saved = {
      key: process.env.ANTHROPIC_API_KEY,
      token: process.env.ANTHROPIC_AUTH_TOKEN,
      base: process.env.ANTHROPIC_BASE_URL,
    };
    process.env.ANTHROPIC_API_KEY = 'sk-from-env-must-not-be-sent';
    process.env.ANTHROPIC_AUTH_TOKEN = 'token-from-env-must-not-be-sent';
    process.env.ANTHROPIC_BASE_URL = 'http://127.0.0.1:9/never';
    try {
      await model(api.url).generate({ messages: [{ role: 'user', content: 'x' }], maxOutputTokens: 10 });
      await model(api.url, { apiKey: '' }).generate({
        messages: [{ role: 'user', content: 'x' }],
        maxOutputTokens: 10,
      });
    } finally {
      for (const [name, value] of [
        ['ANTHROPIC_API_KEY', saved.key],
        ['ANTHROPIC_AUTH_TOKEN', saved.token],
        ['ANTHROPIC_BASE_URL', saved.base],
      ] as const) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
    expect(api.requests).toHaveLength(2);
    expect(api.requests[0]!.headers.authorization).toBe('Bearer sk-ant-test');
    expect(api.requests[1]!.headers.authorization).toBeUndefined();
    expect(api.requests[1]!.headers['x-api-key']).toBeUndefined();
    expect(JSON.stringify(api.requests.map((request) => request.headers))).not.toMatch(/from-env/);
  });

  it('refuses a bad configuration with CONFIG_INVALID before anything is sent', () => {
    const bad: Array<Partial<AnthropicLanguageModelOptions>> = [
      { model: '' },
      { model: 'x'.repeat(300) },
      { baseUrl: 'ftp://example.com' },
      { baseUrl: 'not a url' },
      { baseUrl: 'https://user:pass@example.com' },
      { apiKey: 'sk-with\nnewline' },
      { apiKey: 'two words' },
      { timeoutMs: 0 },
      { maxRetries: -1 },
      { cacheTtl: '10m' as '5m' },
    ];
    for (const options of bad) {
      expect(() => model('http://127.0.0.1:1', options), JSON.stringify(options)).toThrow(EngramError);
      try {
        model('http://127.0.0.1:1', options);
      } catch (error) {
        expect((error as EngramError).code).toBe('CONFIG_INVALID');
      }
    }
  });
});

describe('Anthropic Messages loopback server', () => {
  it('answers garbage, unknown routes and a throwing script with API errors (or a dropped connection) and keeps serving', async () => {
    const api = await server();
    const post = async (path: string, body: string): Promise<{ status: number; body: any }> => {
      const response = await fetch(`${api.url}${path}`, {
        method: 'POST',
        headers: { 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
        body,
      });
      return { status: response.status, body: JSON.parse(await response.text()) };
    };
    expect(await post('/v1/messages', '{"model": "m", "max_tokens": ')).toMatchObject({
      status: 400,
      body: { type: 'error', error: { type: 'invalid_request_error' } },
    });
    expect(await post('/v1/messages', '\u0000\u0001 not json')).toMatchObject({ status: 400 });
    expect(await post('/v1/messages', JSON.stringify({ model: 'm', max_tokens: -1, messages: [] }))).toMatchObject({
      status: 400,
      body: { error: { message: expect.stringMatching(/max_tokens/) } },
    });
    expect(await post('/v1/complete', '{}')).toMatchObject({
      status: 404,
      body: { error: { type: 'not_found_error' } },
    });
    api.script(() => {
      throw new Error('a broken script');
    });
    await expect(
      post('/v1/messages', JSON.stringify({ model: 'm', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] })),
    ).rejects.toThrow();
    expect(
      await post(
        '/v1/messages',
        JSON.stringify({ model: 'm', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] }),
      ),
    ).toMatchObject({ status: 200, body: { type: 'message', content: [{ type: 'text', text: 'OK' }] } });
    expect(api.requests).toHaveLength(6);
  });

  it('streams a message over SSE that the SDK assembles: text deltas, a tool_use with partial JSON, usage', async () => {
    const api = await server({ streamChunkCharacters: 3 });
    api.script({
      message: {
        content: [
          { type: 'text', text: 'Looking up the weather 🌦 now.' },
          { type: 'tool_use', id: 'toolu_s1', name: 'get_weather', input: { city: 'Zürich', units: 'metric' } },
        ],
        usage: { inputTokens: 40, outputTokens: 12, cacheReadTokens: 1_100, cacheWriteTokens: 0 },
      },
    });
    const client = new Anthropic({ apiKey: 'sk-ant-test', baseURL: api.url, maxRetries: 0 });
    const stream = client.messages.stream({
      model: 'claude-haiku-5-5',
      max_tokens: 100,
      messages: [{ role: 'user', content: 'Weather?' }],
    });
    const deltas: string[] = [];
    stream.on('text', (text) => deltas.push(text));
    const final = await stream.finalMessage();
    expect(deltas.length).toBeGreaterThan(3);
    expect(deltas.join('')).toBe('Looking up the weather 🌦 now.');
    expect(final.content).toEqual([
      expect.objectContaining({ type: 'text', text: 'Looking up the weather 🌦 now.' }),
      expect.objectContaining({
        type: 'tool_use',
        id: 'toolu_s1',
        name: 'get_weather',
        input: { city: 'Zürich', units: 'metric' },
      }),
    ]);
    expect(final.stop_reason).toBe('tool_use');
    expect(final.usage).toMatchObject({ input_tokens: 40, output_tokens: 12, cache_read_input_tokens: 1_100 });
    expect(api.requests[0]!.summary!.stream).toBe(true);
  });

  it('answers errors in the API shape with request-id and retry-after, and refuses what the API refuses', async () => {
    const api = await server();
    api.script({ error: { kind: 'overloaded', retryAfter: 3 } });
    const client = new Anthropic({ apiKey: 'sk-ant-test', baseURL: api.url, maxRetries: 0 });
    const overloaded = await client.messages
      .create({ model: 'm', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] })
      .catch((error: unknown) => error);
    expect(overloaded).toBeInstanceOf(Anthropic.APIError);
    expect((overloaded as InstanceType<typeof Anthropic.APIError>).status).toBe(529);
    expect((overloaded as InstanceType<typeof Anthropic.APIError>).type).toBe('overloaded_error');
    expect((overloaded as InstanceType<typeof Anthropic.APIError>).headers?.get('retry-after')).toBe('3');
    expect((overloaded as InstanceType<typeof Anthropic.APIError>).requestID).toMatch(/^req_/);
    const body = JSON.parse(await (await fetch(`${api.url}/v1/messages`, { method: 'POST', body: '{}' })).text());
    expect(body).toMatchObject({
      type: 'error',
      error: { type: 'invalid_request_error', message: expect.stringMatching(/anthropic-version/) },
    });
    const tooManyMarks = await client.messages
      .create({
        model: 'm',
        max_tokens: 5,
        system: ['a', 'b', 'c', 'd', 'e'].map((text) => ({
          type: 'text' as const,
          text,
          cache_control: { type: 'ephemeral' as const },
        })),
        messages: [{ role: 'user', content: 'x' }],
      })
      .catch((error: unknown) => error);
    expect((tooManyMarks as Error).message).toMatch(/maximum of 4 blocks with cache_control/);
    const orphan = await client.messages
      .create({
        model: 'm',
        max_tokens: 5,
        messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'nope', content: 'r' }] }],
      })
      .catch((error: unknown) => error);
    expect((orphan as Error).message).toMatch(/unexpected `tool_use_id`/);
  });
});
