// The shapes the LanguageModel conformance suite and its case files share: options, capabilities,
// one case and its context. Apart from the runner so the case files depend on it, not on the runner.
import type { LanguageModel } from '../contracts/language-model.js';
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
