import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request the server received, as sent on the wire. */
export interface RecordedEmbeddingsRequest {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  /** The parsed JSON body, or the raw text when it was not JSON. */
  body: unknown;
}

/** What the server answers to one request. Without `body`, a /v1/embeddings answer of hashed-word vectors. */
export interface ScriptedEmbeddingsResponse {
  status?: number;
  headers?: Record<string, string>;
  /** A JSON value, or a string sent as is. */
  body?: unknown;
  /** Waits this long before answering (timeouts). */
  delayMs?: number;
  /** Drops the connection without an answer (network errors). */
  destroy?: boolean;
}

export interface EmbeddingsServerOptions {
  /** Length of the default vectors (default 32). */
  dimensions?: number;
  /** Model id echoed in answers (default: the one asked for). */
  model?: string;
  /** Words that mean the same: each key is embedded as its value, so `automobile` lands on `car`. */
  synonyms?: Record<string, string>;
  /** Answers every request not covered by `script`; may return undefined for the default answer. */
  respond?: (request: RecordedEmbeddingsRequest) => ScriptedEmbeddingsResponse | undefined;
}

/** A running loopback server: its base URL (ending in /v1), the requests it saw, and a script of answers. */
export interface EmbeddingsServer {
  /** The API root to configure as `embedding.baseUrl`, e.g. http://127.0.0.1:PORT/v1. */
  baseUrl: string;
  requests: RecordedEmbeddingsRequest[];
  /** Queues answers for the next requests, one each, before falling back to the default. */
  script(...responses: ScriptedEmbeddingsResponse[]): void;
  close(): Promise<void>;
}

const STOP_WORDS = new Set(
  'a an and are as at be by do does did for from has have how i in is it its my of on or that the their them they this to was were what when where which who why will with you your user'.split(
    ' ',
  ),
);

/**
 * A deterministic embedding: each word (lowercased, stop words out, synonyms folded) adds a
 * pseudo-random unit direction from its hash, and the sum is normalized. Texts that share words
 * get similar vectors; texts with no shared word are close to orthogonal.
 */
export function hashedWordVector(
  text: string,
  options: { dimensions: number; synonyms?: Record<string, string> },
): number[] {
  const { dimensions, synonyms = {} } = options;
  const vector = new Array<number>(dimensions).fill(0);
  for (const raw of text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []) {
    if (STOP_WORDS.has(raw)) continue;
    const word = Object.hasOwn(synonyms, raw) ? synonyms[raw]! : raw;
    for (let block = 0; block * 32 < dimensions; block += 1) {
      const digest = createHash('sha256').update(`${word}:${block}`).digest();
      for (let offset = 0; offset < 32 && block * 32 + offset < dimensions; offset += 1) {
        vector[block * 32 + offset]! += digest[offset]! / 255 - 0.5;
      }
    }
  }
  const norm = Math.sqrt(vector.reduce((sum, value) => sum + value * value, 0));
  // A text of stop words only still gets a direction, so every answer is a usable vector.
  if (norm === 0) return vector.map((_value, index) => (index === 0 ? 1 : 0));
  return vector.map((value) => value / norm);
}

/** An OpenAI-style `/v1/embeddings` answer body for the given vectors. */
export function embeddingsResponseBody(vectors: readonly number[][], model: string): unknown {
  return {
    object: 'list',
    data: vectors.map((embedding, index) => ({ object: 'embedding', index, embedding })),
    model,
    usage: { prompt_tokens: vectors.length, total_tokens: vectors.length },
  };
}

/** An OpenAI-style error body (`type` default `invalid_request_error`, `code` default null). */
export function embeddingsErrorBody(message: string, options: { type?: string; code?: string | null } = {}): unknown {
  const { type = 'invalid_request_error', code = null } = options;
  return { error: { message, type, param: null, code } };
}

/**
 * Starts a loopback HTTP server that speaks the OpenAI `/v1/embeddings` wire format, records every
 * request, and answers from a per-test script or with deterministic hashed-word vectors.
 * @example
 * const server = await startEmbeddingsServer({ dimensions: 16 });
 * server.script({ status: 429, headers: { 'retry-after': '0' } }); // then the default answer
 * await server.close();
 */
export async function startEmbeddingsServer(options: EmbeddingsServerOptions = {}): Promise<EmbeddingsServer> {
  const dimensions = options.dimensions ?? 32;
  const queue: ScriptedEmbeddingsResponse[] = [];
  const requests: RecordedEmbeddingsRequest[] = [];
  const server: Server = createServer((incoming, outgoing) => {
    void handle(incoming, outgoing).catch(() => outgoing.destroy());
  });

  async function handle(incoming: IncomingMessage, outgoing: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of incoming) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {
      // Recorded as text.
    }
    const request: RecordedEmbeddingsRequest = {
      method: incoming.method ?? '',
      path: incoming.url ?? '',
      headers: { ...incoming.headers },
      body,
    };
    requests.push(request);
    const scripted = queue.shift() ?? options.respond?.(request);
    if (scripted?.delayMs) await new Promise((resolve) => setTimeout(resolve, scripted.delayMs));
    if (scripted?.destroy) {
      outgoing.socket?.destroy();
      return;
    }
    const answer = scripted?.body !== undefined || scripted?.status !== undefined ? scripted : defaultAnswer(request);
    const status = answer.status ?? 200;
    const payload =
      answer.body === undefined ? '' : typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body);
    outgoing.writeHead(status, { 'content-type': 'application/json', ...scripted?.headers, ...answer.headers });
    outgoing.end(payload);
  }

  function defaultAnswer(request: RecordedEmbeddingsRequest): ScriptedEmbeddingsResponse {
    if (request.method !== 'POST' || request.path !== '/v1/embeddings') {
      return {
        status: 404,
        body: embeddingsErrorBody(`Unknown route ${request.method} ${request.path}`, { type: 'not_found' }),
      };
    }
    const body = request.body as { model?: unknown; input?: unknown } | null;
    const input = typeof body?.input === 'string' ? [body.input] : body?.input;
    if (typeof body?.model !== 'string' || !Array.isArray(input) || input.some((item) => typeof item !== 'string')) {
      return {
        status: 400,
        body: embeddingsErrorBody("'input' must be a string or an array of strings, with a 'model'."),
      };
    }
    const vectors = (input as string[]).map((item) =>
      hashedWordVector(item, { dimensions, ...(options.synonyms && { synonyms: options.synonyms }) }),
    );
    return { status: 200, body: embeddingsResponseBody(vectors, options.model ?? body.model) };
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    script: (...responses) => queue.push(...responses),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
