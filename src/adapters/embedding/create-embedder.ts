import { EngramError } from '../../kernel/errors.js';
import type { Settings } from '../../kernel/settings.js';
import type { Embedder } from '../../contracts/embedder.js';
import { OpenAiCompatibleEmbedder } from './openai-compatible-embedder.js';

/** What the factory may be given besides settings: a fetch to use instead of the global one. */
export interface CreateEmbedderOptions {
  fetch?: typeof fetch;
}

/**
 * The embedder the settings configure, or undefined for provider `none` (the default): nothing
 * leaves the machine unless an embedder is configured.
 */
export function createEmbedder(
  settings: Pick<Settings, 'embedding'>,
  options: CreateEmbedderOptions = {},
): Embedder | undefined {
  const embedding = settings.embedding;
  switch (embedding.provider) {
    case 'none':
      return undefined;
    case 'openai-compatible':
      if (embedding.baseUrl === '') {
        throw new EngramError(
          'CONFIG_INVALID',
          'embedding.provider is openai-compatible but embedding.baseUrl is empty: set ENGRAM_EMBEDDING_BASE_URL (e.g. http://localhost:11434/v1).',
        );
      }
      return new OpenAiCompatibleEmbedder({
        baseUrl: embedding.baseUrl,
        model: embedding.model,
        apiKey: embedding.apiKey,
        dimensions: embedding.dimensions,
        batchSize: embedding.batchSize,
        timeoutMs: embedding.timeoutMs,
        maxRetries: embedding.maxRetries,
        retryBaseDelayMs: embedding.retryBaseDelayMs,
        retryMaxDelayMs: embedding.retryMaxDelayMs,
        ...(options.fetch && { fetch: options.fetch }),
      });
    default:
      throw new EngramError(
        'CONFIG_INVALID',
        `Unknown embedding.provider ${JSON.stringify(String(embedding.provider).slice(0, 40))}: use none or openai-compatible.`,
      );
  }
}
