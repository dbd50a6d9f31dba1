// Only types come from `ai` (an optional peer dependency): this module runs without it installed.
import type { LanguageModelMiddleware } from 'ai';
import type { ConversationMessage, ConversationToolCall } from '../../contracts/conversation.js';
import type { MemoryInjection } from '../../agent/memory-injection.js';
import { turnError } from '../../agent/memory-injection.js';
import { ClientMemory } from './client-memory.js';
import type { ClientMemoryHandle, WithMemoryOptions } from './client-memory-options.js';
import type { WrappedClientModel } from './extraction-model-choice.js';
import { joinPrompt, parseToolInput, resultText, shortHash, withMessageId } from './wrapped-call.js';

/** The middleware's options: the same as withMemory's (engram/node), by this entry's name. */
export type EngramMiddlewareOptions = WithMemoryOptions;

/** The AI SDK middleware with memory, and its handle to flush queued extraction and close the store. */
export type EngramMiddleware = LanguageModelMiddleware & { readonly memory: ClientMemoryHandle };

// The provider spec's shapes, read off the middleware type (`ai` re-exports only some of them by name).
type LanguageModelV3CallOptions = Parameters<NonNullable<LanguageModelMiddleware['transformParams']>>[0]['params'];
type LanguageModelV3Prompt = LanguageModelV3CallOptions['prompt'];
type PromptMessage = LanguageModelV3Prompt[number];
type LanguageModelV3Content = Awaited<
  ReturnType<NonNullable<LanguageModelMiddleware['wrapGenerate']>>
>['content'][number];
type LanguageModelV3StreamPart =
  Awaited<ReturnType<NonNullable<LanguageModelMiddleware['wrapStream']>>>['stream'] extends ReadableStream<infer Part>
    ? Part
    : never;

/**
 * Memory for the Vercel AI SDK (v6): use with `wrapLanguageModel({ model, middleware })`, then
 * `generateText` and `streamText` recall for the last user message, get the static part at the start
 * of the system prompt and `<memory_context>` at its end, and queue extraction after the answer (after
 * a stream's last part) without delaying it. Same options and the same fail-open behaviour as
 * `withMemory`; bad options throw an EngramError here.
 * @example
 * const middleware = engramMiddleware();
 * const model = wrapLanguageModel({ model: anthropic('claude-sonnet-5-5'), middleware });
 * const { text } = await generateText({ model, prompt: 'Where do we deploy?' });
 * await middleware.memory.close();
 */
export function engramMiddleware(options?: EngramMiddlewareOptions): EngramMiddleware {
  const memory = new ClientMemory(options);
  // The prompt as the caller gave it, by the params the model is called with (the session's name reads it).
  const original = new WeakMap<LanguageModelV3CallOptions, LanguageModelV3Prompt>();

  const queue = (
    params: LanguageModelV3CallOptions,
    answer: Omit<ConversationMessage, 'id'> | undefined,
    model: { provider?: unknown; modelId?: unknown },
  ): void => {
    if (!answer) return;
    try {
      const prompt = original.get(params) ?? params.prompt;
      const messages = promptConversation(params.prompt);
      const sessionId = memory.sessionId(() => sessionSeed(prompt));
      const client = providerModel(model.provider);
      memory.finish(
        { sessionId, messages: [...messages, withMessageId(params.prompt.length, answer)] },
        { model: model.modelId, ...(client && { client }) },
      );
    } catch (error) {
      memory.emit({ type: 'memory-skipped', error: turnError(error) });
    }
  };

  return {
    specificationVersion: 'v3',
    memory: { flush: () => memory.flush(), close: () => memory.close() },
    async transformParams({ params }) {
      let query: string;
      try {
        query = promptQuery(params.prompt);
      } catch (error) {
        memory.emit({ type: 'memory-skipped', error: turnError(error) });
        return params;
      }
      const injection = await memory.prepare(query, params.abortSignal);
      if (!injection) return params;
      const transformed = { ...params, prompt: promptWithMemory(params.prompt, injection) };
      original.set(transformed, params.prompt);
      return transformed;
    },
    async wrapGenerate({ doGenerate, params, model }) {
      const result = await doGenerate();
      queue(params, answerOf(result.content), model);
      return result;
    },
    async wrapStream({ doStream, params, model }) {
      const { stream, ...rest } = await doStream();
      const answer = new StreamAnswer();
      const watched = stream.pipeThrough(
        new TransformStream<LanguageModelV3StreamPart, LanguageModelV3StreamPart>({
          transform(part, controller) {
            controller.enqueue(part);
            answer.read(part);
          },
          flush() {
            queue(params, answer.message(), model);
          },
        }),
      );
      return { stream: watched, ...rest };
    },
  };
}

/**
 * The provider of an AI SDK model (`anthropic.messages`, `openai.chat`, `openai.responses`…) as the
 * wrapped client's: its endpoint and key are the provider's own settings, which the AI SDK keeps
 * private, so they come from engram's (ANTHROPIC_*, OPENAI_*). Another provider: the settings decide.
 */
