import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import {
  OpenAiCompatibleLanguageModel,
  type OpenAiCompatibleLanguageModelOptions,
} from '../../../src/adapters/models/openai-compatible-language-model.js';
import { EngramError } from '../../../src/kernel/errors.js';
import { runLanguageModelSuite } from '../../../src/testing/suites.js';
import type { LanguageModelServer } from '../../../src/testing/loopback-model-server.js';
import {
  startOpenAiChatCompletionsServer,
  type OpenAiChatCompletionsServerOptions,
} from '../../../src/testing/openai-chat-completions-server.js';
import { useClosedAfterTest } from '../../support/per-test.js';

runLanguageModelSuite({
  name: 'openai-compatible',
  startServer: (options) => startOpenAiChatCompletionsServer(options),
  createModel: (url, options) => new OpenAiCompatibleLanguageModel({ model: 'gpt-5.4-mini', baseUrl: url, ...options }),
  capabilities: { explicitCacheMarks: false, reportsCacheWrites: false },
});

const closeAfterTest = useClosedAfterTest();

/** A loopback server for this test, closed after it. */
async function server(options: OpenAiChatCompletionsServerOptions = {}): Promise<LanguageModelServer> {
  return closeAfterTest(await startOpenAiChatCompletionsServer(options));
}

function model(
  url: string,
  options: Partial<OpenAiCompatibleLanguageModelOptions> = {},
): OpenAiCompatibleLanguageModel {
  return new OpenAiCompatibleLanguageModel({ model: 'llama3.1', baseUrl: url, maxRetries: 0, ...options });
}

const wire = (api: LanguageModelServer, index = 0): Record<string, any> =>
  api.requests[index]!.body as Record<string, any>;
const ask = { messages: [{ role: 'user' as const, content: 'x' }], maxOutputTokens: 10 };

/** A chat completion body with one choice. */
function completion(
  message: Record<string, unknown>,
  finish = 'stop',
  usage: unknown = { prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 },
): unknown {
  return {
    id: 'chatcmpl-1',
    object: 'chat.completion',
    created: 1,
    model: 'llama3.1',
    choices: [{ index: 0, message: { role: 'assistant', ...message }, finish_reason: finish }],
    usage,
  };
}

async function failure(call: Promise<unknown>): Promise<EngramError> {
  const error = await call.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(EngramError);
  return error as EngramError;
}

