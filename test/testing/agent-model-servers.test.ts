import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGeminiGenerateContentServer } from '../../src/testing/gemini-generate-content-server.js';
import type { LanguageModelServer } from '../../src/testing/loopback-model-server.js';
import { startOpenAiResponsesServer } from '../../src/testing/openai-responses-server.js';

// The loopback servers the agent CLIs talk to: OpenAI Responses (Codex) through the real OpenAI SDK,
// and the Gemini API (Gemini CLI) over plain HTTP as the Google GenAI SDK sends it. The CLIs
// themselves run against them in test/agents/.

describe('OpenAI Responses server', () => {
  let server: LanguageModelServer;
  let client: OpenAI;
  beforeAll(async () => {
    server = await startOpenAiResponsesServer({ streamChunkCharacters: 4 });
    client = new OpenAI({ apiKey: 'test', baseURL: server.url, maxRetries: 0 });
  });
  afterAll(() => server.close());

  it('answers a function call and reads the result sent back into engram’s terms', async () => {
    server.script({
      message: { content: [{ type: 'tool_use', id: 'call_1', name: 'exec_command', input: { cmd: 'ls' } }] },
    });
    const first = await client.responses.create({ model: 'gpt-test', input: 'List the files.' });
    const call = first.output.find((item) => item.type === 'function_call');
    expect(call).toMatchObject({ call_id: 'call_1', name: 'exec_command', arguments: '{"cmd":"ls"}' });
    await client.responses.create({
      model: 'gpt-test',
      instructions: 'Be brief.',
      input: [
        { role: 'user', content: 'List the files.' },
        { type: 'function_call', call_id: 'call_1', name: 'exec_command', arguments: '{"cmd":"ls"}' },
        { type: 'function_call_output', call_id: 'call_1', output: 'a.txt' },
      ],
    });
    expect(server.requests.at(-1)!.summary).toMatchObject({
      system: 'Be brief.',
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'List the files.' }] },
        {
          role: 'assistant',
          content: [{ type: 'tool_use', id: 'call_1', name: 'exec_command', input: { cmd: 'ls' } }],
        },
        { role: 'user', content: [{ type: 'tool_result', toolUseId: 'call_1', content: 'a.txt' }] },
      ],
    });
  });

  it('streams text and function-call arguments in pieces, ending with response.completed and usage', async () => {
    server.script({
      message: {
        content: [
          { type: 'text', text: 'Reading it now.' },
          { type: 'tool_use', id: 'call_2', name: 'read', input: { path: 'notes.txt' } },
        ],
      },
    });
    const stream = await client.responses.create({ model: 'gpt-test', input: 'Read notes.txt', stream: true });
    const types: string[] = [];
    let text = '';
    let args = '';
    let usage: unknown;
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === 'response.output_text.delta') text += event.delta;
      if (event.type === 'response.function_call_arguments.delta') args += event.delta;
      if (event.type === 'response.completed') usage = event.response.usage;
    }
    expect(text).toBe('Reading it now.');
    expect(JSON.parse(args)).toEqual({ path: 'notes.txt' });
    expect(types[0]).toBe('response.created');
    expect(types.at(-1)).toBe('response.completed');
    expect(types.filter((type) => type === 'response.output_text.delta').length).toBeGreaterThan(1);
    expect(usage).toMatchObject({ input_tokens: expect.any(Number), output_tokens: expect.any(Number) });
  });

  it('answers scripted errors with OpenAI’s status and shape; an error after the stream started is response.failed', async () => {
    server.script({ error: { kind: 'rate_limit', retryAfter: 2 } });
    await expect(client.responses.create({ model: 'gpt-test', input: 'x' })).rejects.toMatchObject({ status: 429 });
    server.script({
      message: { text: 'Half of an answer' },
      streamBreak: { afterTextDeltas: 1, then: { error: { kind: 'server' } } },
    });
    const stream = await client.responses.create({ model: 'gpt-test', input: 'x', stream: true });
    const seen: string[] = [];
    for await (const event of stream) seen.push(event.type);
    expect(seen).toContain('response.output_text.delta');
    expect(seen.at(-1)).toBe('response.failed');
    expect(seen).not.toContain('response.completed');
  });

  it('accepts a path prefix before /v1 (runs told apart by base URL) and refuses other routes', async () => {
    const origin = server.url.replace(/\/v1$/, '');
    const prefixed = new OpenAI({ apiKey: 'test', baseURL: `${origin}/run-7/v1`, maxRetries: 0 });
    await prefixed.responses.create({ model: 'gpt-test', input: 'hi' });
    expect(server.requests.at(-1)!.path).toBe('/run-7/v1/responses');
    const missing = await fetch(`${server.url}/nothing`, { method: 'POST', body: '{}' });
    expect(missing.status).toBe(404);
  });
});

