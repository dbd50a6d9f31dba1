import { EngramError } from '../../kernel/errors.js';
import type { Settings } from '../../kernel/settings.js';
import { DEFAULT_MODEL_IDS } from '../../kernel/settings-model-rows.js';
import { selectLanguageModel } from '../../adapters/models/create-language-model.js';

/** The wrapped client's own provider, where its calls go and with which key (read off the SDK client). */
export interface WrappedClientModel {
  /** `anthropic`: an @anthropic-ai/sdk client or an AI SDK Anthropic model; `openai`: the openai client or an AI SDK OpenAI model. */
  provider: 'anthropic' | 'openai';
  /** The client's base URL; undefined when it cannot be read (the AI SDK's providers keep it private). */
  baseUrl?: string;
  /** The client's API key; undefined when it cannot be read. */
  apiKey?: string;
  /** Where the model was read from, for the event and `engram status` (`the wrapped OpenAI client`). */
  from: string;
}

/** The model extraction uses for a wrapped client, or why there is none. */
export type ExtractionModelChoice =
  | {
      provider: 'anthropic' | 'openai-compatible' | 'claude-code';
      model: string;
      /** The API's origin (never its key), for the event and status. */
      endpoint: string;
      chosenBy: string;
      /** The model settings that build it (the thread's spec, with the `side` purpose). */
      settings: Settings['model'];
    }
  | { provider: 'none'; reason: string };

/** The checkpoint where a wrapper notes the model it chose, for `engram status` (another process). */
export const WRAPPER_MODEL_CHECKPOINT = 'with-memory:extraction-model';

const OFFICIAL_HOSTS = { anthropic: 'api.anthropic.com', openai: 'api.openai.com' } as const;

/**
 * The model that extracts memories from a wrapped client's conversations. A provider the settings
 * name (`model.provider`, ENGRAM_MODEL_PROVIDER) wins; under `auto` it is the wrapped client's own
 * provider, with the client's own endpoint and key, and not whichever key the environment holds
 * first: an OpenAI client's turns are extracted by an OpenAI-compatible model. On the provider's
 * own API the model is its cheap side model (`model.sideModel`, else engram's default); on another
 * server (a gateway, Ollama, vLLM) whose models engram cannot guess, `model.sideModel`, else
 * `model.model`, else the model the wrapped calls use. Says why when it cannot choose.
 */
export function chooseExtractionModel(input: {
  settings: Settings['model'];
  client?: WrappedClientModel;
  /** The model the wrapped calls asked for (their `model` parameter). */
  callModel?: string;
}): ExtractionModelChoice {
  const { settings, client } = input;
  if (settings.provider !== 'auto' || !client) {
    try {
      const selection = selectLanguageModel({ model: settings });
      if (selection.provider === 'none') return { provider: 'none', reason: selection.reason };
      return {
        provider: selection.provider,
        model: selection.sideModel,
        endpoint:
          selection.provider === 'claude-code'
            ? `the ${selection.command ?? 'claude'} CLI`
            : origin(selection.baseUrl, selection.provider),
        chosenBy: selection.chosenBy,
        settings: { ...settings, provider: selection.provider, sideModel: selection.sideModel },
      };
    } catch (error) {
      return { provider: 'none', reason: (error as EngramError).message };
    }
  }
  const provider = client.provider === 'anthropic' ? 'anthropic' : 'openai-compatible';
  const baseUrl =
    client.baseUrl ?? (client.provider === 'anthropic' ? settings.anthropicBaseUrl : settings.openaiBaseUrl);
  const apiKey = client.apiKey ?? (client.provider === 'anthropic' ? settings.anthropicApiKey : settings.openaiApiKey);
  const official = isHost(baseUrl, OFFICIAL_HOSTS[client.provider]);
  const model = official
    ? settings.sideModel || DEFAULT_MODEL_IDS[provider].side
    : settings.sideModel || settings.model || input.callModel || '';
  const endpoint = origin(baseUrl, provider);
  if (model === '')
    return {
      provider: 'none',
      reason: `${client.from} calls ${endpoint}, whose models engram cannot guess, and no call named one yet: set ENGRAM_SIDE_MODEL (model.sideModel) to a model it serves`,
    };
  if (official && (apiKey === undefined || apiKey === ''))
    return { provider: 'none', reason: `${client.from} has no API key for ${endpoint}` };
  return {
    provider,
    model,
    endpoint,
    chosenBy: `${client.from} (${official ? "the provider's side model" : 'the model its calls use'})`,
    settings: {
      ...settings,
      provider,
      apiKey: apiKey ?? '',
      baseUrl: baseUrl ?? '',
      // On another server the side model is the one chosen; on the provider's own API, too.
      model: settings.model || model,
      sideModel: model,
    },
  };
}

function isHost(baseUrl: string | undefined, host: string): boolean {
  if (baseUrl === undefined || baseUrl === '') return true;
  try {
    return new URL(baseUrl).hostname === host;
  } catch {
    return false;
  }
}

/** The origin of an API root, or the provider's own API when none is set. */
function origin(baseUrl: string | undefined, provider: 'anthropic' | 'openai-compatible'): string {
  if (baseUrl === undefined || baseUrl === '')
    return provider === 'anthropic' ? 'https://api.anthropic.com' : 'https://api.openai.com';
  try {
    return new URL(baseUrl).origin;
  } catch {
    return JSON.stringify(baseUrl.slice(0, 80));
  }
}