describe('OpenAI-compatible language model on the wire', () => {
  it('sends function tools, tool_calls and tool messages; results come before the text of the same turn; errors are said in words', async () => {
    const api = await server();
    await model(api.url).generate({
      system: [{ text: 'stable', cache: true }, { text: 'dynamic' }],
      messages: [
        { role: 'user', content: 'find it' },
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'Looking.' },
            { type: 'tool_use', id: 'call_9', name: 'lookup', input: { q: 'it' } },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'try again' },
            { type: 'tool_result', toolUseId: 'call_9', content: 'not found', isError: true },
          ],
        },
      ],
      maxOutputTokens: 10,
      tools: [{ name: 'lookup', description: 'Looks up.', inputSchema: { type: 'object' } }],
      toolChoice: 'any',
    });
    const body = wire(api);
    expect(body.messages).toEqual([
      { role: 'system', content: 'stable\n\ndynamic' },
      { role: 'user', content: 'find it' },
      {
        role: 'assistant',
        content: 'Looking.',
        tool_calls: [{ id: 'call_9', type: 'function', function: { name: 'lookup', arguments: '{"q":"it"}' } }],
      },
      { role: 'tool', tool_call_id: 'call_9', content: 'Error: not found' },
      { role: 'user', content: 'try again' },
    ]);
    expect(body.tools).toEqual([
      { type: 'function', function: { name: 'lookup', description: 'Looks up.', parameters: { type: 'object' } } },
    ]);
    expect(body.tool_choice).toBe('required');
    expect(body.max_completion_tokens).toBe(10);
    expect(body.max_tokens).toBeUndefined();
  });

  it('asks for json_object and caps the answer with max_tokens for older servers when told to', async () => {
    const api = await server();
    api.script({ message: { text: '{"ok":true}' } });
    await model(api.url, { maxTokensField: 'max_tokens' }).generate({ ...ask, responseFormat: 'json' });
    expect(wire(api)).toMatchObject({ max_tokens: 10, response_format: { type: 'json_object' } });
    expect(wire(api).max_completion_tokens).toBeUndefined();
  });

  it('reads tool calls the way local servers send them: empty arguments, missing ids, finish_reason stop', async () => {
    const api = await server();
    api.script({
      body: completion({
        content: null,
        tool_calls: [
          { type: 'function', function: { name: 'now', arguments: '' } },
          { id: 'call_b', type: 'function', function: { name: 'lookup', arguments: '{"q":"x"}' } },
        ],
      }),
    });
    const response = await model(api.url).generate(ask);
    expect(response.content).toEqual([
      { type: 'tool_use', id: 'call_0', name: 'now', input: {} },
      { type: 'tool_use', id: 'call_b', name: 'lookup', input: { q: 'x' } },
    ]);
    expect(response.stopReason).toBe('tool_use');
  });

  it('counts cached prompt tokens apart from the rest, tolerates servers without usage, and keeps refusals as text', async () => {
    const api = await server();
    api.script(
      {
        body: completion({ content: 'hi' }, 'stop', {
          prompt_tokens: 2_000,
          completion_tokens: 5,
          total_tokens: 2_005,
          prompt_tokens_details: { cached_tokens: 1_536 },
        }),
      },
      { body: completion({ content: 'hi' }, 'stop', null) },
      { body: completion({ content: null, refusal: 'I cannot help with that.' }, 'stop') },
      { body: completion({ content: 'filtered' }, 'content_filter') },
    );
    const underTest = model(api.url);
    expect((await underTest.generate(ask)).usage).toEqual({
      inputTokens: 464,
      outputTokens: 5,
      cacheReadTokens: 1_536,
    });
    expect((await underTest.generate(ask)).usage).toEqual({ inputTokens: 0, outputTokens: 0 });
    expect(await underTest.generate(ask)).toMatchObject({ text: 'I cannot help with that.', stopReason: 'other' });
    expect((await underTest.generate(ask)).stopReason).toBe('other');
  });

  it('refuses tool calls whose arguments are not a JSON object, and usage that is not a count', async () => {
    const api = await server();
    api.script(
      {
        body: completion(
          { content: null, tool_calls: [{ id: 'c', type: 'function', function: { name: 'x', arguments: '{"q": ' } }] },
          'tool_calls',
        ),
      },
      {
        body: completion(
          { content: null, tool_calls: [{ id: 'c', type: 'function', function: { name: 'x', arguments: '[1,2]' } }] },
          'tool_calls',
        ),
      },
      { body: completion({ content: 'x' }, 'stop', { prompt_tokens: -1, completion_tokens: 1 }) },
      { body: completion({ content: 42 }) },
      { body: { choices: [] } },
    );
    for (let index = 0; index < 5; index += 1)
      expect((await failure(model(api.url).generate(ask))).code).toBe('MODEL_OUTPUT_INVALID');
  });

  it('sends only what engram was configured with: no key without one, no organization, project or admin key from the environment', async () => {
    const api = await server();
    const names = [
      'OPENAI_API_KEY',
      'OPENAI_ORG_ID',
      'OPENAI_PROJECT_ID',
      'OPENAI_ADMIN_KEY',
      'OPENAI_BASE_URL',
    ] as const;
    const saved = names.map((name) => [name, process.env[name]] as const);
    process.env.OPENAI_API_KEY = 'sk-from-env-must-not-be-sent';
    process.env.OPENAI_ORG_ID = 'org-from-env';
    process.env.OPENAI_PROJECT_ID = 'proj-from-env';
    process.env.OPENAI_ADMIN_KEY = 'admin-from-env';
    process.env.OPENAI_BASE_URL = 'http://127.0.0.1:9/v1';
    try {
      await model(api.url).generate(ask);
      await model(api.url, { apiKey: 'sk-configured' }).generate(ask);
    } finally {
      for (const [name, value] of saved) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
    expect(api.requests).toHaveLength(2);
    expect(api.requests[0]!.headers.authorization).toBeUndefined();
    expect(api.requests[1]!.headers.authorization).toBe('Bearer sk-configured');
    expect(JSON.stringify(api.requests.map((request) => request.headers))).not.toMatch(/from-env/);
  });

  it('refuses a bad configuration with CONFIG_INVALID', () => {
    for (const options of [
      { model: ' ' },
      { baseUrl: 'localhost:11434' },
      { baseUrl: 'http://x/v1?key=1' },
      { apiKey: 'a b' },
      { maxTokensField: 'tokens' as 'max_tokens' },
    ]) {
      try {
        model('http://127.0.0.1:1/v1', options);
        expect.unreachable(JSON.stringify(options));
      } catch (error) {
        expect((error as EngramError).code, JSON.stringify(options)).toBe('CONFIG_INVALID');
      }
    }
  });
});

