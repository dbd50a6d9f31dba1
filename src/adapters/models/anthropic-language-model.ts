import type Anthropic from '@anthropic-ai/sdk';
import { EngramError } from '../../kernel/errors.js';
import { anthropicNativeTool, memoryToolLayoutText } from '../../contracts/memory-tool-definition.js';
import { readJsonAnswer } from '../../kernel/json-answer.js';
import type {
  ContentBlock,
  LanguageModel,
  LanguageModelMessage,
  LanguageModelRequest,
  LanguageModelResponse,
  LanguageModelStopReason,
  LanguageModelUsage,
  ToolDefinition,
} from '../../contracts/language-model.js';
import { JSON_ANSWER_INSTRUCTION } from './json-answer-instruction.js';
import { checkLanguageModelRequest } from './language-model-request-check.js';
import { checkApiKey, checkModelId, type ModelAdapterOptions } from './model-adapter-options.js';
import { checkBaseUrl, describeEndpoint } from '../http/base-url.js';
import {
  describeNonSdkError,
  networkReason,
  type AttemptFailure,
  type HttpRequestPolicy,
} from '../http/request-policy.js';
import { modelFailureReport, modelCallPolicy, type ModelCallContext } from './model-call-policy.js';
import { collectMessageStream } from './anthropic-message-stream.js';
import {
  CONTEXT_MANAGEMENT_BETA,
  StreamCutShort,
  TextDeltaRelay,
  checkStreamingAndContextEditing,
  readAppliedEdits,
  toContextManagement,
} from './model-streaming-request.js';

type AnthropicSdk = typeof import('@anthropic-ai/sdk');

export interface AnthropicLanguageModelOptions extends ModelAdapterOptions {
  /** Lifetime of the cache entries that marked system blocks create: `5m` (default) or `1h` (dearer to write). */
  cacheTtl?: '5m' | '1h';
}

const DEFAULT_BASE_URL = 'https://api.anthropic.com';
/** The Messages API accepts at most four cache breakpoints per request. */
const MAX_CACHE_BREAKPOINTS = 4;
/** Stand-in key for a server that needs none: the SDK insists on a credential, and the header carrying it is removed. */
const NO_KEY = 'engram-no-key';

// The SDK costs ~400 ms to import: load it on the first call, so commands that never ask a model stay fast.
let sdkLoading: Promise<AnthropicSdk> | undefined;
const loadSdk = (): Promise<AnthropicSdk> => (sdkLoading ??= import('@anthropic-ai/sdk'));

/**
 * A LanguageModel over Anthropic's Messages API through the official SDK (its retries off: engram's
 * HTTP request policy retries). System blocks marked `cache: true` become `cache_control` breakpoints,
 * so a stable prefix (instructions, the MEMORY.md index) is served from the prompt cache. JSON answers
 * are asked for in an uncached instruction after the prefix (no prefill, which newer models refuse)
 * and checked: text that is not JSON is MODEL_OUTPUT_INVALID with the raw text in `details.text`.
 * @example
 * const model = new AnthropicLanguageModel({ model: 'claude-haiku-5-5', apiKey: process.env.ANTHROPIC_API_KEY });
 * const answer = await model.generate({ messages: [{ role: 'user', content: 'Hello' }], maxOutputTokens: 100 });
 */
export class AnthropicLanguageModel implements LanguageModel {
  readonly provider = 'anthropic';
  readonly modelId: string;
  readonly baseUrl: string;
  readonly #apiKey: string | undefined;
  readonly #fetch: typeof fetch | undefined;
  readonly #cacheTtl: '5m' | '1h';
  readonly #policy: HttpRequestPolicy;
  readonly #timeoutMs: number;
  #client: Anthropic | undefined;

  constructor(options: AnthropicLanguageModelOptions) {
    if (options === null || typeof options !== 'object')
      throw new EngramError('CONFIG_INVALID', 'AnthropicLanguageModel takes an options object with a model id.');
    this.modelId = checkModelId(
      options.model,
      'set model.model / ENGRAM_MODEL to an Anthropic model id, e.g. claude-sonnet-5-5.',
    );
    this.#apiKey = checkApiKey(options.apiKey, 'The Anthropic API key (ANTHROPIC_API_KEY or model.apiKey)');
    this.baseUrl = checkBaseUrl(options.baseUrl, {
      setting: 'Anthropic base URL (ANTHROPIC_BASE_URL or model.baseUrl)',
      example: DEFAULT_BASE_URL,
      fallback: DEFAULT_BASE_URL,
      keySetting: 'the API key',
    });
    if (options.cacheTtl !== undefined && options.cacheTtl !== '5m' && options.cacheTtl !== '1h') {
      throw new EngramError('CONFIG_INVALID', `cacheTtl is "5m" or "1h", got ${JSON.stringify(options.cacheTtl)}.`);
    }
    this.#cacheTtl = options.cacheTtl ?? '5m';
    this.#fetch = options.fetch;
    const { policy, timeoutMs } = modelCallPolicy(options);
    this.#policy = policy;
    this.#timeoutMs = timeoutMs;
  }

