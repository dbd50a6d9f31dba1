import { EngramError } from '../../kernel/errors.js';

export interface CheckBaseUrlOptions {
  /** The setting (or settings) it came from, named in errors: `embedding.baseUrl`, `ANTHROPIC_BASE_URL or model.baseUrl`. */
  setting: string;
  /** What a good value looks like, for the error. */
  example: string;
  /** Used when the value is absent or empty; without one, a base URL is required. */
  fallback?: string;
  /** Where credentials go instead of the URL, for the error: `the API key`, `embedding.apiKey`. */
  keySetting: string;
}

/**
 * An API root checked and normalised the same way for every HTTP client: http(s), no credentials,
 * query or fragment in it (they would be sent to every path below it, or lost), no trailing slash,
 * so `${baseUrl}/embeddings` and the SDKs' paths join cleanly. CONFIG_INVALID otherwise.
 */
export function checkBaseUrl(value: unknown, options: CheckBaseUrlOptions): string {
  if ((value === undefined || value === '') && options.fallback !== undefined) return options.fallback;
  let url: URL | undefined;
  try {
    url = typeof value === 'string' ? new URL(value) : undefined;
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    throw new EngramError(
      'CONFIG_INVALID',
      `Invalid ${options.setting} ${JSON.stringify(String(value).slice(0, 120))}: an http(s) URL such as ${options.example}.`,
    );
  }
  if (url.username !== '' || url.password !== '') {
    throw new EngramError(
      'CONFIG_INVALID',
      `${options.setting} must not carry credentials; set ${options.keySetting} instead.`,
    );
  }
  if (url.search !== '' || url.hash !== '')
    throw new EngramError('CONFIG_INVALID', `${options.setting} must not carry a query or fragment.`);
  return url.href.replace(/\/+$/, '');
}

/** Where a URL points, for messages: origin and path, never credentials. */
export function describeEndpoint(baseUrl: string): string {
  const url = new URL(baseUrl);
  return `${url.origin}${url.pathname === '/' ? '' : url.pathname}`;
}
