import { EngramError } from '../../kernel/errors.js';
import type { Settings } from '../../kernel/settings.js';
import { DEFAULT_MODEL_IDS, MODEL_PROVIDERS } from '../../kernel/settings-model-rows.js';
import type { LanguageModel } from '../../contracts/language-model.js';
import { AnthropicLanguageModel } from './anthropic-language-model.js';
import { ClaudeCodeLanguageModel } from './claude-code-language-model.js';
import type { ModelRetryOptions } from './model-call-policy.js';
import { OpenAiCompatibleLanguageModel } from './openai-compatible-language-model.js';

/** What the settings select: a provider with its model ids, endpoint and key, or none (offline) and why. */
export type ModelSelection =
  | { provider: 'none'; reason: string }
  | {
      provider: 'anthropic' | 'openai-compatible' | 'claude-code';
      /** Model id for the main work. */
      model: string;
      /** Cheap model id for side queries (LLM recall selection) and extraction. */
      sideModel: string;
      /** '' means the provider's public API. */
      baseUrl: string;
      /** '' means no credentials are sent (local servers); always '' for claude-code (it uses Claude Code's login). */
      apiKey: string;
      /** claude-code only: the CLI it runs. */
      command?: string;
      /** Which settings (or environment variables) decided, for `engram config` and notices. */
      chosenBy: string;
    };

export interface CreateLanguageModelOptions {
  /** `main` (default) uses `model.model`; `side` uses `model.sideModel`, the cheap one for side queries and extraction. */
  purpose?: 'main' | 'side';
  /** Told once per call when no model is configured (engram then runs offline). */
  onNotice?: (notice: string) => void;
  /** Replaces global fetch (tests, proxies). */
  fetch?: typeof fetch;
  /** Replace the retry waits, jitter and clock (tests). */
  sleep?: ModelRetryOptions['sleep'];
  random?: ModelRetryOptions['random'];
  now?: ModelRetryOptions['now'];
}

/** The notice of offline mode: what still works, and how to configure a model. */
export const MODEL_OFFLINE_NOTICE =
  'model-offline: no language model is configured, so engram runs offline: storage, full-text recall, explicit "remember" and transcripts work; ' +
  'LLM recall selection and extraction by a model are off. Set ANTHROPIC_API_KEY, or OPENAI_API_KEY / OPENAI_BASE_URL (Ollama, vLLM, LM Studio), to use a model.';

/**
 * Which model the settings select, without creating anything. `auto` (the default) picks Anthropic
 * when ANTHROPIC_API_KEY (model.anthropicApiKey) is set, else OpenAI-compatible when OPENAI_API_KEY
 * or OPENAI_BASE_URL is set, else claude-code inside Claude Code (CLAUDECODE, set in its hooks), else none. `model.apiKey` and `model.baseUrl` belong to the provider
 * that model.provider names and override its specific values; under `auto` they are refused,
 * since pairing them with a provider guessed from the environment could send one provider's key
 * to another's server. CONFIG_INVALID when the settings contradict themselves.
 */
