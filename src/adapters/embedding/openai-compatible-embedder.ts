import { EngramError } from '../../kernel/errors.js';
import { DEFAULT_SETTINGS } from '../../kernel/settings.js';
import type { EmbedOptions, Embedder } from '../../contracts/embedder.js';
import { abortableSleep } from '../http/abortable-sleep.js';

export interface OpenAiCompatibleEmbedderOptions {
  /** The API root that `/embeddings` hangs off: https://api.openai.com/v1, http://localhost:11434/v1 (Ollama), a vLLM, LM Studio or TEI server. */
  baseUrl: string;
  model: string;
  /** Sent as `Authorization: Bearer …` when given. */
  apiKey?: string;
  /** The vector length the model must return; 0 or absent learns it from the first answer. */
  dimensions?: number;
  /** Texts per request. */
  batchSize?: number;
  /** How long one request (answer included) may take before it counts as failed. */
  timeoutMs?: number;
  /** Retries after 429, 408, 5xx, timeouts and network errors. */
  maxRetries?: number;
  retryBaseDelayMs?: number;
  retryMaxDelayMs?: number;
  /** Replaces global fetch (tests, proxies). */
  fetch?: typeof fetch;
  /** Replaces the wait between retries (tests record the delays instead of waiting). */
  sleep?: (milliseconds: number, signal?: AbortSignal) => Promise<void>;
}

interface WireEmbedding {
  index?: unknown;
  embedding?: unknown;
}

const defaults = DEFAULT_SETTINGS.embedding;
const RETRYABLE_STATUS = new Set([408, 409, 425, 429]);
const ERROR_TEXT_LIMIT = 300;

/**
 * An embedder over the OpenAI-compatible `POST {baseUrl}/embeddings` wire format, with global
 * fetch and no SDK: batching, a timeout per request, exponential backoff on 429/5xx/network
 * errors (honouring Retry-After), and a clear error when vectors have an unexpected length.
 * @example
 * const embedder = new OpenAiCompatibleEmbedder({ baseUrl: 'http://localhost:11434/v1', model: 'nomic-embed-text' });
 * const [vector] = await embedder.embed(['The user prefers tabs.']);
 */
export class OpenAiCompatibleEmbedder implements Embedder {
  readonly model: string;
  readonly #endpoint: string;
  readonly #apiKey: string | undefined;
  readonly #configuredDimensions: number | undefined;
  #learnedDimensions: number | undefined;
  readonly #batchSize: number;
  readonly #timeoutMs: number;
  readonly #maxRetries: number;
  readonly #retryBaseDelayMs: number;
  readonly #retryMaxDelayMs: number;
  readonly #fetch: typeof fetch;
  readonly #sleep: (milliseconds: number, signal?: AbortSignal) => Promise<void>;

  constructor(options: OpenAiCompatibleEmbedderOptions) {
    if (options === null || typeof options !== 'object') throw configInvalid('The embedder takes an options object with baseUrl and model.');
    this.#endpoint = `${checkBaseUrl(options.baseUrl)}/embeddings`;
    if (typeof options.model !== 'string' || options.model.trim() === '' || options.model.length > 200) {
      throw configInvalid('Set embedding.model to the embedding model id (e.g. text-embedding-3-small, nomic-embed-text).');
    }
    this.model = options.model;
    if (options.apiKey !== undefined && typeof options.apiKey !== 'string') throw configInvalid('embedding.apiKey must be a string.');
    this.#apiKey = options.apiKey === '' ? undefined : options.apiKey;
    const dimensions = wholeNumber(options.dimensions ?? 0, 'embedding.dimensions', 0, 65_536);
    this.#configuredDimensions = dimensions === 0 ? undefined : dimensions;
    this.#batchSize = wholeNumber(options.batchSize ?? defaults.batchSize, 'embedding.batchSize', 1, 2_048);
    this.#timeoutMs = wholeNumber(options.timeoutMs ?? defaults.timeoutMs, 'embedding.timeoutMs', 1, 3_600_000);
    this.#maxRetries = wholeNumber(options.maxRetries ?? defaults.maxRetries, 'embedding.maxRetries', 0, 20);
    this.#retryBaseDelayMs = wholeNumber(options.retryBaseDelayMs ?? defaults.retryBaseDelayMs, 'embedding.retryBaseDelayMs', 0, 3_600_000);
    this.#retryMaxDelayMs = wholeNumber(options.retryMaxDelayMs ?? defaults.retryMaxDelayMs, 'embedding.retryMaxDelayMs', 0, 3_600_000);
    this.#fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.#sleep = options.sleep ?? abortableSleep;
  }

