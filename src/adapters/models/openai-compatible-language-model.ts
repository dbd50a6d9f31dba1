import type OpenAI from 'openai';
import type {
  ChatCompletionCreateParamsNonStreaming,
  ChatCompletionMessageFunctionToolCall,
  ChatCompletionMessageParam,
  ChatCompletionToolChoiceOption,
} from 'openai/resources/chat/completions';
import { EngramError } from '../../kernel/errors.js';
import { readJsonAnswer } from '../../kernel/json-answer.js';
import type {
  ContentBlock,
  LanguageModel,
  LanguageModelMessage,
  LanguageModelRequest,
  LanguageModelResponse,
  LanguageModelStopReason,
  LanguageModelUsage,
} from '../../contracts/language-model.js';
import { messageText, systemText } from '../../contracts/language-model-content.js';
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
import { StreamCutShort, TextDeltaRelay, checkStreamingAndContextEditing } from './model-streaming-request.js';
import { collectChatCompletionStream } from './openai-chat-stream.js';

type OpenAiSdk = typeof import('openai');

export interface OpenAiCompatibleLanguageModelOptions extends ModelAdapterOptions {
  /**
   * The field that caps the answer: `max_completion_tokens` (default; OpenAI's reasoning models
   * require it, and Ollama, vLLM and LM Studio accept it) or `max_tokens` for older servers.
   */
  maxTokensField?: 'max_completion_tokens' | 'max_tokens';
}

const DEFAULT_BASE_URL = 'https://api.openai.com/v1';
/** Stand-in key for a local server that needs none: the SDK insists on one, and the header carrying it is removed. */
const NO_KEY = 'engram-no-key';

// The SDK costs ~150 ms to import: load it on the first call only.
let sdkLoading: Promise<OpenAiSdk> | undefined;
const loadSdk = (): Promise<OpenAiSdk> => (sdkLoading ??= import('openai'));

/**
 * A LanguageModel over OpenAI chat completions through the official SDK, for OpenAI itself and any
 * compatible server (Ollama, vLLM, LM Studio) reached by `baseUrl`. Tools are function tools;
 * tool_use blocks travel as `tool_calls` and tool results as `role: 'tool'` messages. JSON answers
 * use `response_format: json_object` (an object at the root) and are checked. System blocks are
 * joined into one system message; cache marks are ignored (OpenAI caches long prefixes by itself,
 * reported as `cacheReadTokens`).
 * @example
 * const model = new OpenAiCompatibleLanguageModel({ model: 'llama3.1', baseUrl: 'http://localhost:11434/v1' });
 */
export class OpenAiCompatibleLanguageModel implements LanguageModel {
  readonly provider = 'openai-compatible';
  readonly modelId: string;
  readonly baseUrl: string;
  readonly #apiKey: string | undefined;
  readonly #fetch: typeof fetch | undefined;
  readonly #maxTokensField: 'max_completion_tokens' | 'max_tokens';
  readonly #policy: HttpRequestPolicy;
  readonly #timeoutMs: number;
  #client: OpenAI | undefined;

  constructor(options: OpenAiCompatibleLanguageModelOptions) {
    if (options === null || typeof options !== 'object')
      throw new EngramError('CONFIG_INVALID', 'OpenAiCompatibleLanguageModel takes an options object with a model id.');
    this.modelId = checkModelId(
      options.model,
      'set model.model / ENGRAM_MODEL to the model the server serves, e.g. gpt-5.4 or llama3.1.',
    );
    this.#apiKey = checkApiKey(options.apiKey, 'The OpenAI-compatible API key (OPENAI_API_KEY or model.apiKey)');
    this.baseUrl = checkBaseUrl(options.baseUrl, {
      setting: 'OpenAI-compatible base URL (OPENAI_BASE_URL or model.baseUrl)',
      example: DEFAULT_BASE_URL,
      fallback: DEFAULT_BASE_URL,
      keySetting: 'the API key',
    });
    const field = options.maxTokensField ?? 'max_completion_tokens';
    if (field !== 'max_completion_tokens' && field !== 'max_tokens') {
      throw new EngramError(
        'CONFIG_INVALID',
        `maxTokensField is "max_completion_tokens" or "max_tokens", got ${JSON.stringify(field)}.`,
      );
    }
    this.#maxTokensField = field;
    this.#fetch = options.fetch;
    const { policy, timeoutMs } = modelCallPolicy(options);
    this.#policy = policy;
    this.#timeoutMs = timeoutMs;
  }

