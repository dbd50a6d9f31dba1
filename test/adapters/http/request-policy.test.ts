import { describe, expect, it } from 'vitest';
import { OpenAiCompatibleEmbedder } from '../../../src/adapters/embedding/openai-compatible-embedder.js';
import { checkBaseUrl } from '../../../src/adapters/http/base-url.js';
import {
  HttpRequestPolicy,
  HttpStatusError,
  networkReason,
  type AttemptFailure,
  type HttpFailureReport,
  type HttpRequestPolicyOptions,
} from '../../../src/adapters/http/request-policy.js';
import { AnthropicLanguageModel } from '../../../src/adapters/models/anthropic-language-model.js';
import { OpenAiCompatibleLanguageModel } from '../../../src/adapters/models/openai-compatible-language-model.js';
import { EngramError } from '../../../src/kernel/errors.js';

/** A report that keeps what the policy decided, in plain words, so the cases can read it back. */
function recordingReport(): HttpFailureReport & { outcomes: unknown[] } {
  const outcomes: unknown[] = [];
  return {
    outcomes,
    describe: (error): AttemptFailure =>
      error instanceof HttpStatusError
        ? { kind: 'http', status: error.status, headers: error.headers }
        : { kind: 'network', message: networkReason(error) },
    failed: (failure, outcome) => {
      outcomes.push({ failure: failure.kind === 'http' ? failure.status : failure.kind, ...outcome });
      return new EngramError('EMBEDDING_FAILED', `failed: ${failure.kind}`);
    },
    aborted: (signal) => signal?.reason,
    timedOut: (budgetMs) => new EngramError('MODEL_TIMEOUT', `budget ${budgetMs} ms spent`),
  };
}

function policy(options: Partial<HttpRequestPolicyOptions> = {}): { policy: HttpRequestPolicy; waits: number[] } {
  const waits: number[] = [];
  const created = new HttpRequestPolicy({
    maxRetries: 3,
    retryBaseDelayMs: 100,
    retryMaxDelayMs: 1_000,
    sleep: async (milliseconds) => {
      waits.push(milliseconds);
    },
    ...options,
  });
  return { policy: created, waits };
}

/** An attempt that fails with each status in turn (a 2xx returns 'ok'). */
function answers(...statuses: Array<number | { status: number; headers: Record<string, string> }>): {
  attempt: () => Promise<string>;
  tries: () => number;
} {
  let tries = 0;
  return {
    tries: () => tries,
    attempt: async () => {
      const next = statuses[tries++] ?? 200;
      const { status, headers } = typeof next === 'number' ? { status: next, headers: {} } : next;
      if (status < 300) return 'ok';
      throw new HttpStatusError({ status, statusText: '', headers: new Headers(headers) }, '');
    },
  };
}