export function selectLanguageModel(settings: Pick<Settings, 'model'>): ModelSelection {
  const model = settings.model;
  const provider = model.provider as string;
  if (!(MODEL_PROVIDERS as readonly string[]).includes(provider)) {
    throw new EngramError(
      'CONFIG_INVALID',
      `Unknown model.provider ${JSON.stringify(String(provider).slice(0, 40))}: use auto, anthropic, openai-compatible, claude-code or none.`,
    );
  }
  if (provider === 'none') return { provider: 'none', reason: 'model.provider is none (ENGRAM_MODEL_PROVIDER)' };
  if (provider === 'anthropic') return anthropicSelection(model, 'model.provider anthropic');
  if (provider === 'openai-compatible') {
    const selection = openAiSelection(model, 'model.provider openai-compatible');
    if (typeof selection === 'string') throw new EngramError('CONFIG_INVALID', selection);
    return selection;
  }
  if (provider === 'claude-code') return claudeCodeSelection(model, 'model.provider claude-code');
  if (model.apiKey !== '' || model.baseUrl !== '') throw new EngramError('CONFIG_INVALID', genericUnderAuto(model));
  if (model.anthropicApiKey !== '') return anthropicSelection(model, 'ANTHROPIC_API_KEY (model.anthropicApiKey)');
  if (model.openaiApiKey !== '' || model.openaiBaseUrl !== '') {
    const selection = openAiSelection(
      model,
      model.openaiApiKey !== '' ? 'OPENAI_API_KEY (model.openaiApiKey)' : 'OPENAI_BASE_URL (model.openaiBaseUrl)',
    );
    // Found in the environment, perhaps set for another tool: a missing model id degrades to offline, said in the notice.
    return typeof selection === 'string' ? { provider: 'none', reason: selection } : selection;
  }
  // Inside Claude Code (its hooks, and the workers they start) with no key: the user's own Claude Code login.
  if (model.insideClaudeCode !== '' && model.insideClaudeCode !== '0')
    return claudeCodeSelection(model, 'CLAUDECODE (running inside Claude Code, no model key set)');
  const unused =
    model.anthropicBaseUrl !== ''
      ? ' (ANTHROPIC_BASE_URL is set without ANTHROPIC_API_KEY: set ENGRAM_MODEL_PROVIDER=anthropic to use it without a key)'
      : '';
  return { provider: 'none', reason: `no model key or base URL is set${unused}` };
}

/**
 * The LanguageModel the settings configure, or undefined when none is (engram runs offline, and
 * `onNotice` is told so once). Nothing leaves the machine unless a provider is configured; creating
 * a model does no I/O (the SDK loads on the first call).
 * @example
 * const model = createLanguageModel(loadSettings().settings, { purpose: 'side', onNotice: console.warn });
 */
export function createLanguageModel(
  settings: Pick<Settings, 'model'>,
  options: CreateLanguageModelOptions = {},
): LanguageModel | undefined {
  const selection = selectLanguageModel(settings);
  if (selection.provider === 'none') {
    options.onNotice?.(`${MODEL_OFFLINE_NOTICE} (${selection.reason})`);
    return undefined;
  }
  const model = settings.model;
  if (selection.provider === 'claude-code') {
    return new ClaudeCodeLanguageModel({
      model: options.purpose === 'side' ? selection.sideModel : selection.model,
      ...(selection.command !== undefined && { command: selection.command }),
      timeoutMs: model.timeoutMs,
    });
  }
  const common = {
    model: options.purpose === 'side' ? selection.sideModel : selection.model,
    ...(selection.apiKey !== '' && { apiKey: selection.apiKey }),
    ...(selection.baseUrl !== '' && { baseUrl: selection.baseUrl }),
    timeoutMs: model.timeoutMs,
    maxRetries: model.maxRetries,
    retryBaseDelayMs: model.retryBaseDelayMs,
    retryMaxDelayMs: model.retryMaxDelayMs,
    ...(options.fetch && { fetch: options.fetch }),
    ...(options.sleep && { sleep: options.sleep }),
    ...(options.random && { random: options.random }),
    ...(options.now && { now: options.now }),
  };
  return selection.provider === 'anthropic'
    ? new AnthropicLanguageModel(common)
    : new OpenAiCompatibleLanguageModel(common);
}

/**
 * Why model.apiKey / model.baseUrl cannot be used under `auto`: they name no API, and the provider
 * auto would pick comes from other settings (often keys in the environment for other tools).
 */