function providerModel(provider: unknown): WrappedClientModel | undefined {
  if (typeof provider !== 'string') return undefined;
  const family = provider.split('.')[0];
  if (family !== 'anthropic' && family !== 'openai') return undefined;
  return { provider: family, from: `the AI SDK model of ${provider.slice(0, 60)}` };
}

function promptQuery(prompt: LanguageModelV3Prompt): string {
  for (let index = prompt.length - 1; index >= 0; index -= 1) {
    const message = prompt[index]!;
    if (message.role !== 'user') continue;
    const text = partsText(message.content);
    if (text !== '') return text;
  }
  return '';
}

/** The static part at the start of the first system message and the block at its end; a system message is added when there is none. */
function promptWithMemory(prompt: LanguageModelV3Prompt, injection: MemoryInjection): LanguageModelV3Prompt {
  const { staticPart, block } = injection;
  if (staticPart === '' && block === '') return prompt;
  const [first, ...rest] = prompt;
  if (first?.role === 'system') return [{ ...first, content: joinPrompt([staticPart, first.content, block]) }, ...rest];
  return [{ role: 'system', content: joinPrompt([staticPart, block]) }, ...prompt];
}

function sessionSeed(prompt: LanguageModelV3Prompt): string {
  const system = prompt.flatMap((message) => (message.role === 'system' ? [message.content] : []));
  const user = prompt.find((message) => message.role === 'user');
  return `sdk-ai-${shortHash(JSON.stringify([system, user ? partsText(user.content) : '']))}`;
}

function promptConversation(prompt: LanguageModelV3Prompt): ConversationMessage[] {
  return prompt.flatMap((message, index) => {
    const converted = fromPrompt(message);
    return converted ? [withMessageId(index, converted)] : [];
  });
}

function fromPrompt(message: PromptMessage): Omit<ConversationMessage, 'id'> | undefined {
  if (message.role === 'system') return undefined;
  if (message.role === 'user') return { role: 'user', text: partsText(message.content) };
  if (message.role === 'assistant') {
    const toolCalls: ConversationToolCall[] = message.content.flatMap((part) =>
      part.type === 'tool-call' ? [{ id: part.toolCallId, name: part.toolName, input: toolInput(part.input) }] : [],
    );
    return { role: 'assistant', text: partsText(message.content), ...(toolCalls.length > 0 && { toolCalls }) };
  }
  const toolResults = message.content.flatMap((part) =>
    part.type === 'tool-result'
      ? [{ toolUseId: part.toolCallId, content: resultText(outputValue(part.output)).slice(0, 10_000) }]
      : [],
  );
  return { role: 'tool', text: '', toolResults };
}

function answerOf(content: readonly LanguageModelV3Content[]): Omit<ConversationMessage, 'id'> {
  const text = content.flatMap((part) => (part.type === 'text' ? [part.text] : [])).join('');
  const toolCalls = content.flatMap((part) =>
    part.type === 'tool-call' ? [{ id: part.toolCallId, name: part.toolName, input: parseToolInput(part.input) }] : [],
  );
  return { role: 'assistant', text, ...(toolCalls.length > 0 && { toolCalls }) };
}

/**
 * The answer from the stream's parts: text deltas and complete tool calls, kept once the stream
 * finished. A stream the provider ended with an error (an `error` part, then a `finish` whose reason
 * is `error`, as @ai-sdk/openai sends one) is not an answer: it is not extracted.
 */
class StreamAnswer {
  #text = '';
  readonly #calls: ConversationToolCall[] = [];
  #finished = false;
  #failed = false;

  read(part: LanguageModelV3StreamPart): void {
    if (part.type === 'text-delta') this.#text += part.delta;
    else if (part.type === 'tool-call')
      this.#calls.push({ id: part.toolCallId, name: part.toolName, input: parseToolInput(part.input) });
    else if (part.type === 'error') this.#failed = true;
    else if (part.type === 'finish') {
      this.#finished = true;
      if (finishReason(part.finishReason) === 'error') this.#failed = true;
    }
  }

  message(): Omit<ConversationMessage, 'id'> | undefined {
    if (!this.#finished || this.#failed) return undefined;
    return { role: 'assistant', text: this.#text, ...(this.#calls.length > 0 && { toolCalls: this.#calls }) };
  }
}

/** The unified finish reason (V3 gives `{ unified, raw }`; a plain string is read as it is). */
function finishReason(reason: unknown): string | undefined {
  if (typeof reason === 'string') return reason;
  const unified = (reason as { unified?: unknown } | null)?.unified;
  return typeof unified === 'string' ? unified : undefined;
}

function partsText(content: ReadonlyArray<{ type: string; text?: string }>): string {
  return content
    .flatMap((part) => (part.type === 'text' && typeof part.text === 'string' ? [part.text] : []))
    .join('\n');
}

function toolInput(input: unknown): Record<string, unknown> {
  if (typeof input === 'string') return parseToolInput(input);
  return input !== null && typeof input === 'object' && !Array.isArray(input) ? (input as Record<string, unknown>) : {};
}

function outputValue(output: unknown): unknown {
  const value = (output as { value?: unknown } | null)?.value;
  return typeof value === 'string' ? value : value === undefined ? output : JSON.stringify(value);
}