describe('OpenAI chat completions loopback server', () => {
  it('answers garbage and unknown routes with OpenAI errors and keeps serving', async () => {
    const api = await server();
    const post = async (path: string, body: string): Promise<{ status: number; body: any }> => {
      const response = await fetch(`${api.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      });
      return { status: response.status, body: JSON.parse(await response.text()) };
    };
    expect(await post('/chat/completions', '{"model": ')).toMatchObject({
      status: 400,
      body: { error: { type: 'invalid_request_error' } },
    });
    expect(
      await post('/chat/completions', JSON.stringify({ model: 'm', messages: [{ role: 'wizard', content: 'x' }] })),
    ).toMatchObject({ status: 400 });
    expect(
      await post(
        '/chat/completions',
        JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x' }], max_tokens: 0 }),
      ),
    ).toMatchObject({ status: 400 });
    expect(await post('/responses', '{}')).toMatchObject({
      status: 404,
      body: { error: { message: expect.stringMatching(/Unknown request URL/) } },
    });
    expect(
      await post('/chat/completions', JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x' }] })),
    ).toMatchObject({ status: 200, body: { object: 'chat.completion' } });
    expect(api.requests).toHaveLength(5);
  });

  it('streams chunks the SDK reads: content deltas, a tool call in pieces, the usage chunk and [DONE]', async () => {
    const api = await server({ streamChunkCharacters: 4 });
    api.script({
      message: {
        content: [
          { type: 'text', text: 'Checking…' },
          { type: 'tool_use', id: 'call_s', name: 'get_weather', input: { city: 'Lima' } },
        ],
        usage: { inputTokens: 30, outputTokens: 9 },
      },
    });
    const client = new OpenAI({ apiKey: 'sk', baseURL: api.url, maxRetries: 0 });
    const stream = await client.chat.completions.create({
      model: 'llama3.1',
      messages: [{ role: 'user', content: 'Weather in Lima?' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let argumentsText = '';
    let finish: string | null = null;
    let usage: unknown;
    for await (const chunk of stream) {
      const choice = chunk.choices[0];
      text += choice?.delta.content ?? '';
      argumentsText += choice?.delta.tool_calls?.[0]?.function?.arguments ?? '';
      finish = choice?.finish_reason ?? finish;
      usage = chunk.usage ?? usage;
    }
    expect(text).toBe('Checking…');
    expect(JSON.parse(argumentsText)).toEqual({ city: 'Lima' });
    expect(finish).toBe('tool_calls');
    expect(usage).toMatchObject({ prompt_tokens: 30, completion_tokens: 9 });
  });

  it('answers errors in the OpenAI shape, masks a refused key, and refuses tool messages without a preceding call', async () => {
    const api = await server({ apiKey: 'sk-right-key-1234' });
    const wrong = new OpenAI({ apiKey: 'sk-wrong-key-9876', baseURL: api.url, maxRetries: 0 });
    const refused = (await wrong.chat.completions
      .create({ model: 'm', messages: [{ role: 'user', content: 'x' }] })
      .catch((error: unknown) => error)) as InstanceType<typeof OpenAI.APIError>;
    expect(refused.status).toBe(401);
    expect(refused.code).toBe('invalid_api_key');
    expect(refused.message).toContain('sk-');
    expect(refused.message).not.toContain('sk-wrong-key-9876');
    expect(refused.requestID).toMatch(/^req_/);
    const client = new OpenAI({ apiKey: 'sk-right-key-1234', baseURL: api.url, maxRetries: 0 });
    const orphan = (await client.chat.completions
      .create({
        model: 'm',
        messages: [
          { role: 'user', content: 'x' },
          { role: 'tool', tool_call_id: 'nope', content: 'r' },
        ],
      })
      .catch((error: unknown) => error)) as Error;
    expect(orphan.message).toMatch(/must be a response to a preceeding message with 'tool_calls'/);
    const noJsonWord = (await client.chat.completions
      .create({ model: 'm', messages: [{ role: 'user', content: 'x' }], response_format: { type: 'json_object' } })
      .catch((error: unknown) => error)) as Error;
    expect(noJsonWord.message).toMatch(/must contain the word 'json'/);
  });
});
