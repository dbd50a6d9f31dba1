import { afterEach, describe, expect, it } from 'vitest';
import { createEmbedder } from '../../../src/adapters/embedding/create-embedder.js';
import {
  OpenAiCompatibleEmbedder,
  type OpenAiCompatibleEmbedderOptions,
} from '../../../src/adapters/embedding/openai-compatible-embedder.js';
import { EngramError } from '../../../src/kernel/errors.js';
import { DEFAULT_SETTINGS } from '../../../src/kernel/settings.js';
import {
  embeddingsErrorBody,
  embeddingsResponseBody,
  hashedWordVector,
  startEmbeddingsServer,
  type EmbeddingsServer,
  type EmbeddingsServerOptions,
} from '../../../src/testing/index.js';

const servers: EmbeddingsServer[] = [];

async function server(options: EmbeddingsServerOptions = {}): Promise<EmbeddingsServer> {
  const started = await startEmbeddingsServer({ dimensions: 8, ...options });
  servers.push(started);
  return started;
}

afterEach(async () => {
  await Promise.all(servers.splice(0).map((started) => started.close()));
});

/** An embedder that records its backoff waits instead of sleeping. */
function embedder(
  baseUrl: string,
  options: Partial<OpenAiCompatibleEmbedderOptions> = {},
): { embedder: OpenAiCompatibleEmbedder; waits: number[] } {
  const waits: number[] = [];
  const created = new OpenAiCompatibleEmbedder({
    baseUrl,
    model: 'test-embed',
    sleep: async (milliseconds) => {
      waits.push(milliseconds);
    },
    ...options,
  });
  return { embedder: created, waits };
}

async function failure(action: () => Promise<unknown>): Promise<EngramError> {
  const error = await action().then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error, 'expected the call to fail').toBeInstanceOf(EngramError);
  return error as EngramError;
}

