import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type {
  AppliedContextEdit,
  LanguageModelMessage,
  LanguageModelStopReason,
  LanguageModelUsage,
  TextBlock,
  ToolUseBlock,
} from '../contracts/language-model.js';

/** One request a loopback model server received, as sent on the wire, with a provider-neutral reading of it. */
export interface RecordedModelRequest {
  method: string;
  path: string;
  /** Header names in lower case, as Node gives them. */
  headers: Record<string, string | string[] | undefined>;
  /** The parsed JSON body, or the raw text when it was not JSON (undefined when it was over the size limit). */
  body: unknown;
  /** The body exactly as received (empty when it was over the size limit). */
  rawBody: string;
  /** Size of the body in bytes. */
  bytes: number;
  /** The request in engram's terms, when the body was a readable request of this API. */
  summary?: ModelRequestSummary;
}

/** What a request asked for, read back from the wire into engram's terms (for assertions independent of the provider). */
export interface ModelRequestSummary {
  model: string;
  /** The system prompt as one text (blocks joined by blank lines). */
  system: string;
  /** Texts of the system blocks that carry a cache mark (Anthropic `cache_control`). */
  cachedSystemBlocks: string[];
  messages: LanguageModelMessage[];
  tools: string[];
  toolChoice?: string;
  maxOutputTokens: number;
  json: boolean;
  stream: boolean;
}

/** A scripted answer message in engram's terms; each server renders it in its wire format. */
export interface ScriptedModelMessage {
  /** Shorthand for one text block. */
  text?: string;
  content?: Array<TextBlock | ToolUseBlock>;
  /** Default: tool_use when the content has a tool use, else end. */
  stopReason?: LanguageModelStopReason;
  /** Overrides the computed usage (estimated from bytes, with the server's simulated prompt cache). */
  usage?: Partial<LanguageModelUsage>;
  /** Server-side context edits to report as applied (Anthropic `context_management.applied_edits`; others ignore it). */
  contextEdits?: AppliedContextEdit[];
}

/**
 * How a streamed answer goes wrong (streaming requests only): the events are sent up to and
 * including the n-th text delta (0: before any), then an error event in the stream, a dropped
 * connection, or silence until the client gives up.
 */
export interface ScriptedStreamBreak {
  afterTextDeltas: number;
  then: { error: ScriptedModelError } | 'destroy' | 'hang';
}

/** An error in engram's terms; each server answers it with its API's status and error shape. */
export interface ScriptedModelError {
  kind:
    | 'rate_limit'
    | 'overloaded'
    | 'server'
    | 'unavailable'
    | 'auth'
    | 'permission'
    | 'not_found'
    | 'invalid_request'
    | 'too_large';
  message?: string;
  /** Sent as Retry-After (seconds, or an HTTP date). */
  retryAfter?: number | string;
}

/** One scripted reply: a message, an error, a raw HTTP answer, a hang (no answer until the client gives up) or a dropped connection. */
export type ModelServerReply =
  | {
      message: ScriptedModelMessage;
      delayMs?: number;
      headers?: Record<string, string>;
      chunkDelayMs?: number;
      streamBreak?: ScriptedStreamBreak;
    }
  | { error: ScriptedModelError; delayMs?: number; headers?: Record<string, string> }
  | { status?: number; headers?: Record<string, string>; body: unknown; delayMs?: number }
  | { hang: true }
  | { destroy: true; delayMs?: number };

/** A reply, or a function of the request that returns one (undefined: the server's default answer). */
export type ModelServerResponder =
  | ModelServerReply
  | ((
      request: RecordedModelRequest,
      index: number,
    ) => ModelServerReply | undefined | Promise<ModelServerReply | undefined>);

/** What a provider server hands the plumbing to send. */
export type WireReply =
  | { status: number; headers: Record<string, string>; body: string; delayMs?: number }
  | {
      status: number;
      headers: Record<string, string>;
      events: string[];
      chunkDelayMs?: number;
      delayMs?: number;
      end?: 'close' | 'destroy' | 'hang';
    }
  | { hang: true }
  | { destroy: true; delayMs?: number };

