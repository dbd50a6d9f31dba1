import { describe, expect, it } from 'vitest';
import { languageModelErrorCases } from './language-model-suite-errors.js';
import { languageModelExchangeCases } from './language-model-suite-exchange.js';
import { languageModelStreamingCases } from './language-model-suite-streaming.js';
import type { LanguageModelSuiteCase, LanguageModelSuiteOptions } from './language-model-suite-case.js';

const API_KEY = 'sk-suite-0123456789abcdef';

/**
 * Registers the LanguageModel conformance suite with vitest: every provider implementation runs
 * it against its loopback server through its real SDK. Tool-use round trips, system prompts and
 * cache marks, JSON output, usage with cache fields, retries (429 with Retry-After, 5xx, 529),
 * timeouts, aborts, authentication, malformed answers and hostile input.
 * @example
 * runLanguageModelSuite({
 *   name: 'anthropic',
 *   startServer: (options) => startAnthropicMessagesServer(options),
 *   createModel: (url, options) => new AnthropicLanguageModel({ model: 'claude-haiku-5-5', baseUrl: url, ...options }),
 *   capabilities: { explicitCacheMarks: true, reportsCacheWrites: true },
 * });
 */
export function runLanguageModelSuite(options: LanguageModelSuiteOptions): void {
  const groups = [
    { title: 'exchange', cases: languageModelExchangeCases },
    { title: 'failures', cases: languageModelErrorCases },
    { title: 'streaming and context editing', cases: languageModelStreamingCases },
  ];
  const names = new Set(groups.flatMap((group) => group.cases.map((suiteCase) => suiteCase.name)));
  const skip = options.skip ?? {};
  describe(`LanguageModel conformance: ${options.name}`, () => {
    it('skips only cases that exist, each with a reason', () => {
      expect(
        Object.keys(skip).filter((name) => !names.has(name)),
        'skip names unknown cases',
      ).toEqual([]);
      expect(
        Object.keys(skip).filter((name) => !/\S/.test(skip[name] ?? '')),
        'skipped cases without a reason',
      ).toEqual([]);
    });
    for (const group of groups) {
      describe(group.title, () => {
        for (const suiteCase of group.cases) {
          const reason = Object.hasOwn(skip, suiteCase.name) ? skip[suiteCase.name] : undefined;
          if (reason !== undefined) it.skip(`${suiteCase.name} [skipped: ${reason}]`, () => {});
          else it(suiteCase.name, () => runCase(options, suiteCase), suiteCase.timeoutMs ?? 20_000);
        }
      });
    }
  });
}

async function runCase(options: LanguageModelSuiteOptions, suiteCase: LanguageModelSuiteCase): Promise<void> {
  const server = await options.startServer({ apiKey: API_KEY, ...suiteCase.server });
  const waits: number[] = [];
  const recordingSleep = async (milliseconds: number): Promise<void> => {
    waits.push(milliseconds);
  };
  try {
    await suiteCase.run({
      server,
      waits,
      apiKey: API_KEY,
      capabilities: options.capabilities,
      model: (overrides = {}) =>
        options.createModel(server.url, {
          apiKey: API_KEY,
          timeoutMs: 10_000,
          maxRetries: 2,
          retryBaseDelayMs: 100,
          retryMaxDelayMs: 5_000,
          sleep: recordingSleep,
          random: () => 0.5,
          ...overrides,
        }),
    });
  } finally {
    await server.close();
  }
}