  async generate(request: LanguageModelRequest): Promise<LanguageModelResponse> {
    checkLanguageModelRequest(request);
    checkStreamingAndContextEditing(request);
    const body = toMessagesRequest(this.modelId, request, this.#cacheTtl);
    const sdk = await loadSdk();
    const client = this.#open(sdk);
    const context = this.#context(sdk);
    const message = await this.#policy.run(
      // The SDK's own timeout stays above the policy's, so the policy decides and reports it.
      (signal, remainingMs) =>
        this.#attempt(client, body, request, context, { signal, timeout: remainingMs + 1_000, maxRetries: 0 }),
      request,
      modelFailureReport(context),
    );
    const response = readMessage(message, request, context.service);
    const contextEdits = request.contextEditing
      ? readAppliedEdits((message as { context_management?: unknown }).context_management)
      : [];
    return request.contextEditing ? { ...response, contextEdits } : response;
  }

  /**
   * One try: the plain call, or a stream when the caller wants text as it comes (same answer, read
   * from the events); through `client.beta.messages` with the context-management beta when the
   * request asks for server-side context editing.
   */
  async #attempt(
    client: Anthropic,
    body: Anthropic.MessageCreateParamsNonStreaming,
    request: LanguageModelRequest,
    context: ModelCallContext,
    options: { signal: AbortSignal; timeout: number; maxRetries: number },
  ): Promise<unknown> {
    const editing = request.contextEditing && {
      context_management: toContextManagement(request.contextEditing),
      betas: [CONTEXT_MANAGEMENT_BETA],
    };
    const create = (params: Record<string, unknown>): Promise<unknown> =>
      editing
        ? client.beta.messages.create(
            { ...params, ...editing } as unknown as Parameters<Anthropic['beta']['messages']['create']>[0],
            options,
          )
        : client.messages.create(params as unknown as Anthropic.MessageCreateParams, options);
    const onTextDelta = request.onTextDelta;
    if (!onTextDelta) return create(body as unknown as Record<string, unknown>);
    const relay = new TextDeltaRelay(onTextDelta, options.signal);
    try {
      const events = (await create({ ...body, stream: true })) as AsyncIterable<unknown>;
      return await collectMessageStream(events, relay);
    } catch (error) {
      throw relay.fail(error, context);
    }
  }

  #open(sdk: AnthropicSdk): Anthropic {
    this.#client ??= new sdk.Anthropic({
      // Always a key, so the SDK never looks for credentials of its own (env, profile files).
      apiKey: this.#apiKey ?? NO_KEY,
      baseURL: this.baseUrl,
      maxRetries: 0,
      timeout: this.#timeoutMs + 1_000,
      openTelemetry: false,
      logLevel: 'off',
      ...(this.#apiKey === undefined && { defaultHeaders: { authorization: null, 'x-api-key': null } }),
      ...(this.#fetch && { fetch: this.#fetch }),
    });
    return this.#client;
  }

  #context(sdk: AnthropicSdk): ModelCallContext {
    return {
      service: `The Anthropic API at ${describeEndpoint(this.baseUrl)}`,
      keyHint: 'ANTHROPIC_API_KEY or model.apiKey',
      endpointHint: `ANTHROPIC_BASE_URL or model.baseUrl; model ${this.modelId} from ENGRAM_MODEL / ENGRAM_SIDE_MODEL`,
      secrets: this.#apiKey === undefined ? [] : [this.#apiKey],
      describe: (error) => describeSdkError(sdk, error),
    };
  }
}

