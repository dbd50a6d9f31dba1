import { EngramError } from '../../kernel/errors.js';
import { DEFAULT_SETTINGS } from '../../kernel/settings.js';
import { checkSetting } from '../../kernel/setting-checks.js';
import type { EmbedOptions, Embedder } from '../../contracts/embedder.js';
import { checkBaseUrl } from '../http/base-url.js';
import {
  HttpRequestPolicy,
  HttpStatusError,
  gaveUpNote,
  networkReason,
  redact,
  type AttemptFailure,
  type HttpFailureReport,
} from '../http/request-policy.js';

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
  /** How long one request (answer included) may take before it counts as failed (and is tried again). */
  timeoutMs?: number;
  /** Retries after 429, 408, 409, 425, 5xx, timeouts and network errors. */
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

/**
 * An embedder over the OpenAI-compatible `POST {baseUrl}/embeddings` wire format, with global
 * fetch and no SDK: batching, and engram's HTTP request policy with the `embedding.*` settings
 * (a timeout per request, exponential backoff without jitter on 429/5xx/timeouts/network errors,
 * Retry-After honoured up to `retryMaxDelayMs`), and a clear error when vectors have an unexpected
 * length. Failures are EMBEDDING_FAILED; an abort rejects with the signal's reason.
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
  readonly #policy: HttpRequestPolicy;
  readonly #report: HttpFailureReport;
  readonly #fetch: typeof fetch;

  constructor(options: OpenAiCompatibleEmbedderOptions) {
    if (options === null || typeof options !== 'object')
      throw configInvalid('The embedder takes an options object with baseUrl and model.');
    const baseUrl = checkBaseUrl(options.baseUrl, {
      setting: 'embedding.baseUrl',
      example: 'https://api.openai.com/v1 or http://localhost:11434/v1',
      keySetting: 'embedding.apiKey',
    });
    this.#endpoint = `${baseUrl}/embeddings`;
    if (typeof options.model !== 'string' || options.model.trim() === '' || options.model.length > 200) {
      throw configInvalid(
        'Set embedding.model to the embedding model id (e.g. text-embedding-3-small, nomic-embed-text).',
      );
    }
    this.model = options.model;
    if (options.apiKey !== undefined && typeof options.apiKey !== 'string')
      throw configInvalid('embedding.apiKey must be a string.');
    this.#apiKey = options.apiKey === '' ? undefined : options.apiKey;
    const dimensions = checkSetting('embedding.dimensions', options.dimensions ?? 0);
    this.#configuredDimensions = dimensions === 0 ? undefined : dimensions;
    this.#batchSize = checkSetting('embedding.batchSize', options.batchSize ?? defaults.batchSize);
    this.#policy = new HttpRequestPolicy({
      attemptTimeoutMs: checkSetting('embedding.timeoutMs', options.timeoutMs ?? defaults.timeoutMs),
      maxRetries: checkSetting('embedding.maxRetries', options.maxRetries ?? defaults.maxRetries),
      retryBaseDelayMs: checkSetting(
        'embedding.retryBaseDelayMs',
        options.retryBaseDelayMs ?? defaults.retryBaseDelayMs,
      ),
      retryMaxDelayMs: checkSetting('embedding.retryMaxDelayMs', options.retryMaxDelayMs ?? defaults.retryMaxDelayMs),
      // Mostly background work (a write's vector, reindex), one request at a time: a plain doubling backoff,
      // and a Retry-After beyond the cap is waited out at the cap rather than costing the vector.
      jitter: 'none',
      retryAfterBeyondMax: 'wait-max',
      sleep: options.sleep,
    });
    this.#report = this.#failureReport();
    this.#fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
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
    const payload = await this.#policy.run(
      (attemptSignal) => this.#post(body, attemptSignal),
      { signal },
      this.#report,
    );
    return this.#parse(payload, texts.length);
  }

  /** One request: the parsed JSON body of a 2xx answer; an HttpStatusError for any other status. */
  async #post(body: string, signal: AbortSignal): Promise<unknown> {
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
    if (this.#apiKey !== undefined) headers.authorization = `Bearer ${this.#apiKey}`;
    const response = await this.#fetch(this.#endpoint, { method: 'POST', headers, body, signal });
    const text = await response.text();
    if (!response.ok) throw new HttpStatusError(response, text);
    try {
      return JSON.parse(text);
    } catch {
      // Thrown as an EngramError, so the policy does not try again: the same server would answer the same.
      throw this.#failure(`answered ${response.status} with a body that is not JSON: ${this.#clean(text)}`);
    }
  }

  /** The embedder's failures in its own terms: EMBEDDING_FAILED naming the endpoint and the setting to check; an abort is the signal's reason. */
  #failureReport(): HttpFailureReport {
    return {
      describe: (error): AttemptFailure =>
        error instanceof HttpStatusError
          ? {
              kind: 'http',
              status: error.status,
              statusText: error.statusText,
              headers: error.headers,
              message: this.#errorMessage(error.body),
            }
          : { kind: 'network', message: networkReason(error), cause: error },
      failed: (failure, { gaveUp }) => {
        const note = gaveUp ? ` ${gaveUpNote(gaveUp, 'embedding')}` : '';
        switch (failure.kind) {
          case 'http':
            return this.#failure(
              `answered ${failure.status} ${failure.statusText ?? ''}: ${failure.message}${hintFor(failure.status)}${note}`,
              { status: failure.status },
            );
          case 'timeout':
            return this.#failure(`did not answer within ${failure.timeoutMs} ms (embedding.timeoutMs)${note}`);
          case 'network':
            return this.#failure(`could not be reached (${failure.message})${note}`, undefined, failure.cause);
          default:
            return this.#failure(`failed: ${this.#clean(failure.message)}${note}`);
        }
      },
      aborted: (signal) => signal?.reason,
      // No budget spans the tries of one batch (each request has its own), so this is not reached; it reads like a try that ran out.
      timedOut: (budget) => this.#failure(`did not answer within ${budget} ms (embedding.timeoutMs)`),
    };
  }

  /** The message of an error body: OpenAI's `{error:{message}}`, TEI's and Ollama's `{error:"…"}`, or the text itself. */
  #errorMessage(text: string): string {
    try {
      const body = JSON.parse(text) as { error?: unknown; message?: unknown; detail?: unknown };
      const error = body?.error;
      if (typeof error === 'string') return this.#clean(error);
      if (error !== null && typeof error === 'object' && typeof (error as { message?: unknown }).message === 'string') {
        return this.#clean((error as { message: string }).message);
      }
      if (typeof body?.message === 'string') return this.#clean(body.message);
      if (typeof body?.detail === 'string') return this.#clean(body.detail);
    } catch {
      // Not JSON: show the text.
    }
    return this.#clean(text) || '(no message)';
  }

  /** Server text fit for a message: on one line, cut, and without the API key. */
  #clean(text: string): string {
    return redact(text, this.#apiKey === undefined ? [] : [this.#apiKey]);
  }

  #parse(payload: unknown, expected: number): Float32Array[] {
    const data = (payload as { data?: unknown } | null)?.data;
    if (!Array.isArray(data))
      throw this.#failure(
        'answered without a "data" array: is embedding.baseUrl an OpenAI-compatible API root (ending in /v1)?',
      );
    if (data.length !== expected) throw this.#failure(`answered ${data.length} embeddings for ${expected} texts.`);
    const vectors = new Array<Float32Array | undefined>(expected);
    data.forEach((item: WireEmbedding, position) => {
      const index = item?.index === undefined ? position : item.index;
      if (
        typeof index !== 'number' ||
        !Number.isInteger(index) ||
        index < 0 ||
        index >= expected ||
        vectors[index] !== undefined
      ) {
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
      if (bytes.length % 4 !== 0)
        throw this.#failure(`answered embedding ${index} as base64 that is not float32 data.`);
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

function configInvalid(message: string): EngramError {
  return new EngramError('CONFIG_INVALID', message);
}

function hintFor(status: number): string {
  if (status === 401 || status === 403) return ' Check embedding.apiKey.';
  if (status === 404) return ' Check embedding.baseUrl (the API root, e.g. ending in /v1) and embedding.model.';
  return '';
}
