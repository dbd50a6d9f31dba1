import { EngramError } from '../../kernel/errors.js';
import type { ConversationMessage } from '../../contracts/conversation.js';
import type { MemoryInjection } from '../../agent/memory-injection.js';
import { turnError } from '../../agent/memory-injection.js';
import { ClientMemory, type ClientMemoryHandle, type WithMemoryOptions } from './client-memory.js';
import {
  AnthropicStreamAnswer,
  anthropicAnswer,
  anthropicConversation,
  anthropicQuery,
  anthropicSessionSeed,
  anthropicWithMemory,
} from './anthropic-messages-memory.js';
import {
  ChatStreamAnswer,
  ResponsesStreamAnswer,
  chatAnswer,
  chatConversation,
  chatQuery,
  chatSessionSeed,
  chatWithMemory,
  responsesAnswer,
  responsesConversation,
  responsesQuery,
  responsesSessionSeed,
  responsesWithMemory,
} from './openai-memory.js';
import { deferredCall, observeStream, type ApiPromiseLike } from './wrapped-call.js';

type Json = Record<string, unknown>;
type Method = (this: unknown, ...args: unknown[]) => unknown;

/** A wrapped client: the same client, plus `memory` to flush queued extraction and close the store. */
export type WithMemory<Client> = Client & { readonly memory: ClientMemoryHandle };

/** How one API method reads a request and its answer. */
interface WireApi {
  query(params: Json): string;
  inject(params: Json, injection: MemoryInjection): Json;
  seed(params: Json): string;
  conversation(params: Json): ConversationMessage[];
  /** Where the answer goes in the conversation (the next wire index). */
  nextIndex(params: Json): number;
  answer(data: unknown, index: number): ConversationMessage | undefined;
  streamAnswer(): { read(event: unknown): void; message(index: number): ConversationMessage | undefined };
}

const ANTHROPIC_MESSAGES: WireApi = {
  query: anthropicQuery,
  inject: anthropicWithMemory,
  seed: anthropicSessionSeed,
  conversation: anthropicConversation,
  nextIndex: (params) => (Array.isArray(params.messages) ? params.messages.length : 0),
  answer: anthropicAnswer,
  streamAnswer: () => new AnthropicStreamAnswer(),
};

const OPENAI_CHAT: WireApi = {
  query: chatQuery,
  inject: chatWithMemory,
  seed: chatSessionSeed,
  conversation: chatConversation,
  nextIndex: (params) => (Array.isArray(params.messages) ? params.messages.length : 0),
  answer: chatAnswer,
  streamAnswer: () => new ChatStreamAnswer(),
};

const OPENAI_RESPONSES: WireApi = {
  query: responsesQuery,
  inject: responsesWithMemory,
  seed: responsesSessionSeed,
  conversation: responsesConversation,
  nextIndex: (params) => (Array.isArray(params.input) ? params.input.length : 1),
  answer: responsesAnswer,
  streamAnswer: () => new ResponsesStreamAnswer(),
};

const WRAPPED = new WeakSet<object>();

/**
 * Gives an Anthropic client (`@anthropic-ai/sdk`) or an OpenAI client (`openai`) long-term memory and
 * returns the same client: `messages.create` (plain and `stream: true`) and `messages.stream`, or
 * `chat.completions.create` (plain and streamed) and `responses.create`, recall for the last user
 * message and put the memory context in the system prompt (the static part first, byte-stable for the
 * prompt cache; `<memory_context>` last), then queue extraction of the turn after the answer (after a
 * stream's last event) without delaying it. Memory fails open: a locked or corrupt store, an
 * unreachable database or a failing model never fails the call (`onEvent` says why). Bad options and
 * an unknown client throw an EngramError here, not on the first call.
 * @example
 * const anthropic = withMemory(new Anthropic());
 * const message = await anthropic.messages.create({ model, max_tokens: 1024, messages });
 * await anthropic.memory.close();
 */
export function withMemory<Client extends object>(client: Client, options?: WithMemoryOptions): WithMemory<Client> {
  if (client === null || typeof client !== 'object')
    throw new EngramError('INVALID_INPUT', 'withMemory wraps a client object: new Anthropic() or new OpenAI().');
  if (WRAPPED.has(client))
    throw new EngramError('INVALID_INPUT', 'This client already has memory (withMemory was applied twice).');
  const kind = clientKind(client);
  const memory = new ClientMemory(options);
  const handle: ClientMemoryHandle = { flush: () => memory.flush(), close: () => memory.close() };
  // Filled once the wrapped client exists: a resource's helpers that go through `this._client`
  // (chat.completions.stream, runTools, responses.stream) then reach the wrapped create too.
  const shared: Record<string, unknown> = {};
  const members: Record<string, unknown> =
    kind === 'anthropic'
      ? { messages: resource(member(client, 'messages'), { create: ANTHROPIC_MESSAGES }, memory, shared) }
      : {
          chat: overlay(member(client, 'chat'), {
            completions: resource(
              member(member(client, 'chat'), 'completions'),
              { create: OPENAI_CHAT },
              memory,
              shared,
            ),
          }),
          responses: resource(member(client, 'responses'), { create: OPENAI_RESPONSES }, memory, shared),
        };
  const wrapped = overlay(client, { ...members, memory: handle }, true);
  shared._client = wrapped;
  WRAPPED.add(wrapped);
  return wrapped as WithMemory<Client>;
}