describe('OpenAI-compatible embedder over the real wire format', () => {
  it('sends model, input and encoding_format with a Bearer key, and returns vectors in input order', async () => {
    const api = await server();
    const { embedder: client } = embedder(api.baseUrl, { apiKey: 'sk-test-123' });
    const vectors = await client.embed(['The user prefers tabs.', 'Deploys go through ArgoCD.']);
    expect(api.requests).toHaveLength(1);
    const [request] = api.requests;
    expect(request!.method).toBe('POST');
    expect(request!.path).toBe('/v1/embeddings');
    expect(request!.headers.authorization).toBe('Bearer sk-test-123');
    expect(request!.headers['content-type']).toBe('application/json');
    expect(request!.body).toEqual({
      model: 'test-embed',
      input: ['The user prefers tabs.', 'Deploys go through ArgoCD.'],
      encoding_format: 'float',
    });
    expect(vectors.map((vector) => Array.from(vector))).toEqual(
      ['The user prefers tabs.', 'Deploys go through ArgoCD.'].map((text) =>
        Array.from(Float32Array.from(hashedWordVector(text, { dimensions: 8 }))),
      ),
    );
    expect(client.dimensions).toBe(8);
  });

  it('sends no Authorization header without a key (local servers), and accepts a base URL with a trailing slash', async () => {
    const api = await server();
    const { embedder: client } = embedder(`${api.baseUrl}/`);
    expect(client.dimensions).toBeUndefined();
    await client.embed(['hello']);
    expect(api.requests[0]!.path).toBe('/v1/embeddings');
    expect(api.requests[0]!.headers.authorization).toBeUndefined();
  });

  it('splits input into batches of batchSize and keeps the order across batches', async () => {
    const api = await server();
    const { embedder: client } = embedder(api.baseUrl, { batchSize: 4 });
    const texts = Array.from({ length: 10 }, (_value, index) => `fact number ${index} about item${index}`);
    const vectors = await client.embed(texts);
    expect(api.requests.map((request) => (request.body as { input: string[] }).input.length)).toEqual([4, 4, 2]);
    expect(api.requests.flatMap((request) => (request.body as { input: string[] }).input)).toEqual(texts);
    expect(vectors.map((vector) => Array.from(vector))).toEqual(
      texts.map((text) => Array.from(Float32Array.from(hashedWordVector(text, { dimensions: 8 })))),
    );
    expect(await client.embed([])).toEqual([]);
    expect(api.requests).toHaveLength(3);
  });

  it('orders answers by their index, even when the server shuffles them, and reads base64 embeddings', async () => {
    const api = await server();
    const shuffled = {
      ...(embeddingsResponseBody(
        [
          [1, 0],
          [0, 1],
        ],
        'test-embed',
      ) as object),
      data: [
        { index: 1, embedding: [0, 1] },
        { index: 0, embedding: [1, 0] },
      ],
    };
    api.script({ body: shuffled });
    const { embedder: client } = embedder(api.baseUrl);
    expect((await client.embed(['first', 'second'])).map((vector) => Array.from(vector))).toEqual([
      [1, 0],
      [0, 1],
    ]);
    const base64 = Buffer.from(new Float32Array([0.5, -0.25]).buffer).toString('base64');
    api.script({ body: { data: [{ index: 0, embedding: base64 }] } });
    expect(Array.from((await client.embed(['third']))[0]!)).toEqual([0.5, -0.25]);
  });

  it('answers a 4xx with an OpenAI error body with a clear EMBEDDING_FAILED error, without retrying', async () => {
    const api = await server();
    api.script({
      status: 401,
      body: embeddingsErrorBody('Incorrect API key provided: sk-wrong.', { code: 'invalid_api_key' }),
    });
    const { embedder: client, waits } = embedder(api.baseUrl, { maxRetries: 3 });
    const error = await failure(() => client.embed(['hello']));
    expect(error.code).toBe('EMBEDDING_FAILED');
    expect(error.message).toContain('401');
    expect(error.message).toContain('Incorrect API key provided');
    expect(error.message).toContain('embedding.apiKey');
    expect(api.requests).toHaveLength(1);
    expect(waits).toEqual([]);

    api.script({ status: 404, body: { error: 'model "nomic-embed-text" not found, try pulling it first' } });
    const missing = await failure(() => client.embed(['hello']));
    expect(missing.message).toContain('model "nomic-embed-text" not found');
    expect(missing.message).toContain('embedding.model');
  });

  it('retries 429 then succeeds, honouring Retry-After (seconds) and retry-after-ms', async () => {
    const api = await server();
    api.script({
      status: 429,
      headers: { 'retry-after': '2' },
      body: embeddingsErrorBody('Rate limit reached', { type: 'requests' }),
    });
    api.script({
      status: 429,
      headers: { 'retry-after-ms': '150' },
      body: embeddingsErrorBody('Rate limit reached', { type: 'requests' }),
    });
    const { embedder: client, waits } = embedder(api.baseUrl, { maxRetries: 3, retryBaseDelayMs: 10 });
    const [vector] = await client.embed(['after the rate limit']);
    expect(Array.from(vector!)).toEqual(
      Array.from(Float32Array.from(hashedWordVector('after the rate limit', { dimensions: 8 }))),
    );
    expect(api.requests).toHaveLength(3);
    expect(waits).toEqual([2_000, 150]);
  });

  it('backs off exponentially on 5xx and network errors, caps the wait, and gives up after maxRetries', async () => {
    const api = await server();
    api.script({ status: 503, body: 'upstream overloaded' }, { destroy: true }, { status: 500 }, { status: 502 });
    const { embedder: client, waits } = embedder(api.baseUrl, {
      maxRetries: 3,
      retryBaseDelayMs: 100,
      retryMaxDelayMs: 300,
    });
    const error = await failure(() => client.embed(['never']));
    expect(error.code).toBe('EMBEDDING_FAILED');
    expect(error.message).toContain('502');
    expect(api.requests).toHaveLength(4);
    expect(waits).toEqual([100, 200, 300]);
    // A Retry-After beyond the cap waits only the cap.
    api.script({ status: 429, headers: { 'retry-after': '3600' } });
    const capped = embedder(api.baseUrl, { maxRetries: 1, retryMaxDelayMs: 300 });
    await capped.embedder.embed(['soon']);
    expect(capped.waits).toEqual([300]);
  });

  it('times out a request that takes longer than timeoutMs, retries it, and says which setting to change', async () => {
    const api = await server();
    api.script({ delayMs: 1_000 }, { delayMs: 1_000 });
    const { embedder: client, waits } = embedder(api.baseUrl, { timeoutMs: 100, maxRetries: 1, retryBaseDelayMs: 5 });
    const error = await failure(() => client.embed(['slow']));
    expect(error.code).toBe('EMBEDDING_FAILED');
    expect(error.message).toContain('did not answer within 100 ms (embedding.timeoutMs)');
    expect(api.requests).toHaveLength(2);
    expect(waits).toEqual([5]);
    // Then a prompt answer succeeds.
    expect(await client.embed(['fast'])).toHaveLength(1);
  });

  it('stops at once when the caller aborts, without retrying', async () => {
    const api = await server();
    api.script({ delayMs: 2_000 });
    const { embedder: client } = embedder(api.baseUrl, { maxRetries: 5 });
    const controller = new AbortController();
    const pending = client.embed(['cancel me'], { signal: controller.signal });
    // Abort while the server holds the request.
    while (api.requests.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    controller.abort(new Error('user cancelled'));
    await expect(pending).rejects.toThrow('user cancelled');
    expect(api.requests).toHaveLength(1);
    // An already aborted signal sends nothing.
    await expect(client.embed(['never sent'], { signal: controller.signal })).rejects.toThrow('user cancelled');
    expect(api.requests).toHaveLength(1);
  });

  it('refuses vectors of another length than embedding.dimensions with a clear CONFIG_INVALID error', async () => {
    const api = await server({ dimensions: 12 });
    const { embedder: client } = embedder(api.baseUrl, { dimensions: 8 });
    expect(client.dimensions).toBe(8);
    const error = await failure(() => client.embed(['wrong length']));
    expect(error.code).toBe('CONFIG_INVALID');
    expect(error.message).toContain('returned vectors of 12 numbers, but embedding.dimensions is 8');
    expect(error.message).toContain('Set embedding.dimensions to 12');
  });

  it('refuses answers that do not fit: no data, wrong count, bad index, non-numbers, NaN, mixed lengths, not JSON', async () => {
    const api = await server();
    const { embedder: client } = embedder(api.baseUrl, { maxRetries: 0 });
    const answers: Array<[unknown, string]> = [
      [{ object: 'list' }, 'without a "data" array'],
      [{ data: [] }, 'answered 0 embeddings for 2 texts'],
      [
        {
          data: [
            { index: 0, embedding: [1] },
            { index: 0, embedding: [1] },
          ],
        },
        'invalid index',
      ],
      [
        {
          data: [
            { index: 0, embedding: [1] },
            { index: 7, embedding: [1] },
          ],
        },
        'invalid index',
      ],
      [
        {
          data: [
            { index: 0, embedding: ['1'] },
            { index: 1, embedding: [1] },
          ],
        },
        'not a list of numbers',
      ],
      [
        {
          data: [
            { index: 0, embedding: [] },
            { index: 1, embedding: [1] },
          ],
        },
        'empty',
      ],
      [
        {
          data: [
            { index: 0, embedding: [1, 2] },
            { index: 1, embedding: [1] },
          ],
        },
        'different lengths',
      ],
      ['<html>502 Bad Gateway</html>', 'not JSON'],
    ];
    for (const [body, message] of answers) {
      api.script({ body });
      const error = await failure(() => client.embed(['one', 'two']));
      expect(error.code, message).toBe('EMBEDDING_FAILED');
      expect(error.message, JSON.stringify(body)).toContain(message);
    }
    // JSON cannot carry NaN: a vector with null or a huge exponent is refused too.
    api.script({ body: '{"data":[{"index":0,"embedding":[1e999]},{"index":1,"embedding":[1]}]}' });
    expect((await failure(() => client.embed(['one', 'two']))).message).toContain('not finite');
  });

  it('refuses malformed options and input with clear errors, and sends nothing', async () => {
    const api = await server();
    const bad: Array<Partial<OpenAiCompatibleEmbedderOptions>> = [
      { baseUrl: '' },
      { baseUrl: 'not a url' },
      { baseUrl: 'ftp://example.com/v1' },
      { baseUrl: 'http://user:secret@example.com/v1' },
      { model: '' },
      { batchSize: 0 },
      { batchSize: 1.5 },
      { timeoutMs: -1 },
      { maxRetries: 100 },
      { dimensions: -3 },
    ];
    for (const options of bad) {
      let caught: unknown;
      try {
        new OpenAiCompatibleEmbedder({ baseUrl: api.baseUrl, model: 'test-embed', ...options });
      } catch (error) {
        caught = error;
      }
      expect(caught, JSON.stringify(options)).toBeInstanceOf(EngramError);
      expect((caught as EngramError).code).toBe('CONFIG_INVALID');
    }
    const { embedder: client } = embedder(api.baseUrl);
    for (const input of [null, 'text', [1, 2], [null], [{}]]) {
      const error = await failure(() => client.embed(input as never));
      expect(error.code).toBe('INVALID_INPUT');
    }
    expect(api.requests).toHaveLength(0);
  });

  it('sends hostile text (NUL, emoji, quotes, 100 KB) as JSON data, not as anything else', async () => {
    const api = await server();
    const { embedder: client } = embedder(api.baseUrl);
    const texts = ['zero\u0000byte', '🙂 emoji', '"}], "model": "other', 'word '.repeat(20_000)];
    const vectors = await client.embed(texts);
    expect(vectors).toHaveLength(4);
    expect((api.requests[0]!.body as { input: string[]; model: string }).input).toEqual(texts);
    expect((api.requests[0]!.body as { model: string }).model).toBe('test-embed');
  });
});

describe('createEmbedder', () => {
  it('returns no embedder by default: nothing leaves the machine unless configured', () => {
    expect(DEFAULT_SETTINGS.embedding.provider).toBe('none');
    expect(createEmbedder(DEFAULT_SETTINGS)).toBeUndefined();
  });

  it('builds the OpenAI-compatible embedder from settings, and refuses an unknown provider or a missing base URL', async () => {
    const api = await server();
    const settings = {
      embedding: {
        ...DEFAULT_SETTINGS.embedding,
        provider: 'openai-compatible' as const,
        baseUrl: api.baseUrl,
        model: 'test-embed',
        dimensions: 8,
      },
    };
    const created = createEmbedder(settings);
    expect(created?.model).toBe('test-embed');
    expect(created?.dimensions).toBe(8);
    expect(await created!.embed(['configured'])).toHaveLength(1);
    for (const embedding of [
      { ...settings.embedding, baseUrl: '' },
      { ...settings.embedding, provider: 'mystery' as never },
    ]) {
      let caught: unknown;
      try {
        createEmbedder({ embedding });
      } catch (error) {
        caught = error;
      }
      expect((caught as EngramError).code).toBe('CONFIG_INVALID');
    }
  });
});