  get dimensions(): number | undefined {
    return this.#configuredDimensions ?? this.#learnedDimensions;
  }

  async embed(texts: readonly string[], options: EmbedOptions = {}): Promise<Float32Array[]> {
    if (!Array.isArray(texts) || texts.some((text) => typeof text !== 'string')) {
      throw new EngramError('INVALID_INPUT', 'embed() takes an array of strings.');
    }
    const vectors: Float32Array[] = [];
    for (let start = 0; start < texts.length; start += this.#batchSize) {
      vectors.push(...(await this.#embedBatch(texts.slice(start, start + this.#batchSize), options.signal)));
    }
    return vectors;
  }

  async #embedBatch(texts: readonly string[], signal: AbortSignal | undefined): Promise<Float32Array[]> {
    const body = JSON.stringify({ model: this.model, input: texts, encoding_format: 'float' });
    for (let attempt = 0; ; attempt += 1) {
      signal?.throwIfAborted();
      const outcome = await this.#attempt(body, signal);
      if (outcome.kind === 'ok') return this.#parse(outcome.payload, texts.length);
      if (!outcome.retryable || attempt >= this.#maxRetries) throw outcome.error;
      const backoff = Math.min(this.#retryMaxDelayMs, this.#retryBaseDelayMs * 2 ** attempt);
      await this.#sleep(outcome.retryAfterMs === undefined ? backoff : Math.min(this.#retryMaxDelayMs, outcome.retryAfterMs), signal);
    }
  }

  async #attempt(
    body: string,
    signal: AbortSignal | undefined,
  ): Promise<{ kind: 'ok'; payload: unknown } | { kind: 'failed'; error: EngramError; retryable: boolean; retryAfterMs?: number }> {
    const controller = new AbortController();
    const onAbort = (): void => controller.abort(signal?.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, this.#timeoutMs);
    try {
      const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
      if (this.#apiKey !== undefined) headers.authorization = `Bearer ${this.#apiKey}`;
      const response = await this.#fetch(this.#endpoint, { method: 'POST', headers, body, signal: controller.signal });
      const text = await response.text();
      if (response.ok) {
        try {
          return { kind: 'ok', payload: JSON.parse(text) };
        } catch {
          return { kind: 'failed', retryable: false, error: this.#failure(`answered ${response.status} with a body that is not JSON: ${snippet(text)}`) };
        }
      }
      const retryable = RETRYABLE_STATUS.has(response.status) || response.status >= 500;
      const retryAfterMs = retryAfter(response.headers);
      return {
        kind: 'failed',
        retryable,
        ...(retryAfterMs !== undefined && { retryAfterMs }),
        error: this.#failure(`answered ${response.status} ${response.statusText}: ${errorMessage(text)}${hintFor(response.status)}`, { status: response.status }),
      };
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      const reason = timedOut ? `did not answer within ${this.#timeoutMs} ms (embedding.timeoutMs)` : `could not be reached (${describeNetworkError(error)})`;
      return { kind: 'failed', retryable: true, error: this.#failure(reason, undefined, error) };
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    }
  }

  #parse(payload: unknown, expected: number): Float32Array[] {
    const data = (payload as { data?: unknown } | null)?.data;
    if (!Array.isArray(data)) throw this.#failure('answered without a "data" array: is embedding.baseUrl an OpenAI-compatible API root (ending in /v1)?');
    if (data.length !== expected) throw this.#failure(`answered ${data.length} embeddings for ${expected} texts.`);
    const vectors = new Array<Float32Array | undefined>(expected);
    data.forEach((item: WireEmbedding, position) => {
      const index = item?.index === undefined ? position : item.index;
      if (typeof index !== 'number' || !Number.isInteger(index) || index < 0 || index >= expected || vectors[index] !== undefined) {
        throw this.#failure(`answered an embedding with an invalid index ${JSON.stringify(index)}.`);
      }
      vectors[index] = this.#vector(item?.embedding, index);
    });
    return vectors as Float32Array[];
  }

  #vector(raw: unknown, index: number): Float32Array {
    let vector: Float32Array;
    if (typeof raw === 'string') {
      // Some servers answer base64 (little-endian float32) whatever encoding_format asked for.
      const bytes = Buffer.from(raw, 'base64');
      if (bytes.length % 4 !== 0) throw this.#failure(`answered embedding ${index} as base64 that is not float32 data.`);
      vector = new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length));
    } else if (Array.isArray(raw) && raw.every((value) => typeof value === 'number')) {
      vector = Float32Array.from(raw as number[]);
    } else {
      throw this.#failure(`answered embedding ${index} that is not a list of numbers.`);
    }
    if (vector.length === 0 || !vector.every((value) => Number.isFinite(value))) {
      throw this.#failure(`answered embedding ${index} that is empty or holds a number that is not finite.`);
    }
    const expected = this.dimensions;
    if (expected !== undefined && vector.length !== expected) {
      if (this.#configuredDimensions !== undefined) {
        throw new EngramError(
          'CONFIG_INVALID',
          `The embedding model ${JSON.stringify(this.model)} at ${this.#endpoint} returned vectors of ${vector.length} numbers, but embedding.dimensions is ${expected}. ` +
            `Set embedding.dimensions to ${vector.length} (or 0 to learn it), or check embedding.model.`,
          { details: { expected, received: vector.length, model: this.model } },
        );
      }
      throw this.#failure(`returned vectors of different lengths (${expected} and ${vector.length}).`);
    }
    this.#learnedDimensions ??= vector.length;
    return vector;
  }

  #failure(what: string, details?: Record<string, unknown>, cause?: unknown): EngramError {
    return new EngramError('EMBEDDING_FAILED', `The embeddings API at ${this.#endpoint} ${what}`, {
      ...(cause !== undefined && { cause }),
      details: { url: this.#endpoint, model: this.model, ...details },
    });
  }
}

function checkBaseUrl(value: unknown): string {
  let url: URL | undefined;
  try {
    url = typeof value === 'string' ? new URL(value) : undefined;
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    throw configInvalid(
      `Invalid embedding.baseUrl ${JSON.stringify(String(value).slice(0, 120))}: an http(s) URL such as https://api.openai.com/v1 or http://localhost:11434/v1.`,
    );
  }
  if (url.username !== '' || url.password !== '') throw configInvalid('embedding.baseUrl must not carry credentials; set embedding.apiKey instead.');
  return url.href.replace(/\/+$/, '');
}

function wholeNumber(value: unknown, name: string, minimum: number, maximum: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < minimum || value > maximum) {
    throw configInvalid(`Invalid ${name} ${JSON.stringify(value)}: a whole number from ${minimum} to ${maximum}.`);
  }
  return value;
}

function configInvalid(message: string): EngramError {
  return new EngramError('CONFIG_INVALID', message);
}

/** Retry-After in milliseconds: OpenAI's `retry-after-ms`, else seconds or an HTTP date. */
function retryAfter(headers: Headers): number | undefined {
  const milliseconds = Number(headers.get('retry-after-ms') ?? Number.NaN);
  if (Number.isFinite(milliseconds) && milliseconds >= 0) return milliseconds;
  const raw = headers.get('retry-after');
  if (raw === null || raw.trim() === '') return undefined;
  const seconds = Number(raw);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1_000;
  const date = Date.parse(raw);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

/** The message of an error body: OpenAI's `{error:{message}}`, TEI's and Ollama's `{error:"…"}`, or the text itself. */
function errorMessage(text: string): string {
  try {
    const body = JSON.parse(text) as { error?: unknown; message?: unknown; detail?: unknown };
    const error = body?.error;
    if (typeof error === 'string') return snippet(error);
    if (error !== null && typeof error === 'object' && typeof (error as { message?: unknown }).message === 'string') {
      return snippet((error as { message: string }).message);
    }
    if (typeof body?.message === 'string') return snippet(body.message);
    if (typeof body?.detail === 'string') return snippet(body.detail);
  } catch {
    // Not JSON: show the text.
  }
  return snippet(text) || '(no message)';
}

function hintFor(status: number): string {
  if (status === 401 || status === 403) return ' Check embedding.apiKey.';
  if (status === 404) return ' Check embedding.baseUrl (the API root, e.g. ending in /v1) and embedding.model.';
  return '';
}

function snippet(text: string): string {
  const clean = text.replace(/\s+/g, ' ').trim();
  return clean.length > ERROR_TEXT_LIMIT ? `${clean.slice(0, ERROR_TEXT_LIMIT)}…` : clean;
}

function describeNetworkError(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown; message?: unknown } } | null)?.cause;
  if (typeof cause?.code === 'string') return cause.code;
  return error instanceof Error ? error.message : String(error);
}