describe('Gemini generateContent server', () => {
  let server: LanguageModelServer;
  beforeAll(async () => {
    server = await startGeminiGenerateContentServer({ apiKey: 'gem-key', streamChunkCharacters: 5 });
  });
  afterAll(() => server.close());

  const post = (path: string, body: unknown, key = 'gem-key'): Promise<Response> =>
    fetch(`${server.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-goog-api-key': key },
      body: JSON.stringify(body),
    });
  const request = {
    systemInstruction: { parts: [{ text: 'Be brief.' }] },
    contents: [
      { role: 'user', parts: [{ text: 'Read notes.txt' }] },
      { role: 'model', parts: [{ functionCall: { id: 'c1', name: 'read_file', args: { file_path: 'notes.txt' } } }] },
      {
        role: 'user',
        parts: [{ functionResponse: { id: 'c1', name: 'read_file', response: { output: 'Frankfurt' } } }],
      },
    ],
    tools: [{ functionDeclarations: [{ name: 'read_file', parametersJsonSchema: { type: 'object' } }] }],
  };

  it('answers generateContent with a candidate and usage, and reads the request into engram’s terms', async () => {
    server.script({ message: { text: 'It says Frankfurt.' } });
    const response = await post('/v1beta/models/gemini-2.5-flash:generateContent', request);
    const body = (await response.json()) as {
      candidates: Array<{ content: { parts: Array<{ text: string }> }; finishReason: string }>;
      usageMetadata: { totalTokenCount: number };
    };
    expect(body.candidates[0]!.content.parts[0]!.text).toBe('It says Frankfurt.');
    expect(body.candidates[0]!.finishReason).toBe('STOP');
    expect(body.usageMetadata.totalTokenCount).toBeGreaterThan(0);
    expect(server.requests.at(-1)!.summary).toMatchObject({
      model: 'gemini-2.5-flash',
      system: 'Be brief.',
      tools: ['read_file'],
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'Read notes.txt' }] },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'c1', name: 'read_file' }] },
        { role: 'user', content: [{ type: 'tool_result', toolUseId: 'c1' }] },
      ],
    });
  });

  it('streams with alt=sse: whole responses per data line, text in pieces, a function call whole, usage last', async () => {
    server.script({
      message: {
        content: [
          { type: 'text', text: 'Looking at it.' },
          { type: 'tool_use', id: 'c2', name: 'read_file', input: { file_path: 'a.txt' } },
        ],
      },
    });
    const response = await post('/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse', request);
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    const chunks = (await response.text())
      .split('\r\n\r\n')
      .filter((chunk) => chunk.startsWith('data: '))
      .map(
        (chunk) =>
          JSON.parse(chunk.slice(6)) as {
            candidates: Array<{ content: { parts: Array<Record<string, unknown>> }; finishReason?: string }>;
            usageMetadata?: unknown;
          },
      );
    const parts = chunks.flatMap((chunk) => chunk.candidates[0]!.content.parts);
    expect(
      parts
        .filter((part) => typeof part.text === 'string')
        .map((part) => part.text)
        .join(''),
    ).toBe('Looking at it.');
    expect(parts.find((part) => part.functionCall)).toEqual({
      functionCall: { id: 'c2', name: 'read_file', args: { file_path: 'a.txt' } },
    });
    expect(chunks.length).toBeGreaterThan(2);
    expect(chunks.at(-1)!.candidates[0]!.finishReason).toBe('STOP');
    expect(chunks.at(-1)!.usageMetadata).toBeDefined();
    expect(chunks.slice(0, -1).every((chunk) => chunk.usageMetadata === undefined)).toBe(true);
  });

  it('refuses a wrong key, an empty request and an unknown route with the Gemini error shape', async () => {
    const wrongKey = await post('/v1beta/models/m:generateContent', request, 'other');
    expect(wrongKey.status).toBe(400);
    expect(await wrongKey.json()).toMatchObject({ error: { code: 400, status: 'INVALID_ARGUMENT' } });
    const empty = await post('/v1beta/models/m:generateContent', { contents: [] });
    expect(empty.status).toBe(400);
    const unknown = await post('/v1beta/files', request);
    expect(unknown.status).toBe(404);
    server.script({ error: { kind: 'rate_limit' } });
    const limited = await post('/v1beta/models/m:generateContent', request);
    expect(limited.status).toBe(429);
    expect(await limited.json()).toMatchObject({ error: { status: 'RESOURCE_EXHAUSTED' } });
    const count = await post('/v1beta/models/m:countTokens', { contents: request.contents });
    expect(await count.json()).toMatchObject({ totalTokens: expect.any(Number) });
  });
});