/** The Messages API request for an engram request: cache marks on system blocks, tools, tool blocks. */
export function toMessagesRequest(
  model: string,
  request: LanguageModelRequest,
  cacheTtl: '5m' | '1h' = '5m',
): Anthropic.MessageCreateParamsNonStreaming {
  const blocks = typeof request.system === 'string' ? [{ text: request.system }] : (request.system ?? []);
  // Anthropic refuses empty text blocks; a mark on one belongs to the block before it (the same prefix).
  const kept: Array<{ text: string; cache: boolean }> = [];
  for (const block of blocks) {
    if (block.text !== '') kept.push({ text: block.text, cache: block.cache === true });
    else if (block.cache && kept.length > 0) kept.at(-1)!.cache = true;
  }
  // Only the last marks count when more are given: they end the longest prefixes. Marked messages
  // come after every system block in prompt order, so they are kept first.
  const markedMessages = new Set(
    request.messages.flatMap((message, index) => (message.cache === true ? [index] : [])).slice(-MAX_CACHE_BREAKPOINTS),
  );
  const systemMarks = kept.flatMap((block, index) => (block.cache ? [index] : []));
  const marked = new Set(
    systemMarks.slice(systemMarks.length - Math.min(systemMarks.length, MAX_CACHE_BREAKPOINTS - markedMessages.size)),
  );
  const cacheControl: Anthropic.CacheControlEphemeral =
    cacheTtl === '1h' ? { type: 'ephemeral', ttl: '1h' } : { type: 'ephemeral' };
  const system: Anthropic.TextBlockParam[] = kept.map((block, index) => ({
    type: 'text' as const,
    text: block.text,
    ...(marked.has(index) && { cache_control: cacheControl }),
  }));
  const tools = request.tools ?? [];
  // The memory tool goes as Anthropic's native entry (the API adds its own instructions for it);
  // the entry has no description, so engram's folder layout moves to the system prompt.
  for (const tool of tools) {
    const layout = anthropicNativeTool(tool) ? memoryToolLayoutText(tool) : undefined;
    if (layout !== undefined) system.push({ type: 'text', text: layout });
  }
  if (request.responseFormat === 'json') system.push({ type: 'text', text: JSON_ANSWER_INSTRUCTION });
  const choice = request.toolChoice;
  return {
    model,
    max_tokens: request.maxOutputTokens,
    ...(system.length > 0 && { system }),
    messages: request.messages.map((message, index) =>
      toMessageParam(message, markedMessages.has(index) ? cacheControl : undefined),
    ),
    ...(tools.length > 0 && { tools: tools.map(toToolParam) }),
    ...(tools.length > 0 &&
      choice !== undefined && {
        tool_choice: typeof choice === 'object' ? { type: 'tool' as const, name: choice.name } : { type: choice },
      }),
    ...(request.temperature !== undefined && { temperature: request.temperature }),
  };
}

function toToolParam(tool: ToolDefinition): Anthropic.ToolUnion {
  const native = anthropicNativeTool(tool);
  if (native) return { ...native };
  return {
    name: tool.name,
    description: tool.description,
    input_schema: tool.inputSchema as Anthropic.Tool.InputSchema,
  };
}

function toMessageParam(
  message: LanguageModelMessage,
  cacheControl?: Anthropic.CacheControlEphemeral,
): Anthropic.MessageParam {
  if (typeof message.content === 'string') {
    // A breakpoint sits on a block: a marked string becomes one text block.
    return cacheControl
      ? { role: message.role, content: [{ type: 'text', text: message.content, cache_control: cacheControl }] }
      : { role: message.role, content: message.content };
  }
  const content = message.content.map((block): Anthropic.ContentBlockParam => {
    switch (block.type) {
      case 'text':
        return { type: 'text', text: block.text };
      case 'tool_use':
        return { type: 'tool_use', id: block.id, name: block.name, input: block.input };
      case 'tool_result':
        return {
          type: 'tool_result',
          tool_use_id: block.toolUseId,
          content: block.content,
          ...(block.isError !== undefined && { is_error: block.isError }),
        };
    }
  });
  if (cacheControl && content.length > 0)
    content[content.length - 1] = { ...content.at(-1)!, cache_control: cacheControl } as Anthropic.ContentBlockParam;
  return { role: message.role, content } as Anthropic.MessageParam;
}

const STOP_REASONS: Record<string, LanguageModelStopReason> = {
  end_turn: 'end',
  stop_sequence: 'end',
  tool_use: 'tool_use',
  max_tokens: 'max_tokens',
  // The context window ran out while answering: the answer is cut, as at the output cap.
  model_context_window_exceeded: 'max_tokens',
};