function genericUnderAuto(model: Settings['model']): string {
  const given = [
    model.baseUrl !== '' && 'model.baseUrl (ENGRAM_MODEL_BASE_URL)',
    model.apiKey !== '' && 'model.apiKey (ENGRAM_MODEL_API_KEY)',
  ]
    .filter(Boolean)
    .join(' and ');
  const found = [
    model.anthropicApiKey !== '' && 'ANTHROPIC_API_KEY',
    model.anthropicBaseUrl !== '' && 'ANTHROPIC_BASE_URL',
    model.openaiApiKey !== '' && 'OPENAI_API_KEY',
    model.openaiBaseUrl !== '' && 'OPENAI_BASE_URL',
  ].filter(Boolean);
  const environment =
    found.length > 0
      ? `; ${found.join(', ')} ${found.length === 1 ? 'is' : 'are'} also set, and engram will not pair a key with a server it was not given for`
      : '';
  return (
    `${given} ${model.baseUrl !== '' && model.apiKey !== '' ? 'are' : 'is'} set but model.provider is auto, so engram cannot tell which API ${model.baseUrl !== '' && model.apiKey !== '' ? 'they belong' : 'it belongs'} to${environment}. ` +
    "Set ENGRAM_MODEL_PROVIDER (model.provider) to anthropic or openai-compatible, or use the provider's own settings (ANTHROPIC_BASE_URL, OPENAI_BASE_URL) instead."
  );
}

function claudeCodeSelection(model: Settings['model'], chosenBy: string): ModelSelection {
  if (model.apiKey !== '' || model.baseUrl !== '') {
    throw new EngramError(
      'CONFIG_INVALID',
      "model.apiKey / model.baseUrl do not apply to model.provider claude-code: it runs the claude CLI with the user's own Claude Code login. Unset them, or choose anthropic or openai-compatible.",
    );
  }
  const defaults = DEFAULT_MODEL_IDS['claude-code'];
  return {
    provider: 'claude-code',
    model: model.model || defaults.main,
    sideModel: model.sideModel || defaults.side,
    baseUrl: '',
    apiKey: '',
    command: model.claudeCodeCommand || 'claude',
    chosenBy,
  };
}

function anthropicSelection(model: Settings['model'], chosenBy: string): ModelSelection {
  const apiKey = model.apiKey || model.anthropicApiKey;
  const baseUrl = model.baseUrl || model.anthropicBaseUrl;
  if (apiKey === '' && baseUrl === '') {
    throw new EngramError(
      'CONFIG_INVALID',
      'model.provider is anthropic but no key is set: set ANTHROPIC_API_KEY (or model.apiKey), or ANTHROPIC_BASE_URL for a server that needs none.',
    );
  }
  const defaults = DEFAULT_MODEL_IDS.anthropic;
  const main = model.model || defaults.main;
  return { provider: 'anthropic', model: main, sideModel: model.sideModel || defaults.side, baseUrl, apiKey, chosenBy };
}

/** The OpenAI-compatible selection, or why it cannot be made (a message saying what to set). */
function openAiSelection(model: Settings['model'], chosenBy: string): ModelSelection | string {
  const apiKey = model.apiKey || model.openaiApiKey;
  const baseUrl = model.baseUrl || model.openaiBaseUrl;
  if (apiKey === '' && baseUrl === '') {
    return 'model.provider is openai-compatible but neither a key nor a base URL is set: set OPENAI_API_KEY, or OPENAI_BASE_URL (e.g. http://localhost:11434/v1 for Ollama).';
  }
  if (isOpenAi(baseUrl)) {
    const defaults = DEFAULT_MODEL_IDS['openai-compatible'];
    return {
      provider: 'openai-compatible',
      model: model.model || defaults.main,
      sideModel: model.sideModel || defaults.side,
      baseUrl,
      apiKey,
      chosenBy,
    };
  }
  // Another server (Ollama, vLLM, LM Studio) serves models engram cannot guess.
  if (model.model === '')
    return `no model id for the OpenAI-compatible server at ${safeOrigin(baseUrl)}: set ENGRAM_MODEL (model.model) to a model it serves, e.g. llama3.1`;
  return {
    provider: 'openai-compatible',
    model: model.model,
    sideModel: model.sideModel || model.model,
    baseUrl,
    apiKey,
    chosenBy,
  };
}

function isOpenAi(baseUrl: string): boolean {
  if (baseUrl === '') return true;
  try {
    return new URL(baseUrl).hostname === 'api.openai.com';
  } catch {
    return false;
  }
}

function safeOrigin(baseUrl: string): string {
  try {
    return new URL(baseUrl).origin;
  } catch {
    return JSON.stringify(baseUrl.slice(0, 80));
  }
}