  async generate(request: LanguageModelRequest): Promise<LanguageModelResponse> {
    checkLanguageModelRequest(request);
    // Context editing is Anthropic's: checked like everywhere, then ignored (no edits reported).
    checkStreamingAndContextEditing(request);
    const body = toChatCompletionRequest(this.modelId, request, this.#maxTokensField);
    const sdk = await loadSdk();
    const client = this.#open(sdk);
    const context = this.#context(sdk);
    const completion = await this.#policy.run(
      (signal, remainingMs) =>
        this.#attempt(client, body, request, context, { signal, timeout: remainingMs + 1_000, maxRetries: 0 }),
      request,
      modelFailureReport(context),
    );
    return readCompletion(completion, request, context.service);
  }

  /** One try: the plain call, or a stream (`stream_options.include_usage` for the usage) read back into the same completion. */
  async #attempt(
    client: OpenAI,
    body: ChatCompletionCreateParamsNonStreaming,
    request: LanguageModelRequest,
    context: ModelCallContext,
    options: { signal: AbortSignal; timeout: number; maxRetries: number },
  ): Promise<unknown> {
    const onTextDelta = request.onTextDelta;
    if (!onTextDelta) return client.chat.completions.create(body, options);
    const relay = new TextDeltaRelay(onTextDelta, options.signal);
    try {
      const chunks = await client.chat.completions.create(
        { ...body, stream: true, stream_options: { include_usage: true } },
        options,
      );
      return await collectChatCompletionStream(chunks, relay);
    } catch (error) {
      throw relay.fail(error, context);
    }
  }

  #open(sdk: OpenAiSdk): OpenAI {
    this.#client ??= new sdk.OpenAI({
      apiKey: this.#apiKey ?? NO_KEY,
      baseURL: this.baseUrl,
      // Only what engram was configured with is sent: no organization, project or admin key from the environment.
      organization: null,
      project: null,
      adminAPIKey: null,
      webhookSecret: null,
      maxRetries: 0,
      timeout: this.#timeoutMs + 1_000,
      logLevel: 'off',
      ...(this.#apiKey === undefined && { defaultHeaders: { authorization: null } }),
      ...(this.#fetch && { fetch: this.#fetch }),
    });
    return this.#client;
  }

  #context(sdk: OpenAiSdk): ModelCallContext {
    return {
      service: `The OpenAI-compatible API at ${describeEndpoint(this.baseUrl)}`,
      keyHint: 'OPENAI_API_KEY or model.apiKey',
      endpointHint: `OPENAI_BASE_URL or model.baseUrl, the API root ending in /v1; model ${this.modelId} from ENGRAM_MODEL / ENGRAM_SIDE_MODEL`,
      secrets: this.#apiKey === undefined ? [] : [this.#apiKey],
      describe: (error) => describeSdkError(sdk, error),
    };
  }
}

/** The chat completions request for an engram request: one system message, function tools, tool messages. */
export function toChatCompletionRequest(
  model: string,
  request: LanguageModelRequest,
  maxTokensField: 'max_completion_tokens' | 'max_tokens' = 'max_completion_tokens',
): ChatCompletionCreateParamsNonStreaming {
  const system = [systemText(request.system), request.responseFormat === 'json' ? JSON_ANSWER_INSTRUCTION : '']
    .filter((part) => part !== '')
    .join('\n\n');
  const messages: ChatCompletionMessageParam[] = system === '' ? [] : [{ role: 'system', content: system }];
  for (const message of request.messages) messages.push(...toChatMessages(message));
  const tools = request.tools ?? [];
  const choice = request.toolChoice;
  return {
    model,
    messages,
    [maxTokensField]: request.maxOutputTokens,
    ...(tools.length > 0 && {
      tools: tools.map((tool) => ({
        type: 'function' as const,
        function: { name: tool.name, description: tool.description, parameters: tool.inputSchema },
      })),
    }),
    ...(tools.length > 0 && choice !== undefined && { tool_choice: toToolChoice(choice) }),
    ...(request.responseFormat === 'json' && { response_format: { type: 'json_object' as const } }),
    ...(request.temperature !== undefined && { temperature: request.temperature }),
  };
}