describe('the shared HTTP request policy', () => {
  it('tries again on 408, 409, 425, 429 and 5xx, never on other 4xx, and gives up after maxRetries', async () => {
    const retried = answers(408, 409, 425, 503);
    const { policy: patient } = policy({ maxRetries: 4, jitter: 'none' });
    expect(await patient.run(retried.attempt, {}, recordingReport())).toBe('ok');
    expect(retried.tries()).toBe(5);

    const refused = answers(400);
    const report = recordingReport();
    await expect(policy().policy.run(refused.attempt, {}, report)).rejects.toThrow('failed: http');
    expect(refused.tries()).toBe(1);
    expect(report.outcomes).toEqual([{ failure: 400, attempts: 1 }]);

    const down = answers(500, 502, 503, 504, 500);
    const exhausted = recordingReport();
    await expect(policy({ maxRetries: 3 }).policy.run(down.attempt, {}, exhausted)).rejects.toThrow(EngramError);
    expect(down.tries()).toBe(4);
    expect(exhausted.outcomes).toEqual([{ failure: 504, attempts: 4 }]);
  });

  it('backs off by doubling up to the cap, with equal jitter unless it is turned off', async () => {
    const plain = policy({ jitter: 'none', retryMaxDelayMs: 300 });
    await plain.policy.run(answers(500, 500, 500).attempt, {}, recordingReport());
    expect(plain.waits).toEqual([100, 200, 300]);
    const jittered = policy({ random: () => 0 });
    await jittered.policy.run(answers(500, 500).attempt, {}, recordingReport());
    expect(jittered.waits).toEqual([50, 100]);
  });

  it('honours Retry-After up to the cap; beyond it, fails and says so, or waits the cap, as configured', async () => {
    const slowDown = { status: 429, headers: { 'retry-after': '3600' } };
    const failing = policy();
    const report = recordingReport();
    await expect(failing.policy.run(answers(slowDown).attempt, {}, report)).rejects.toThrow(EngramError);
    expect(report.outcomes).toEqual([
      {
        failure: 429,
        attempts: 1,
        gaveUp: { reason: 'retry-after-too-long', retryAfterMs: 3_600_000, retryMaxDelayMs: 1_000 },
      },
    ]);
    expect(failing.waits).toEqual([]);

    const waiting = policy({ retryAfterBeyondMax: 'wait-max' });
    expect(
      await waiting.policy.run(
        answers(slowDown, { status: 503, headers: { 'retry-after-ms': '250' } }).attempt,
        {},
        recordingReport(),
      ),
    ).toBe('ok');
    expect(waiting.waits).toEqual([1_000, 250]);
  });

  it('a try that runs past attemptTimeoutMs is tried again; the call budget ending ends the call', async () => {
    const hanging = (signal: AbortSignal): Promise<string> =>
      new Promise((_, reject) => signal.addEventListener('abort', () => reject(new Error('aborted by the policy'))));
    const perTry = policy({ attemptTimeoutMs: 30, maxRetries: 2 });
    const report = recordingReport();
    await expect(perTry.policy.run(hanging, {}, report)).rejects.toThrow('failed: timeout');
    expect(report.outcomes).toEqual([{ failure: 'timeout', attempts: 3 }]);

    const budgeted = policy({ callTimeoutMs: 30, maxRetries: 5 });
    await expect(budgeted.policy.run(hanging, {}, recordingReport())).rejects.toThrow('budget 30 ms spent');
    expect(budgeted.waits).toEqual([]);
    // A call may bring its own budget.
    await expect(budgeted.policy.run(hanging, { timeoutMs: 20 }, recordingReport())).rejects.toThrow(
      'budget 20 ms spent',
    );
  });

  it('stops at once on abort even when the attempt ignores its signal, and lets an EngramError through untried-again', async () => {
    const controller = new AbortController();
    const deaf = (): Promise<string> => new Promise(() => undefined);
    const pending = policy().policy.run(deaf, { signal: controller.signal }, recordingReport());
    controller.abort(new Error('user cancelled'));
    await expect(pending).rejects.toThrow('user cancelled');

    let tries = 0;
    const refusing = async (): Promise<string> => {
      tries += 1;
      throw new EngramError('MODEL_OUTPUT_INVALID', 'not JSON');
    };
    await expect(policy().policy.run(refusing, {}, recordingReport())).rejects.toMatchObject({
      code: 'MODEL_OUTPUT_INVALID',
    });
    expect(tries).toBe(1);
  });

  it('refuses options that are not whole numbers', () => {
    for (const options of [
      { maxRetries: -1 },
      { retryBaseDelayMs: 1.5 },
      { callTimeoutMs: 0 },
      { attemptTimeoutMs: Number.NaN },
    ]) {
      expect(() => policy(options), JSON.stringify(options)).toThrow(
        expect.objectContaining({ code: 'CONFIG_INVALID' }),
      );
    }
  });
});

describe('base URLs, normalised in one place for the models and the embedder', () => {
  it('drops trailing slashes, uses the fallback when empty, and refuses credentials, queries, fragments and other schemes', () => {
    const options = {
      setting: 'embedding.baseUrl',
      example: 'http://localhost:11434/v1',
      keySetting: 'embedding.apiKey',
    };
    expect(checkBaseUrl('http://localhost:11434/v1//', options)).toBe('http://localhost:11434/v1');
    expect(checkBaseUrl('', { ...options, fallback: 'https://api.example.com' })).toBe('https://api.example.com');
    const refusals: Array<[unknown, RegExp]> = [
      ['', /Invalid embedding\.baseUrl/],
      ['ftp://example.com/v1', /http\(s\) URL such as http:\/\/localhost:11434\/v1/],
      ['http://user:secret@example.com/v1', /set embedding\.apiKey instead/],
      ['http://example.com/v1?key=1', /query or fragment/],
      ['http://example.com/v1#top', /query or fragment/],
      [42, /Invalid embedding\.baseUrl/],
    ];
    for (const [value, message] of refusals) {
      expect(() => checkBaseUrl(value, options), String(value)).toThrow(message);
    }
  });

  it('holds for every HTTP client: a base URL with a query is refused by the embedder and both model adapters', () => {
    const url = 'http://127.0.0.1:1/v1?api-version=1';
    const clients = [
      () => new OpenAiCompatibleEmbedder({ baseUrl: url, model: 'embed' }),
      () => new OpenAiCompatibleLanguageModel({ baseUrl: url, model: 'llama3.1' }),
      () => new AnthropicLanguageModel({ baseUrl: url, model: 'claude-haiku-5-5' }),
    ];
    for (const create of clients)
      expect(create).toThrow(
        expect.objectContaining({ code: 'CONFIG_INVALID', message: expect.stringMatching(/query or fragment/) }),
      );
  });
});