function clientKind(client: object): 'anthropic' | 'openai' {
  const messages = (client as Json).messages as Json | undefined;
  if (messages && typeof messages.create === 'function' && typeof messages.stream === 'function') return 'anthropic';
  const chat = (client as Json).chat as Json | undefined;
  const completions = chat?.completions as Json | undefined;
  const responses = (client as Json).responses as Json | undefined;
  if (typeof completions?.create === 'function' && typeof responses?.create === 'function') return 'openai';
  const name = (client as { constructor?: { name?: unknown } }).constructor?.name;
  throw new EngramError(
    'INVALID_INPUT',
    `withMemory wraps an Anthropic client (@anthropic-ai/sdk) or an OpenAI client (openai), not ${typeof name === 'string' ? name.slice(0, 60) : 'this object'}.`,
  );
}

function member(object: object, name: string): object {
  return (object as Json)[name] as object;
}

/**
 * A view of `target` with some members replaced. The client's own methods are bound to the client
 * (they read its private fields); a resource's are not, so its helpers (messages.stream) call the
 * wrapped create through `this`.
 */
function overlay<T extends object>(target: T, members: Record<string, unknown>, bindMethods = false): T {
  const bound = new Map<PropertyKey, unknown>();
  return new Proxy(target, {
    get(object, property) {
      if (typeof property === 'string' && Object.hasOwn(members, property)) return members[property];
      const value: unknown = Reflect.get(object, property, object);
      if (!bindMethods || typeof value !== 'function') return value;
      if (!bound.has(property)) bound.set(property, (value as Method).bind(object));
      return bound.get(property);
    },
  });
}

/** An API resource whose named methods recall before the request and queue extraction after the answer. */
function resource(
  target: object,
  methods: Record<string, WireApi>,
  memory: ClientMemory,
  shared: Record<string, unknown>,
): object {
  const members: Record<string, unknown> = {};
  Object.defineProperty(members, '_client', { enumerable: true, get: () => shared._client });
  for (const [name, api] of Object.entries(methods)) {
    const original = (target as Json)[name] as Method;
    members[name] = function create(this: unknown, ...args: unknown[]): unknown {
      return memoryCall({ target, original, args, api, memory });
    };
  }
  return overlay(target, members);
}

function memoryCall(call: {
  target: object;
  original: Method;
  args: unknown[];
  api: WireApi;
  memory: ClientMemory;
}): unknown {
  const { target, original, args, api, memory } = call;
  const [params, requestOptions] = args as [unknown, Json | undefined];
  if (params === null || typeof params !== 'object' || Array.isArray(params)) return original.apply(target, args);
  const request = params as Json;
  let query: string;
  try {
    query = api.query(request);
  } catch (error) {
    memory.emit({ type: 'memory-skipped', error: turnError(error) });
    return original.apply(target, args);
  }
  const signal = requestOptions?.signal instanceof AbortSignal ? requestOptions.signal : undefined;
  const sent = memory.prepare(query, signal).then(
    (injection) => (injection ? api.inject(request, injection) : request),
    () => request,
  );
  // Held in an object: a bare APIPromise would be awaited (and parsed) by the promise chain.
  const started = sent.then((body) => ({
    api: original.apply(target, [body, ...args.slice(1)]) as ApiPromiseLike<unknown>,
  }));
  return deferredCall(started, (data: unknown) => {
    try {
      afterAnswer({ request, data, api, memory });
    } catch (error) {
      memory.emit({ type: 'memory-skipped', error: turnError(error) });
    }
    return data;
  });
}

/** Queues the turn: at once for an answer, after the last event for a stream. */
function afterAnswer(turn: { request: Json; data: unknown; api: WireApi; memory: ClientMemory }): void {
  const { request, data, api, memory } = turn;
  const index = api.nextIndex(request);
  const queue = (answer: ConversationMessage | undefined): void => {
    if (!answer) return;
    const sessionId = memory.sessionId(() => api.seed(request));
    memory.finish({ sessionId, messages: [...api.conversation(request), answer] });
  };
  if (request.stream === true && data !== null && typeof data === 'object') {
    const reader = api.streamAnswer();
    observeStream(
      data,
      (event) => reader.read(event),
      () => queue(reader.message(index)),
    );
    return;
  }
  queue(api.answer(data, index));
}
