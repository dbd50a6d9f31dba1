import { EngramError } from '../../kernel/errors.js';
import type { ConversationMessage } from '../../contracts/conversation.js';
import type { MemoryInjection } from '../../agent/memory-injection.js';
import { turnError } from '../../agent/memory-injection.js';
import { ClientMemory } from './client-memory.js';
import type { ClientMemoryHandle, WithMemoryOptions } from './client-memory-options.js';
import type { WrappedClientModel } from './extraction-model-choice.js';
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
import { AnthropicThreads, continuesThread } from './anthropic-threads.js';
import { deferredCall, observeStream, safely, teeEventStream, type ApiPromiseLike } from './wrapped-call.js';

type Json = Record<string, unknown>;
type Method = (this: unknown, ...args: unknown[]) => unknown;

/** A wrapped client: the same client, plus `memory` to flush queued extraction and close the store. */
export type WithMemory<Client> = Client & { readonly memory: ClientMemoryHandle };

/** How one API method reads a request and its answer. */
interface WireApi {
  query(params: Json): string;
  inject(params: Json, injection: MemoryInjection): Json;
  seed(params: Json): string;
  /** The request's messages; `offset` is how many came before them (a thread's earlier turns). */
  conversation(params: Json, offset?: number): ConversationMessage[];
  /** Where the answer goes in the conversation (the next wire index). */
  nextIndex(params: Json): number;
  answer(data: unknown, index: number): ConversationMessage | undefined;
  streamAnswer(): {
    read(event: unknown): void;
    message(index: number): ConversationMessage | undefined;
    id?(): string | undefined;
  };
  /** The threads of a conversation the server holds (Anthropic's beta messages): what a continuing request leaves out. */
  threads?: AnthropicThreads;
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

/** Anthropic's beta messages: the same wire, plus message threads (a continuing request takes no memory, see anthropic-threads.ts). */
function anthropicBetaMessages(threads: AnthropicThreads): WireApi {
  return { ...ANTHROPIC_MESSAGES, threads };
}

/** What a client and the clients derived from it (`withOptions`) share: one memory, one handle, one set of threads. */
interface Wrapping {
  kind: 'anthropic' | 'openai';
  memory: ClientMemory;
  handle: ClientMemoryHandle;
  threads: AnthropicThreads;
}

const WRAPPED = new WeakSet<object>();

/**
 * Gives an Anthropic client (`@anthropic-ai/sdk`) or an OpenAI client (`openai`) long-term memory and
 * returns the same client: `messages.create` (plain and `stream: true`), `messages.stream` and the
 * same on `beta.messages` (with `parse`, `toolRunner` and `thread`), or `chat.completions.create`
 * (plain and streamed), `responses.create` and `beta.responses.create`, recall for the last user
 * message and put the memory context in the system prompt (the static part first, byte-stable for the
 * prompt cache; `<memory_context>` last), then queue extraction of the turn after the answer (after a
 * stream's last event) without delaying it. Memory fails open: a locked or corrupt store, an
 * unreachable database or a failing model never fails the call (`onEvent` says why). Bad options and
 * an unknown client throw an EngramError here, not on the first call. `withOptions` returns a
 * client with the same memory.
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
  const memory = new ClientMemory(options, clientModel(client, kind));
  const handle: ClientMemoryHandle = { flush: () => memory.flush(), close: () => memory.close() };
  return wrapClient(client, { kind, memory, handle, threads: new AnthropicThreads() }) as WithMemory<Client>;
}

/**
 * The wrapped view of one client. A client the SDK derives from it (`withOptions`, which builds a new
 * client with `new this.constructor`) is wrapped the same way, with the same memory and handle.
 */
function wrapClient(client: object, wrapping: Wrapping): object {
  const { kind, memory, handle } = wrapping;
  // Filled once the wrapped client exists: a resource's helpers that go through `this._client`
  // (chat.completions.stream, runTools, responses.stream, beta.messages.toolRunner) then reach the wrapped create too.
  const shared: Record<string, unknown> = {};
  const members =
    kind === 'anthropic' ? anthropicMembers(client, wrapping, shared) : openAiMembers(client, memory, shared);
  // Any method of the client that returns a new client of its class (withOptions, or a subclass's own)
  // returns it wrapped, with the same memory; one that returns the client itself returns this view.
  const derive = (result: unknown): unknown => {
    if (result === client) return wrapped;
    return result instanceof (client.constructor as new (...args: never[]) => object)
      ? wrapClient(result, wrapping)
      : result;
  };
  const wrapped: object = overlay(client, { ...members, memory: handle }, derive);
  shared._client = wrapped;
  WRAPPED.add(wrapped);
  return wrapped;
}

function anthropicMembers(
  client: object,
  wrapping: Wrapping,
  shared: Record<string, unknown>,
): Record<string, unknown> {
  const { memory, threads } = wrapping;
  const members: Record<string, unknown> = {
    messages: resource(member(client, 'messages'), { create: ANTHROPIC_MESSAGES }, memory, shared),
  };
  // client.beta.messages: create, stream, parse, toolRunner and thread all send through its create.
  const beta = optionalMember(client, 'beta');
  const betaMessages = beta && optionalMember(beta, 'messages');
  if (beta && betaMessages && typeof (betaMessages as Json).create === 'function')
    members.beta = overlay(beta, {
      messages: resource(betaMessages, { create: anthropicBetaMessages(threads) }, memory, shared),
    });
  return members;
}

function openAiMembers(client: object, memory: ClientMemory, shared: Record<string, unknown>): Record<string, unknown> {
  const chat = member(client, 'chat');
  const members: Record<string, unknown> = {
    chat: overlay(chat, {
      completions: resource(member(chat, 'completions'), { create: OPENAI_CHAT }, memory, shared),
    }),
    responses: resource(member(client, 'responses'), { create: OPENAI_RESPONSES }, memory, shared),
  };
  // client.beta.responses (the Responses API's beta route: the same wire, plus `betas`); openai 6 has no beta chat.
  const beta = optionalMember(client, 'beta');
  const betaResponses = beta && optionalMember(beta, 'responses');
  if (beta && betaResponses && typeof (betaResponses as Json).create === 'function')
    members.beta = overlay(beta, {
      responses: resource(betaResponses, { create: OPENAI_RESPONSES }, memory, shared),
    });
  return members;
}

/** The client's own provider, endpoint and key: extraction defaults to them (extraction-model-choice.ts). */
function clientModel(client: object, kind: 'anthropic' | 'openai'): WrappedClientModel {
  const { baseURL, apiKey } = client as { baseURL?: unknown; apiKey?: unknown };
  return {
    provider: kind,
    ...(typeof baseURL === 'string' && { baseUrl: baseURL }),
    ...(typeof apiKey === 'string' && { apiKey }),
    from: kind === 'anthropic' ? 'the wrapped Anthropic client' : 'the wrapped OpenAI client',
  };
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

function optionalMember(object: object, name: string): object | undefined {
  const value = (object as Json)[name];
  return value !== null && typeof value === 'object' ? value : undefined;
}

/**
 * A view of `target` with some members replaced. A client's own methods (given `derive`) are bound to
 * the client (they read its private fields) and what they return passes through `derive`; a
 * resource's are not bound, so its helpers (messages.stream) call the wrapped create through `this`.
 */
function overlay<T extends object>(
  target: T,
  members: Record<string, unknown>,
  derive?: (result: unknown) => unknown,
): T {
  const bound = new Map<PropertyKey, unknown>();
  return new Proxy(target, {
    get(object, property) {
      if (typeof property === 'string' && Object.hasOwn(members, property)) return members[property];
      const value: unknown = Reflect.get(object, property, object);
      if (!derive || typeof value !== 'function' || property === 'constructor') return value;
      if (!bound.has(property))
        bound.set(property, (...args: unknown[]) => derive((value as Method).apply(object, args)));
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
  const afterData = (data: unknown): unknown => {
    try {
      afterAnswer({ request, data, api, memory });
    } catch (error) {
      memory.emit({ type: 'memory-skipped', error: turnError(error) });
    }
    return data;
  };
  let started: Promise<{ api: ApiPromiseLike<unknown> }>;
  if (api.threads && continuesThread(request)) {
    // A request that continues a thread: the server holds its system prompt (with the memory of the
    // thread's first turn), and a continuing request may not send one; it is only read for extraction.
    started = Promise.resolve({ api: original.apply(target, args) as ApiPromiseLike<unknown> });
  } else {
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
    started = sent.then((body) => ({
      api: original.apply(target, [body, ...args.slice(1)]) as ApiPromiseLike<unknown>,
    }));
  }
  const result = deferredCall(started, afterData);
  if (!api.threads || request.stream !== true) return result;
  // A thread's stream (thread.stream(), a streaming toolRunner) parses the raw response itself, never
  // this promise: the turn is read from a copy of the body instead.
  const responseProps = result._responseProps;
  return Object.assign(result, {
    _responseProps: async () =>
      teeEventStream(await responseProps(), (events) => {
        try {
          afterAnswer({ request, data: undefined, events, api, memory });
        } catch (error) {
          memory.emit({ type: 'memory-skipped', error: turnError(error) });
        }
      }),
  });
}

/** Queues the turn: at once for an answer, after the last event for a stream. */
function afterAnswer(turn: {
  request: Json;
  data: unknown;
  /** The stream's events read from a copy of the response (a thread's stream), instead of `data`. */
  events?: AsyncIterable<unknown>;
  api: WireApi;
  memory: ClientMemory;
}): void {
  const { request, data, events, api, memory } = turn;
  const before = api.threads?.before(request);
  const earlier = before?.turns?.messages ?? [];
  const index = earlier.length + api.nextIndex(request);
  const queue = (answer: ConversationMessage | undefined, replyId: string | undefined): void => {
    if (!answer) return;
    const sessionId = before?.turns?.sessionId ?? memory.sessionId(() => before?.seed ?? api.seed(request));
    const messages = [...earlier, ...api.conversation(request, earlier.length), answer];
    api.threads?.keep(request, replyId, { sessionId, messages });
    memory.finish({ sessionId, messages }, { model: request.model });
  };
  if (events) {
    const reader = api.streamAnswer();
    void (async () => {
      for await (const event of events) safely(() => reader.read(event));
      queue(reader.message(index), reader.id?.());
    })().catch(() => undefined);
    return;
  }
  if (request.stream === true && data !== null && typeof data === 'object') {
    const reader = api.streamAnswer();
    observeStream(
      data,
      (event) => reader.read(event),
      () => queue(reader.message(index), reader.id?.()),
    );
    return;
  }
  const id = (data as Json | null)?.id;
  queue(api.answer(data, index), typeof id === 'string' ? id : undefined);
}