/** Reads a Messages API answer, refusing (MODEL_OUTPUT_INVALID) what does not have its shape. */
function readMessage(message: unknown, request: LanguageModelRequest, service: string): LanguageModelResponse {
  const invalid: (what: string) => never = (what) => {
    throw new EngramError(
      'MODEL_OUTPUT_INVALID',
      `${service} answered ${what}; expected a Messages API message. Is the base URL an Anthropic Messages API?`,
    );
  };
  if (message === null || typeof message !== 'object' || Array.isArray(message))
    invalid(typeof message === 'string' ? 'a body that is not JSON' : 'something that is not a message');
  const record = message as { content?: unknown; stop_reason?: unknown; usage?: unknown };
  if (!Array.isArray(record.content)) invalid('without a content array');
  const content: ContentBlock[] = [];
  for (const raw of record.content as unknown[]) {
    const block = raw as { type?: unknown; text?: unknown; id?: unknown; name?: unknown; input?: unknown } | null;
    if (block === null || typeof block !== 'object') invalid('a content block that is not an object');
    if (block.type === 'text') {
      if (typeof block.text !== 'string') invalid('a text block without text');
      content.push({ type: 'text', text: block.text as string });
    } else if (block.type === 'tool_use') {
      if (typeof block.id !== 'string' || typeof block.name !== 'string')
        invalid('a tool_use block without id or name');
      if (block.input === null || typeof block.input !== 'object' || Array.isArray(block.input))
        invalid('a tool_use block whose input is not an object');
      content.push({
        type: 'tool_use',
        id: block.id as string,
        name: block.name as string,
        input: block.input as Record<string, unknown>,
      });
    }
    // Thinking and server-tool blocks have no place in engram's interface: skipped.
  }
  const usage = readUsage(record.usage, invalid);
  const stopReason = typeof record.stop_reason === 'string' ? (STOP_REASONS[record.stop_reason] ?? 'other') : 'other';
  let text = content.flatMap((block) => (block.type === 'text' ? [block.text] : [])).join('');
  let blocks = content;
  if (request.responseFormat === 'json' && !content.some((block) => block.type === 'tool_use')) {
    const json = readJsonAnswer(text, stopReason, service);
    if (json !== text) {
      text = json;
      blocks = [{ type: 'text', text: json }];
    }
  }
  return { text, content: blocks, stopReason, usage };
}

function readUsage(raw: unknown, invalid: (what: string) => never): LanguageModelUsage {
  const usage = raw as {
    input_tokens?: unknown;
    output_tokens?: unknown;
    cache_creation_input_tokens?: unknown;
    cache_read_input_tokens?: unknown;
  } | null;
  if (usage === null || typeof usage !== 'object') invalid('without usage');
  const count = (value: unknown, field: string, optional: boolean): number | undefined => {
    if (optional && (value === undefined || value === null)) return undefined;
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0)
      invalid(`usage.${field} that is not a token count`);
    return value as number;
  };
  const cacheWrite = count(usage.cache_creation_input_tokens, 'cache_creation_input_tokens', true);
  const cacheRead = count(usage.cache_read_input_tokens, 'cache_read_input_tokens', true);
  return {
    inputTokens: count(usage.input_tokens, 'input_tokens', false)!,
    outputTokens: count(usage.output_tokens, 'output_tokens', false)!,
    ...(cacheRead !== undefined && { cacheReadTokens: cacheRead }),
    ...(cacheWrite !== undefined && { cacheWriteTokens: cacheWrite }),
  };
}

/** Statuses of the error types the API can send inside a stream, which then carries no HTTP status of its own. */
const STREAMED_ERROR_STATUS: Record<string, number> = {
  overloaded_error: 529,
  api_error: 500,
  rate_limit_error: 429,
  timeout_error: 504,
  invalid_request_error: 400,
};

/** The SDK's errors in the policy's terms. */
function describeSdkError(sdk: AnthropicSdk, error: unknown): AttemptFailure {
  if (error instanceof sdk.APIConnectionError)
    return { kind: 'network', message: networkReason(error), cause: error.cause };
  if (error instanceof StreamCutShort) return { kind: 'network', message: error.message };
  if (error instanceof sdk.APIError && error.status === undefined && typeof error.type === 'string') {
    const said = (error.error as { error?: { message?: unknown } } | undefined)?.error?.message;
    return {
      kind: 'http',
      status: STREAMED_ERROR_STATUS[error.type] ?? 500,
      errorType: error.type,
      message: typeof said === 'string' ? said : undefined,
    };
  }
  if (error instanceof sdk.APIError && typeof error.status === 'number') {
    return {
      kind: 'http',
      status: error.status,
      headers: error.headers,
      errorType: error.type ?? undefined,
      message: error.apiMessage ?? errorBodyText(error.error),
      requestId: error.requestID ?? undefined,
    };
  }
  return describeNonSdkError(error);
}

function errorBodyText(body: unknown): string | undefined {
  if (typeof body === 'string') return body;
  if (body === null || body === undefined) return undefined;
  try {
    return JSON.stringify(body);
  } catch {
    return undefined;
  }
}
