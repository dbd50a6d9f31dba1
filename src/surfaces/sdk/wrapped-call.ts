import { createHash } from 'node:crypto';
import type { ConversationMessage } from '../../contracts/conversation.js';

/** What the SDKs' APIPromise adds to a promise and their own helpers rely on (MessageStream calls withResponse). */
export interface ApiPromiseLike<T> extends PromiseLike<T> {
  withResponse(): Promise<{ data: T }>;
  asResponse(): Promise<unknown>;
  /** Anthropic's: the unparsed response and its request (a message thread reads it before the data). */
  _responseProps?(): Promise<unknown>;
}

/**
 * A call made once memory is ready, returned as the SDK's own call is: a promise of the data with
 * `withResponse()` and `asResponse()`, so the SDK's helpers (messages.stream) and a user's code that
 * reads the raw response work unchanged. `onData` sees the data once, whichever way it is read.
 */
export function deferredCall<T>(
  started: Promise<{ api: ApiPromiseLike<T> }>,
  onData: (data: T) => T,
): Promise<T> & { _responseProps(): Promise<unknown> } {
  let seen: { data: T; result: T } | undefined;
  const once = (data: T): T => {
    if (seen && seen.data === data) return seen.result;
    seen = { data, result: onData(data) };
    return seen.result;
  };
  const promise = started.then(({ api }) => Promise.resolve(api).then(once));
  // Read through withResponse or asResponse only: the plain promise's rejection is the caller's to see or not.
  promise.catch(() => undefined);
  const withResponse = async (): Promise<{ data: T }> => {
    const { api } = await started;
    const result = await api.withResponse();
    return { ...result, data: once(result.data) };
  };
  const asResponse = async (): Promise<unknown> => (await started).api.asResponse();
  const responseProps = async (): Promise<unknown> => {
    const { api } = await started;
    return typeof api._responseProps === 'function' ? api._responseProps() : undefined;
  };
  return Object.assign(promise, {
    withResponse,
    asResponse,
    _responseProps: responseProps,
    // The SDKs' helpers chain on create() (OpenAI's parse(), Anthropic's streams); the body is read once, by the call itself.
    _thenUnwrap: <U>(transform: (data: T, props: unknown) => U) => {
      const mapped = promise.then(async (data) => transform(data, await responseProps()));
      mapped.catch(() => undefined);
      return Object.assign(mapped, {
        withResponse: async () => {
          const result = await withResponse();
          return { ...result, data: transform(result.data, await responseProps()) };
        },
        asResponse,
        _responseProps: responseProps,
      });
    },
  });
}

/**
 * Watches an SDK stream (Anthropic's and OpenAI's `Stream`) event by event without copying or
 * delaying it: the instance's iterator is replaced, so `for await`, `tee()` and `toReadableStream()`
 * all pass through. `onEnd` runs once after the last event, when the stream ended on its own.
 */
export function observeStream<T extends object>(stream: T, onItem: (item: unknown) => void, onEnd: () => void): T {
  const holder = stream as unknown as { iterator?: () => AsyncIterator<unknown> };
  const original = holder.iterator;
  if (typeof original !== 'function') return stream;
  holder.iterator = () => watched(original.call(stream), onItem, onEnd);
  return stream;
}

async function* watched(
  source: AsyncIterator<unknown>,
  onItem: (item: unknown) => void,
  onEnd: () => void,
): AsyncGenerator<unknown, void, undefined> {
  let ended = false;
  try {
    for (;;) {
      const next = await source.next();
      if (next.done) {
        ended = true;
        break;
      }
      safely(() => onItem(next.value));
      yield next.value;
    }
  } finally {
    if (ended) safely(onEnd);
    // A consumer that stopped early: the SDK's iterator closes the connection.
    else await source.return?.();
  }
}

/**
 * The response of an SDK call's props (`{ response, ... }`) split in two: the SDK reads one copy as it
 * would the original, `read` gets the other's server-sent events (each `data:` line's JSON), at the
 * SDK's pace or faster. Props without a readable body are returned as they are.
 */
export function teeEventStream(props: unknown, read: (events: AsyncIterable<unknown>) => void): unknown {
  const response = (props as { response?: unknown } | null)?.response;
  if (!(response instanceof Response) || !response.body || response.bodyUsed) return props;
  const [theirs, ours] = response.body.tee();
  const copy = new Response(theirs, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
  Object.defineProperty(copy, 'url', { value: response.url });
  safely(() => read(serverSentEvents(ours)));
  return { ...(props as object), response: copy };
}

/** The JSON data of each server-sent event of a body; one that is not JSON is skipped. */
async function* serverSentEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<unknown, void, undefined> {
  const decoder = new TextDecoder();
  const reader = body.getReader();
  let buffer = '';
  try {
    for (;;) {
      const { done, value } = await reader.read();
      buffer += done ? decoder.decode() : decoder.decode(value, { stream: true });
      for (let end = buffer.search(/\r?\n\r?\n/); end >= 0; end = buffer.search(/\r?\n\r?\n/)) {
        const event = buffer.slice(0, end);
        buffer = buffer.slice(end).replace(/^\r?\n\r?\n/, '');
        const data = event
          .split(/\r?\n/)
          .flatMap((line) => (line.startsWith('data:') ? [line.slice(5).replace(/^ /, '')] : []))
          .join('\n');
        if (data === '') continue;
        try {
          yield JSON.parse(data) as unknown;
        } catch {
          // Not an event the answer is read from.
        }
      }
      if (done) return;
    }
  } finally {
    reader.releaseLock();
  }
}

/** Runs a memory step that must never reach the user's code. */
export function safely(work: () => void): void {
  try {
    work();
  } catch {
    // Memory is best effort; the caller's call goes on.
  }
}

/** A short stable hash of text (ids of conversations and messages). */
export function shortHash(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 20);
}

/** A message's id: its place and a hash of what it says, so the same message read again keeps its id. */
export function withMessageId(index: number, message: Omit<ConversationMessage, 'id'>): ConversationMessage {
  const identity = JSON.stringify([
    message.role,
    message.text,
    (message.toolCalls ?? []).map((call) => [call.id, call.name]),
    (message.toolResults ?? []).map((result) => result.toolUseId),
  ]);
  return { id: `m${index}-${shortHash(identity)}`, ...message };
}

/** Joins the non-empty parts of a system prompt with blank lines. */
export function joinPrompt(parts: ReadonlyArray<string | undefined | null>): string {
  return parts.filter((part): part is string => typeof part === 'string' && part !== '').join('\n\n');
}

/** The input of a tool call from its JSON text (a model's malformed JSON kept as text). */
export function parseToolInput(text: string): Record<string, unknown> {
  if (text.trim() === '') return {};
  try {
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === 'object' && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : { value };
  } catch {
    return { arguments: text.slice(0, 10_000) };
  }
}

/** Text of a tool result in any of the SDKs' shapes (string, or blocks with text). */
export function resultText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content))
    return content
      .map((part) => (part && typeof part === 'object' && typeof part.text === 'string' ? part.text : ''))
      .filter((text) => text !== '')
      .join('\n');
  return content === undefined || content === null ? '' : JSON.stringify(content);
}
