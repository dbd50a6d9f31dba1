import { EngramError } from '../../kernel/errors.js';
import type { ModelRetryOptions } from './model-call-policy.js';

/** What every model adapter takes besides its provider's own options. */
export interface ModelAdapterOptions extends ModelRetryOptions {
  /** The provider's model id. */
  model: string;
  /** Sent as the provider expects; empty or absent sends no credentials (local servers). */
  apiKey?: string;
  /** The API root; the provider's public API when absent. */
  baseUrl?: string;
  /** Replaces global fetch (tests, proxies). */
  fetch?: typeof fetch;
}

/** The model id, checked: a non-empty string of at most 256 characters without control characters. */
export function checkModelId(value: unknown, hint: string): string {
  if (typeof value !== 'string' || value.trim() === '' || value.length > 256 || /[\u0000-\u001F\u007F]/.test(value)) {
    throw new EngramError('CONFIG_INVALID', `Invalid model id ${JSON.stringify(String(value).slice(0, 80))}: ${hint}`);
  }
  return value;
}

/** The API key, checked: a string without whitespace or control characters (it goes into an HTTP header). */
export function checkApiKey(value: unknown, setting: string): string | undefined {
  if (value === undefined || value === '') return undefined;
  if (typeof value !== 'string' || value.length > 4_096 || /[\s\u0000-\u001F\u007F]/.test(value)) {
    throw new EngramError('CONFIG_INVALID', `${setting} must be a single token without spaces or control characters.`);
  }
  return value;
}