function toToolChoice(choice: NonNullable<LanguageModelRequest['toolChoice']>): ChatCompletionToolChoiceOption {
  if (typeof choice === 'object') return { type: 'function', function: { name: choice.name } };
  return choice === 'any' ? 'required' : choice;
}

/** One engram message as chat messages: tool results become `tool` messages, answered before any text of the same turn. */
function toChatMessages(message: LanguageModelMessage): ChatCompletionMessageParam[] {
  if (typeof message.content === 'string') return [{ role: message.role, content: message.content }];
  if (message.role === 'assistant') {
    const text = messageText(message);
    const toolCalls = message.content.flatMap((block) =>
      block.type === 'tool_use'
        ? [
            {
              id: block.id,
              type: 'function' as const,
              function: { name: block.name, arguments: JSON.stringify(block.input) },
            },
          ]
        : [],
    );
    return [
      {
        role: 'assistant',
        content: text === '' && toolCalls.length > 0 ? null : text,
        ...(toolCalls.length > 0 && { tool_calls: toolCalls }),
      },
    ];
  }
  const chat: ChatCompletionMessageParam[] = message.content.flatMap((block) =>
    // Chat completions have no error flag on tool results: the text says so.
    block.type === 'tool_result'
      ? [
          {
            role: 'tool' as const,
            tool_call_id: block.toolUseId,
            content: block.isError ? `Error: ${block.content}` : block.content,
          },
        ]
      : [],
  );
  if (message.content.some((block) => block.type === 'text'))
    chat.push({ role: 'user', content: messageText(message) });
  return chat;
}

const STOP_REASONS: Record<string, LanguageModelStopReason> = {
  stop: 'end',
  tool_calls: 'tool_use',
  function_call: 'tool_use',
  length: 'max_tokens',
};

/** Reads a chat completion, refusing (MODEL_OUTPUT_INVALID) what does not have its shape. */
function readCompletion(completion: unknown, request: LanguageModelRequest, service: string): LanguageModelResponse {
  const invalid: (what: string) => never = (what) => {
    throw new EngramError(
      'MODEL_OUTPUT_INVALID',
      `${service} answered ${what}; expected a chat completion. Is the base URL an OpenAI-compatible API root (ending in /v1)?`,
    );
  };
  if (completion === null || typeof completion !== 'object' || Array.isArray(completion))
    invalid(typeof completion === 'string' ? 'a body that is not JSON' : 'something that is not a chat completion');
  const record = completion as { choices?: unknown; usage?: unknown };
  if (!Array.isArray(record.choices) || record.choices.length === 0) invalid('without choices');
  const choice = (record.choices as unknown[])[0] as { message?: unknown; finish_reason?: unknown } | null;
  const message = choice?.message as { content?: unknown; refusal?: unknown; tool_calls?: unknown } | null | undefined;
  if (message === null || typeof message !== 'object') invalid('a choice without a message');
  if (message.content !== undefined && message.content !== null && typeof message.content !== 'string')
    invalid('message content that is not text');
  const content: ContentBlock[] = [];
  // A refusal is the model's answer in words: kept as text, with stop reason "other".
  const refusal = typeof message.refusal === 'string' && message.refusal !== '' ? message.refusal : undefined;
  const answer = typeof message.content === 'string' ? message.content : (refusal ?? '');
  if (answer !== '') content.push({ type: 'text', text: answer });
  if (message.tool_calls !== undefined && message.tool_calls !== null) {
    if (!Array.isArray(message.tool_calls)) invalid('tool_calls that are not a list');
    (message.tool_calls as unknown[]).forEach((raw, index) => content.push(readToolCall(raw, index, invalid)));
  }
  const finish = typeof choice?.finish_reason === 'string' ? choice.finish_reason : '';
  const hasToolUse = content.some((block) => block.type === 'tool_use');
  // Some servers answer tool calls with finish_reason "stop": the calls decide.
  const stopReason: LanguageModelStopReason =
    refusal !== undefined && message.content == null
      ? 'other'
      : hasToolUse
        ? 'tool_use'
        : (STOP_REASONS[finish] ?? 'other');
  const usage = readUsage(record.usage, invalid);
  let text = answer;
  let blocks = content;
  if (request.responseFormat === 'json' && !hasToolUse) {
    const json = readJsonAnswer(text, stopReason, service);
    if (json !== text) {
      text = json;
      blocks = [{ type: 'text', text: json }];
    }
  }
  return { text, content: blocks, stopReason, usage };
}

