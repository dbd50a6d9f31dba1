import { createHash } from 'node:crypto';
import type { ConversationMessage } from '../../contracts/conversation.js';

/** What the SDKs' APIPromise adds to a promise and their own helpers rely on (MessageStream calls withResponse). */
export interface ApiPromiseLike<T> extends PromiseLike<T> {
  withResponse(): Promise<{ data: T }>;
  asResponse(): Promise<unknown>;
}

/**
 * A call made once memory is ready, returned as the SDK's own call is: a promise of the data with
 * `withResponse()` and `asResponse()`, so the SDK's helpers (messages.stream) and a user's code that
 * reads the raw response work unchanged. `onData` sees the data once, whichever way it is read.
 */
export function deferredCall<T>(started: Promise<{ api: ApiPromiseLike<T> }>, onData: (data: T) => T): Promise<T> {
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
  return Object.assign(promise, {
    withResponse,
    asResponse,
    // OpenAI's parse() helpers chain on create(); the response body is read once, by the call itself.
    _thenUnwrap: <U>(transform: (data: T, props: unknown) => U) => {
      const mapped = promise.then((data) => transform(data, undefined));
      mapped.catch(() => undefined);
      return Object.assign(mapped, {
        withResponse: async () => {
          const result = await withResponse();
          return { ...result, data: transform(result.data, undefined) };
        },
        asResponse,
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
