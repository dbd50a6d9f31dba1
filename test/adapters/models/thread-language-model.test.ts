import { afterEach } from 'vitest';
import { DEFAULT_SETTINGS, type Settings } from '../../../src/kernel/settings.js';
import { ThreadLanguageModel } from '../../../src/adapters/models/thread-language-model.js';
import { startAnthropicMessagesServer } from '../../../src/testing/anthropic-messages-server.js';
import type { SuiteModelOptions } from '../../../src/testing/language-model-suite-case.js';
import { runLanguageModelSuite } from '../../../src/testing/suites.js';

// The model the client wrappers extract with runs in a worker thread (so it never keeps the
// caller's process alive): the same conformance suite as the adapters it runs, requests, answers,
// deltas, aborts and errors crossing the thread. One wire is enough: the thread carries engram's
// own request and answer shapes, whichever adapter it runs (with-memory-extraction-model.test.ts
// runs both through it).
const models: ThreadLanguageModel[] = [];
afterEach(async () => {
  await Promise.all(models.splice(0).map((model) => model.close()));
});

/** Cases whose backoff waits the suite records through a function: it cannot cross into the thread (the adapters' own runs check them). */
const RECORDED_WAITS =
  'its retry waits run in the thread, where the suite cannot record them; the adapter run in this thread checks them';
const skip = Object.fromEntries(
  [
    'retries a 429, waiting as long as Retry-After says, then succeeds',
    'retries overloaded and 5xx answers with exponential backoff and jitter',
    'does not retry before the server allows it: a Retry-After beyond retryMaxDelayMs ends the retries',
    'aborts with MODEL_ABORTED: before sending, while the answer is awaited, and during a backoff wait',
    'retries a dropped connection, and reports an unreachable server as MODEL_UNAVAILABLE',
    'a stream that fails after text was shown is MODEL_UNAVAILABLE at once (not retried, so nothing repeats)',
    'a stream that fails before any text is retried like any overloaded answer or dropped connection',
  ].map((name) => [name, RECORDED_WAITS]),
);

function threadModel(provider: Settings['model']['provider'], url: string, options: SuiteModelOptions) {
  const model = new ThreadLanguageModel({
    settings: {
      ...DEFAULT_SETTINGS.model,
      provider,
      baseUrl: url,
      apiKey: options.apiKey,
      model: provider === 'anthropic' ? 'claude-haiku-5-5' : 'gpt-test',
      sideModel: provider === 'anthropic' ? 'claude-haiku-5-5' : 'gpt-test',
      ...(options.timeoutMs !== undefined && { timeoutMs: options.timeoutMs }),
      ...(options.maxRetries !== undefined && { maxRetries: options.maxRetries }),
      ...(options.retryBaseDelayMs !== undefined && { retryBaseDelayMs: options.retryBaseDelayMs }),
      ...(options.retryMaxDelayMs !== undefined && { retryMaxDelayMs: options.retryMaxDelayMs }),
    },
    purpose: 'side',
  });
  models.push(model);
  return model;
}

runLanguageModelSuite({
  name: 'thread (anthropic)',
  startServer: (options) => startAnthropicMessagesServer(options),
  createModel: (url, options) => threadModel('anthropic', url, options),
  capabilities: { explicitCacheMarks: true, reportsCacheWrites: true, serverContextEditing: true },
  skip,
});
