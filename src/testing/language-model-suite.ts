import { describe, expect, it } from 'vitest';
import type { LanguageModel } from '../contracts/language-model.js';
import { languageModelErrorCases } from './language-model-suite-errors.js';
import { languageModelExchangeCases } from './language-model-suite-exchange.js';
import { languageModelStreamingCases } from './language-model-suite-streaming.js';
import type { LanguageModelServer } from './loopback-model-server.js';

/** How the suite configures a server for one case. */
export interface SuiteServerOptions {
  /** The key the server requires (401 otherwise). */
  apiKey?: string;
  /** Largest request body the server accepts (413 beyond). */
  maxBodyBytes?: number;
  /** Shortest prefix its simulated prompt cache keeps. */
  minCacheableTokens?: number;
}

/** How the suite configures the model under test for one case. */
export interface SuiteModelOptions {
  apiKey: string;
  timeoutMs?: number;
  maxRetries?: number;
  retryBaseDelayMs?: number;
  retryMaxDelayMs?: number;
  /** Recording sleep: the suite checks the waits instead of waiting. */
  sleep?: (milliseconds: number, signal?: AbortSignal) => Promise<void>;
  random?: () => number;
}

/** What the provider does beyond the common contract, so the suite asserts the right thing. */
export interface LanguageModelCapabilities {
  /** System blocks marked `cache: true` reach the wire as explicit cache marks (Anthropic), rather than being ignored. */
  explicitCacheMarks: boolean;
  /** The provider reports tokens written to its cache (Anthropic), not only tokens read. */
  reportsCacheWrites: boolean;
  /** The provider applies `contextEditing` server-side and reports the edits (Anthropic); others leave it out. */
  serverContextEditing?: boolean;
}

export interface LanguageModelSuiteOptions {
  /** Names the implementation in test titles. */
  name: string;
  /** Starts a fresh loopback server speaking the provider's wire protocol. */
  startServer: (options: SuiteServerOptions) => Promise<LanguageModelServer>;
  /** The model under test, talking to the server at `serverUrl` through the provider's real SDK. */
  createModel: (serverUrl: string, options: SuiteModelOptions) => LanguageModel;
  capabilities: LanguageModelCapabilities;
  /** Cases this implementation cannot pass, by name, each with the reason. */
  skip?: Record<string, string>;
}

/** One case: runs against a fresh server and a factory of models pointed at it. */
export interface LanguageModelSuiteCase {
  name: string;
  server?: SuiteServerOptions;
  timeoutMs?: number;
  run(context: LanguageModelSuiteContext): Promise<void>;
}

export interface LanguageModelSuiteContext {
  server: LanguageModelServer;
  /** A model for this case; its retry waits go to `waits` (no real sleep) unless `sleep` is given. */
  model(options?: Partial<SuiteModelOptions>): LanguageModel;
  /** The backoff waits the models of this case asked for, in order. */
  waits: number[];
  /** The key the server accepts. */
  apiKey: string;
  capabilities: LanguageModelCapabilities;
}

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
