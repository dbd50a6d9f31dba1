import { expect } from 'vitest';
import type { LanguageModelRequest } from '../contracts/language-model.js';
import { WEATHER_TOOL, expectEngramError } from './language-model-suite-exchange.js';
import type { LanguageModelSuiteCase } from './language-model-suite-case.js';

const ask = (text: string, extra: Partial<LanguageModelRequest> = {}): LanguageModelRequest => ({
  messages: [{ role: 'user', content: text }],
  maxOutputTokens: 64,
  ...extra,
});

/** Resolves once the server has received `count` requests (the request is in flight). */
async function received(server: { requests: unknown[] }, count: number): Promise<void> {
  while (server.requests.length < count) await new Promise((resolve) => setTimeout(resolve, 5));
}

export const languageModelErrorCases: readonly LanguageModelSuiteCase[] = [
  {
    name: 'retries a 429, waiting as long as Retry-After says, then succeeds',
    async run({ server, model, waits }) {
      server.script({ error: { kind: 'rate_limit', retryAfter: 2 } }, { message: { text: 'made it' } });
      const response = await model().generate(ask('Hi'));
      expect(response.text).toBe('made it');
      expect(server.requests).toHaveLength(2);
      expect(waits).toEqual([2_000]);
    },
  },
  {
    name: 'retries overloaded and 5xx answers with exponential backoff and jitter',
    async run({ server, model, waits }) {
      server.script(
        { error: { kind: 'overloaded' } },
        { error: { kind: 'server' } },
        { message: { text: 'recovered' } },
      );
      const response = await model({ maxRetries: 3, retryBaseDelayMs: 100, random: () => 0.5 }).generate(ask('Hi'));
      expect(response.text).toBe('recovered');
      expect(server.requests).toHaveLength(3);
      // Half the delay fixed, half jitter (0.5 here): 100 ms → 75, then 200 ms → 150.
      expect(waits).toEqual([75, 150]);
    },
  },
  {
    name: 'gives up after maxRetries: 5xx is MODEL_UNAVAILABLE, 429 is MODEL_RATE_LIMITED, each saying how many attempts',
    async run({ server, model }) {
      server.script({ error: { kind: 'server' } }, { error: { kind: 'server' } }, { error: { kind: 'unavailable' } });
      const down = await expectEngramError(model({ maxRetries: 2 }).generate(ask('Hi')), 'MODEL_UNAVAILABLE');
      expect(down.details).toMatchObject({ status: 503, attempts: 3 });
      expect(server.requests).toHaveLength(3);
      server.script({ error: { kind: 'rate_limit' } }, { error: { kind: 'rate_limit' } });
      const limited = await expectEngramError(model({ maxRetries: 1 }).generate(ask('Hi')), 'MODEL_RATE_LIMITED');
      expect(limited.details).toMatchObject({ status: 429, attempts: 2 });
      expect(server.requests).toHaveLength(5);
    },
  },
  {
    name: 'does not retry before the server allows it: a Retry-After beyond retryMaxDelayMs ends the retries',
    async run({ server, model, waits }) {
      server.script({ error: { kind: 'rate_limit', retryAfter: 120 } }, { message: { text: 'too soon' } });
      const error = await expectEngramError(
        model({ retryMaxDelayMs: 10_000 }).generate(ask('Hi')),
        'MODEL_RATE_LIMITED',
      );
      expect(error.details).toMatchObject({ retryAfterMs: 120_000 });
      expect(server.requests).toHaveLength(1);
      expect(waits).toEqual([]);
    },
  },
  {
    name: 'refuses a wrong key with MODEL_AUTH at once, and never shows the key',
    async run({ server, model, apiKey }) {
      const wrongKey = 'sk-wrong-key-that-must-stay-secret-42';
      const error = await expectEngramError(model({ apiKey: wrongKey }).generate(ask('Hi')), 'MODEL_AUTH');
      expect(server.requests).toHaveLength(1);
      expect(error.message).toMatch(/API key/);
      // A server that echoes the key in its message: engram still never shows it.
      server.script({ error: { kind: 'auth', message: `The key ${apiKey} was revoked (Bearer ${apiKey}).` } });
      const echoed = await expectEngramError(model().generate(ask('Hi')), 'MODEL_AUTH');
      for (const shown of [error, echoed]) {
        const everything = `${shown.message} ${JSON.stringify(shown.details)} ${String(shown.stack)}`;
        expect(everything).not.toContain(wrongKey);
        expect(everything).not.toContain(apiKey);
      }
      expect(echoed.message).toContain('[redacted]');
      expect(server.requests).toHaveLength(2);
    },
  },
  {
    name: 'does not retry a refused request: 400 and 404 are MODEL_REQUEST_INVALID',
    async run({ server, model }) {
      server.script(
        { error: { kind: 'invalid_request', message: 'messages.0.content: prompt is too long' } },
        { error: { kind: 'not_found' } },
      );
      const refused = await expectEngramError(model().generate(ask('Hi')), 'MODEL_REQUEST_INVALID');
      expect(refused.message).toMatch(/prompt is too long/);
      const missing = await expectEngramError(model().generate(ask('Hi')), 'MODEL_REQUEST_INVALID');
      expect(missing.message).toMatch(/base URL and the model id/);
      expect(server.requests).toHaveLength(2);
    },
  },
  {
    name: 'times out a server that never answers with MODEL_TIMEOUT, within the call budget',
    async run({ server, model }) {
      server.script({ hang: true }, { hang: true });
      const error = await expectEngramError(
        model({ maxRetries: 3 }).generate(ask('Hi', { timeoutMs: 300 })),
        'MODEL_TIMEOUT',
      );
      expect(error.details).toMatchObject({ timeoutMs: 300 });
      // The budget covers the whole call: no second try once it is spent.
      expect(server.requests).toHaveLength(1);
      const fromOptions = await expectEngramError(model({ timeoutMs: 200 }).generate(ask('Hi')), 'MODEL_TIMEOUT');
      expect(fromOptions.details).toMatchObject({ timeoutMs: 200 });
    },
  },
  {
    name: 'aborts with MODEL_ABORTED: before sending, while the answer is awaited, and during a backoff wait',
    async run({ server, model }) {
      const early = new AbortController();
      early.abort();
      await expectEngramError(model().generate(ask('Hi', { signal: early.signal })), 'MODEL_ABORTED');
      expect(server.requests).toHaveLength(0);

      server.script({ hang: true });
      const waiting = new AbortController();
      const pending = model().generate(ask('Hi', { signal: waiting.signal }));
      await received(server, 1);
      waiting.abort(new Error('user pressed Escape'));
      const error = await expectEngramError(pending, 'MODEL_ABORTED');
      expect((error.cause as Error).message).toBe('user pressed Escape');

      // A real sleep this time: the abort must cut a 30 s Retry-After short.
      server.script({ error: { kind: 'rate_limit', retryAfter: 30 } });
      const backingOff = new AbortController();
      const sleeping = model({ sleep: undefined, retryMaxDelayMs: 60_000, timeoutMs: 120_000 }).generate(
        ask('Hi', { signal: backingOff.signal }),
      );
      await received(server, 2);
      await new Promise((resolve) => setTimeout(resolve, 50));
      backingOff.abort();
      await expectEngramError(sleeping, 'MODEL_ABORTED');
      expect(server.requests).toHaveLength(2);
    },
  },
  {
    name: 'answers malformed bodies with MODEL_OUTPUT_INVALID and does not retry them',
    async run({ server, model }) {
      server.script(
        { status: 200, body: '{"id": "msg_01", "content": [{"type": "te' },
        { status: 200, body: { hello: 'world' } },
        { status: 200, body: 'plain text, not JSON', headers: { 'content-type': 'text/plain' } },
        { status: 200, body: [] },
      );
      const underTest = model();
      for (let index = 0; index < 4; index += 1)
        await expectEngramError(underTest.generate(ask('Hi')), 'MODEL_OUTPUT_INVALID');
      expect(server.requests).toHaveLength(4);
    },
  },
  {
    name: 'retries a dropped connection, and reports an unreachable server as MODEL_UNAVAILABLE',
    async run({ server, model, waits }) {
      server.script({ destroy: true }, { message: { text: 'second try' } });
      expect((await model().generate(ask('Hi'))).text).toBe('second try');
      expect(server.requests).toHaveLength(2);
      expect(waits).toHaveLength(1);
      const url = server.url;
      await server.close();
      const unreachable = await expectEngramError(model({ maxRetries: 1 }).generate(ask('Hi')), 'MODEL_UNAVAILABLE');
      expect(unreachable.message).toContain(new URL(url).host);
      expect(unreachable.message).toMatch(/could not be reached/);
    },
  },
  {
    name: 'refuses an oversized request (413) with MODEL_REQUEST_INVALID, without retrying',
    server: { maxBodyBytes: 64 * 1024 },
    async run({ server, model }) {
      const error = await expectEngramError(model().generate(ask('y'.repeat(200 * 1024))), 'MODEL_REQUEST_INVALID');
      expect(error.details).toMatchObject({ status: 413 });
      expect(error.message).toMatch(/shorter prompt/);
      expect(server.requests).toHaveLength(1);
    },
  },
  {
    name: 'refuses malformed requests with MODEL_REQUEST_INVALID before sending anything',
    async run({ server, model }) {
      const underTest = model();
      const bad: unknown[] = [
        null,
        'hello',
        { messages: [], maxOutputTokens: 10 },
        { messages: [{ role: 'system', content: 'x' }], maxOutputTokens: 10 },
        { messages: [{ role: 'user', content: 42 }], maxOutputTokens: 10 },
        { messages: [{ role: 'user', content: [] }], maxOutputTokens: 10 },
        { messages: [{ role: 'user', content: 'x' }], maxOutputTokens: 0 },
        { messages: [{ role: 'user', content: 'x' }], maxOutputTokens: 1.5 },
        { messages: [{ role: 'user', content: 'x' }], maxOutputTokens: Number.NaN },
        { messages: [{ role: 'user', content: 'x' }], maxOutputTokens: 10, responseFormat: 'yaml' },
        {
          messages: [{ role: 'user', content: [{ type: 'tool_result', toolUseId: 'nope', content: 'r' }] }],
          maxOutputTokens: 10,
        },
        {
          messages: [{ role: 'user', content: [{ type: 'tool_use', id: 't', name: 'get_weather', input: {} }] }],
          maxOutputTokens: 10,
        },
        { messages: [{ role: 'user', content: [{ type: 'image', data: 'x' }] }], maxOutputTokens: 10 },
        {
          messages: [{ role: 'user', content: 'x' }],
          maxOutputTokens: 10,
          tools: [{ ...WEATHER_TOOL, name: 'bad name!' }],
        },
        { messages: [{ role: 'user', content: 'x' }], maxOutputTokens: 10, tools: [WEATHER_TOOL, WEATHER_TOOL] },
        {
          messages: [{ role: 'user', content: 'x' }],
          maxOutputTokens: 10,
          tools: [{ ...WEATHER_TOOL, inputSchema: { type: 'string' } }],
        },
        {
          messages: [{ role: 'user', content: 'x' }],
          maxOutputTokens: 10,
          tools: [WEATHER_TOOL],
          toolChoice: { name: 'other' },
        },
        { messages: [{ role: 'user', content: 'x' }], maxOutputTokens: 10, toolChoice: 'any' },
        { messages: [{ role: 'user', content: 'x' }], maxOutputTokens: 10, temperature: 9 },
        { messages: [{ role: 'user', content: 'x' }], maxOutputTokens: 10, timeoutMs: -1 },
        { messages: [{ role: 'user', content: 'x' }], maxOutputTokens: 10, system: [{ text: 1 }] },
        { messages: [{ role: 'user', content: 'x' }], maxOutputTokens: 10, signal: 'stop' },
      ];
      for (const request of bad) {
        const error = await expectEngramError(
          underTest.generate(request as LanguageModelRequest),
          'MODEL_REQUEST_INVALID',
        );
        expect(error.message).toMatch(/Nothing was sent/);
      }
      expect(server.requests).toHaveLength(0);
    },
  },
];