/** A running loopback model server. */
export interface LanguageModelServer {
  /** The base URL to give the SDK (Anthropic: the origin; OpenAI-compatible: the API root ending in /v1). */
  url: string;
  /** Every request received, in order. */
  requests: RecordedModelRequest[];
  /** Queues replies for the next requests, one each, before the default answer. */
  script(...replies: ModelServerResponder[]): void;
  /** Replies queued and not yet used. */
  readonly pending: number;
  close(): Promise<void>;
}

export interface LoopbackPlumbing {
  /** Builds the answer: scripted (possibly undefined) or the server's default. */
  answer(request: RecordedModelRequest, reply: ModelServerReply | undefined): WireReply;
  /** Reads the body into engram's terms (the path for APIs that name the model there); undefined when it is not a request of this API. */
  summarize(body: unknown, path: string): ModelRequestSummary | undefined;
  /** Largest body accepted; larger ones get `tooLarge()`. */
  maxBodyBytes: number;
  tooLarge(): WireReply;
  /** Path prefix of `url` (e.g. `/v1`), '' for none. */
  basePath: string;
}

/** Starts the HTTP plumbing shared by the loopback model servers: recording, scripting, delays, hangs, dropped connections. */
export async function startLoopbackModelServer(
  plumbing: LoopbackPlumbing,
  respond?: ModelServerResponder,
): Promise<LanguageModelServer> {
  const queue: ModelServerResponder[] = [];
  const requests: RecordedModelRequest[] = [];
  const server: Server = createServer((incoming, outgoing) => {
    void handle(incoming, outgoing).catch(() => outgoing.destroy());
  });

  async function handle(incoming: IncomingMessage, outgoing: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    let bytes = 0;
    // Drained to the end even when too large, so the client sees the answer rather than a broken pipe.
    for await (const chunk of incoming) {
      bytes += (chunk as Buffer).length;
      if (bytes <= plumbing.maxBodyBytes) chunks.push(chunk as Buffer);
    }
    const tooLarge = bytes > plumbing.maxBodyBytes;
    const rawBody = tooLarge ? '' : Buffer.concat(chunks).toString('utf8');
    let body: unknown = tooLarge ? undefined : rawBody;
    try {
      if (!tooLarge) body = JSON.parse(rawBody);
    } catch {
      // Recorded as text.
    }
    const summary = tooLarge ? undefined : safeSummary(plumbing, body, incoming.url ?? '');
    const request: RecordedModelRequest = {
      method: incoming.method ?? '',
      path: incoming.url ?? '',
      headers: { ...incoming.headers },
      body,
      rawBody,
      bytes,
      ...(summary && { summary }),
    };
    const index = requests.length;
    requests.push(request);
    let wire: WireReply;
    if (tooLarge) {
      wire = plumbing.tooLarge();
    } else {
      const responder = queue.shift() ?? respond;
      const reply = typeof responder === 'function' ? await responder(request, index) : responder;
      wire = plumbing.answer(request, reply);
    }
    await send(wire, incoming, outgoing);
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}${plumbing.basePath}`,
    requests,
    script: (...replies) => queue.push(...replies),
    get pending() {
      return queue.length;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function safeSummary(plumbing: LoopbackPlumbing, body: unknown, path: string): ModelRequestSummary | undefined {
  try {
    return plumbing.summarize(body, path);
  } catch {
    return undefined;
  }
}

/** How long a scripted cut waits after the last event written. */
const CUT_AFTER_MS = 50;

async function send(wire: WireReply, incoming: IncomingMessage, outgoing: ServerResponse): Promise<void> {
  if ('hang' in wire) {
    // No answer: the client's timeout or abort ends it (or close()).
    await new Promise<void>((resolve) => outgoing.once('close', () => resolve()));
    return;
  }
  if (wire.delayMs) await pause(wire.delayMs, outgoing);
  if (outgoing.destroyed) return;
  if ('destroy' in wire) {
    incoming.socket.destroy();
    return;
  }
  if ('events' in wire) {
    outgoing.writeHead(wire.status, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      ...wire.headers,
    });
    for (const event of wire.events) {
      if (outgoing.destroyed) return;
      outgoing.write(event);
      if (wire.chunkDelayMs) await pause(wire.chunkDelayMs, outgoing);
    }
    // Ends the connection with what was written flushed but the body unfinished: a cut, not a clean end.
    // The cut comes a moment after the last event, so the client has read what was written: Node 24's
    // fetch drops body bytes still unread when the socket closes, and the cut would land before them.
    if (wire.end === 'destroy') {
      await pause(CUT_AFTER_MS, outgoing);
      incoming.socket.end();
    } else if (wire.end === 'hang') await new Promise<void>((resolve) => outgoing.once('close', () => resolve()));
    else outgoing.end();
    return;
  }
  outgoing.writeHead(wire.status, { 'content-type': 'application/json', ...wire.headers });
  outgoing.end(wire.body);
}

function pause(milliseconds: number, outgoing: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, milliseconds);
    outgoing.once('close', done);
    function done(): void {
      clearTimeout(timer);
      outgoing.off('close', done);
      resolve();
    }
  });
}

/**
 * Cuts a stream as `streamBreak` says: the events up to and including the n-th text delta
 * (`isTextDelta` tells them apart), then the error event `errorEvent` renders, or how the answer ends.
 */
export function breakStream(
  events: string[],
  streamBreak: ScriptedStreamBreak | undefined,
  isTextDelta: (event: string) => boolean,
  errorEvent: (error: ScriptedModelError) => string,
): { events: string[]; end?: 'destroy' | 'hang' } {
  if (!streamBreak) return { events };
  let seen = 0;
  let cut = events.length;
  for (const [index, event] of events.entries()) {
    if (!isTextDelta(event)) continue;
    if (seen === streamBreak.afterTextDeltas) {
      cut = index;
      break;
    }
    seen += 1;
  }
  const kept = events.slice(0, cut);
  if (typeof streamBreak.then === 'object') return { events: [...kept, errorEvent(streamBreak.then.error)] };
  return { events: kept, end: streamBreak.then };
}

/**
 * A scripted reply other than a message, as the wire sends it: a hang or cut as scripted, the
 * provider's error answer (`errorReply` renders it) with the scripted headers on top, or a raw body.
 * `headers` go on a raw body first (a provider's request id), under the scripted ones.
 */
export function passThroughReply(
  reply: Exclude<ModelServerReply, { message: ScriptedModelMessage }>,
  errorReply: (error: ScriptedModelError) => { status: number; headers: Record<string, string>; body: string },
  headers: Record<string, string> = {},
): WireReply {
  if ('hang' in reply || 'destroy' in reply) return reply;
  if ('error' in reply) {
    const answer = errorReply(reply.error);
    return {
      ...answer,
      headers: { ...answer.headers, ...reply.headers },
      ...(reply.delayMs && { delayMs: reply.delayMs }),
    };
  }
  return {
    status: reply.status ?? 200,
    headers: { ...headers, ...reply.headers },
    body: rawBodyText(reply.body),
    ...(reply.delayMs && { delayMs: reply.delayMs }),
  };
}

/** A raw reply's body as text: strings as they are, anything else as JSON. */
export function rawBodyText(body: unknown): string {
  return typeof body === 'string' ? body : JSON.stringify(body);
}

/** Retry-After header for a scripted error, when it has one. */
export function retryAfterHeader(error: ScriptedModelError): Record<string, string> {
  return error.retryAfter === undefined ? {} : { 'retry-after': String(error.retryAfter) };
}

/** A short random-looking id with a prefix, as the real APIs hand out (`msg_…`, `req_…`). */
export function wireId(prefix: string, index: number): string {
  return `${prefix}${(index + 1).toString(36).padStart(4, '0')}${Math.random().toString(36).slice(2, 12)}`;
}

/** A text cut into pieces of `size` characters (code points, so no surrogate pair is split), as streams send it. */
export function textPieces(text: string, size: number): string[] {
  const characters = [...text];
  const parts: string[] = [];
  for (let start = 0; start < characters.length; start += size)
    parts.push(characters.slice(start, start + size).join(''));
  return parts;
}