function readToolCall(raw: unknown, index: number, invalid: (what: string) => never): ContentBlock {
  const call = raw as Partial<ChatCompletionMessageFunctionToolCall> | null;
  if (
    call === null ||
    typeof call !== 'object' ||
    call.function === null ||
    typeof call.function !== 'object' ||
    typeof call.function.name !== 'string'
  ) {
    invalid(`tool call ${index} without a function name`);
  }
  const argumentsText = call.function.arguments ?? '';
  if (typeof argumentsText !== 'string') invalid(`tool call ${index} whose arguments are not a JSON string`);
  let input: unknown = {};
  if (argumentsText.trim() !== '') {
    try {
      input = JSON.parse(argumentsText);
    } catch {
      invalid(`tool call ${index} (${call.function.name}) whose arguments are not valid JSON`);
    }
  }
  if (input === null || typeof input !== 'object' || Array.isArray(input))
    invalid(`tool call ${index} (${call.function.name}) whose arguments are not a JSON object`);
  // A few local servers leave out call ids; the position stands in, so the result can still answer it.
  const id = typeof call.id === 'string' && call.id !== '' ? call.id : `call_${index}`;
  return { type: 'tool_use', id, name: call.function.name, input: input as Record<string, unknown> };
}

/** Usage; `prompt_tokens` includes cached tokens, which engram counts apart (as Anthropic does). Servers that send none count zero. */
function readUsage(raw: unknown, invalid: (what: string) => never): LanguageModelUsage {
  if (raw === undefined || raw === null) return { inputTokens: 0, outputTokens: 0 };
  const usage = raw as {
    prompt_tokens?: unknown;
    completion_tokens?: unknown;
    prompt_tokens_details?: { cached_tokens?: unknown } | null;
  };
  if (typeof usage !== 'object') invalid('usage that is not an object');
  const count = (value: unknown, field: string): number => {
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0)
      invalid(`usage.${field} that is not a token count`);
    return value as number;
  };
  const prompt = count(usage.prompt_tokens ?? 0, 'prompt_tokens');
  const output = count(usage.completion_tokens ?? 0, 'completion_tokens');
  const rawCached = usage.prompt_tokens_details?.cached_tokens;
  const cached =
    rawCached === undefined || rawCached === null
      ? undefined
      : Math.min(prompt, count(rawCached, 'prompt_tokens_details.cached_tokens'));
  return {
    inputTokens: prompt - (cached ?? 0),
    outputTokens: output,
    ...(cached !== undefined && { cacheReadTokens: cached }),
  };
}

/** The SDK's errors in the policy's terms. */
function describeSdkError(sdk: OpenAiSdk, error: unknown): AttemptFailure {
  if (error instanceof sdk.APIConnectionError)
    return { kind: 'network', message: networkReason(error), cause: error.cause };
  if (error instanceof StreamCutShort) return { kind: 'network', message: error.message };
  if (error instanceof sdk.APIError && error.status === undefined) {
    // An error inside a stream carries no HTTP status: its type says whether another try may help.
    const body = error.error as { message?: unknown; type?: unknown; code?: unknown } | undefined;
    const type = typeof body?.type === 'string' ? body.type : undefined;
    const status = type === 'server_error' ? 500 : body?.code === 'rate_limit_exceeded' ? 429 : 400;
    return {
      kind: 'http',
      status,
      errorType: type,
      message: typeof body?.message === 'string' ? body.message : undefined,
    };
  }
  if (error instanceof sdk.APIError && typeof error.status === 'number') {
    const body = error.error as { message?: unknown; type?: unknown; code?: unknown } | undefined;
    const type = typeof error.type === 'string' ? error.type : typeof body?.type === 'string' ? body.type : undefined;
    const code = typeof error.code === 'string' ? error.code : undefined;
    return {
      kind: 'http',
      status: error.status,
      headers: error.headers,
      errorType: code && code !== type ? [type, code].filter(Boolean).join('/') : type,
      message:
        typeof body?.message === 'string' ? body.message : typeof error.error === 'string' ? error.error : undefined,
      requestId: error.requestID ?? undefined,
    };
  }
  return describeNonSdkError(error);
}
