import { estimateTextTokens } from '../kernel/token-estimate.js';
import type { ContentBlock, LanguageModelMessage, LanguageModelStopReason } from '../contracts/language-model.js';
import {
  breakStream,
  passThroughReply,
  retryAfterHeader,
  startLoopbackModelServer,
  textPieces,
  wireId,
  type LanguageModelServer,
  type ModelRequestSummary,
  type ModelServerResponder,
  type ScriptedModelError,
  type ScriptedModelMessage,
  type WireReply,
} from './loopback-model-server.js';
import { checkChatCompletionsRequest } from './openai-chat-completions-request-check.js';
import { SimulatedPromptCache } from './simulated-prompt-cache.js';

export interface OpenAiChatCompletionsServerOptions {
  /** When set, every request must carry `Authorization: Bearer <apiKey>`; others get 401 invalid_api_key. */
  apiKey?: string;
  /** Answers what the script does not cover; default: a text answer "OK". */
  respond?: ModelServerResponder;
  /** Largest request body; larger ones get 413 (default 32 MB). */
  maxBodyBytes?: number;
  /** Shortest shared prefix the simulated automatic cache reports (default 1,024 tokens). */
  minCacheableTokens?: number;
  /** Characters per content delta when streaming (default 16). */
  streamChunkCharacters?: number;
}

const ERRORS: Record<
  ScriptedModelError['kind'],
  { status: number; type: string; code: string | null; message: string }
> = {
  rate_limit: {
    status: 429,
    type: 'requests',
    code: 'rate_limit_exceeded',
    message: 'Rate limit reached for requests per min. Please try again later.',
  },
  overloaded: {
    status: 503,
    type: 'server_error',
    code: null,
    message: 'The engine is currently overloaded, please try again later.',
  },
  server: {
    status: 500,
    type: 'server_error',
    code: null,
    message: 'The server had an error while processing your request. Sorry about that!',
  },
  unavailable: { status: 503, type: 'server_error', code: null, message: 'Service unavailable.' },
  auth: { status: 401, type: 'invalid_request_error', code: 'invalid_api_key', message: 'Incorrect API key provided.' },
  permission: {
    status: 403,
    type: 'invalid_request_error',
    code: 'permission_denied',
    message: 'You are not allowed to use this model.',
  },
  not_found: {
    status: 404,
    type: 'invalid_request_error',
    code: 'model_not_found',
    message: 'The model does not exist or you do not have access to it.',
  },
  invalid_request: { status: 400, type: 'invalid_request_error', code: null, message: 'Invalid request.' },
  too_large: { status: 413, type: 'invalid_request_error', code: 'request_too_large', message: 'Request too large.' },
};

const FINISH_REASONS: Record<LanguageModelStopReason, string> = {
  end: 'stop',
  tool_use: 'tool_calls',
  max_tokens: 'length',
  other: 'content_filter',
};

/**
 * Starts a loopback server speaking OpenAI chat completions (`POST /v1/chat/completions`) to the
 * real SDK, as OpenAI, Ollama, vLLM and LM Studio do: tool_calls, finish_reason, usage with
 * `prompt_tokens_details.cached_tokens` from a simulated automatic prompt cache, error shape
 * `{error:{message, type, param, code}}`, an `x-request-id` header, and SSE streaming (with
 * `stream_options.include_usage`). Scripted per test and recording every request.
 * @example
 * const server = await startOpenAiChatCompletionsServer();
 * server.script({ message: { content: [{ type: 'tool_use', id: 'call_1', name: 'search', input: { q: 'x' } }] } });
 * const client = new OpenAI({ apiKey: 'test', baseURL: server.url });
 */
export async function startOpenAiChatCompletionsServer(
  options: OpenAiChatCompletionsServerOptions = {},
): Promise<LanguageModelServer> {
  const cache = new SimulatedPromptCache({ minCacheableTokens: options.minCacheableTokens ?? 1_024 });
  const chunk = options.streamChunkCharacters ?? 16;
  let count = 0;
  return startLoopbackModelServer(
    {
      basePath: '/v1',
      maxBodyBytes: options.maxBodyBytes ?? 32 * 1024 * 1024,
      tooLarge: () => errorReply({ kind: 'too_large' }, count++),
      summarize: summarizeChatRequest,
      answer(request, reply) {
        const index = count++;
        if (request.method !== 'POST' || request.path.split('?')[0] !== '/v1/chat/completions') {
          return errorReply(
            { kind: 'not_found', message: `Unknown request URL: ${request.method} ${request.path}.` },
            index,
          );
        }
        if (options.apiKey !== undefined && request.headers.authorization !== `Bearer ${options.apiKey}`) {
          const given = String(request.headers.authorization ?? '').replace(/^Bearer\s+/i, '');
          return errorReply(
            {
              kind: 'auth',
              message: `Incorrect API key provided: ${maskKey(given)}. You can find your API key in your account settings.`,
            },
            index,
          );
        }
        if (reply && !('message' in reply)) {
          const requestId = wireId('req_', index);
          return passThroughReply(reply, (error) => openAiErrorReply(error, requestId), { 'x-request-id': requestId });
        }
        const problem = checkChatCompletionsRequest(request);
        if (problem) return errorReply({ kind: 'invalid_request', message: problem }, index);
        const body = request.body as Record<string, unknown>;
        const completion = renderCompletion(reply?.message ?? { text: 'OK' }, body, cache, index);
        const headers = { 'x-request-id': wireId('req_', index), ...reply?.headers };
        const delay = reply?.delayMs ? { delayMs: reply.delayMs } : {};
        if (body.stream === true) {
          const stream = breakStream(
            streamEvents(completion, body, chunk),
            reply?.streamBreak,
            isTextDeltaEvent,
            streamErrorEvent,
          );
          return {
            status: 200,
            headers,
            ...stream,
            ...delay,
            ...(reply?.chunkDelayMs && { chunkDelayMs: reply.chunkDelayMs }),
          };
        }
        return { status: 200, headers, body: JSON.stringify(completion), ...delay };
      },
    },
    options.respond,
  );
}

/** An OpenAI error answer: its status, `{error:{message, type, param, code}}` and headers. */
export function openAiErrorReply(
  error: ScriptedModelError,
  requestId = wireId('req_', 0),
): { status: number; headers: Record<string, string>; body: string } {
  const known = ERRORS[error.kind];
  const body = { error: { message: error.message ?? known.message, type: known.type, param: null, code: known.code } };
  return {
    status: known.status,
    headers: { 'x-request-id': requestId, ...retryAfterHeader(error) },
    body: JSON.stringify(body),
  };
}

function errorReply(error: ScriptedModelError, index: number): WireReply {
  return openAiErrorReply(error, wireId('req_', index));
}

/** An error inside a stream, as OpenAI sends one when it fails after the answer started: a data line with `error`. */
function streamErrorEvent(error: ScriptedModelError): string {
  const known = ERRORS[error.kind];
  return `data: ${JSON.stringify({ error: { message: error.message ?? known.message, type: known.type, param: null, code: known.code } })}\n\n`;
}

function isTextDeltaEvent(event: string): boolean {
  return event.startsWith('data: {') && /"delta":\{"content":/.test(event);
}

/** OpenAI shows a refused key as its first 3 and last 4 characters. */
function maskKey(key: string): string {
  return key.length <= 8
    ? '*'.repeat(key.length)
    : `${key.slice(0, 3)}${'*'.repeat(Math.min(20, key.length - 7))}${key.slice(-4)}`;
}

function renderCompletion(
  message: ScriptedModelMessage,
  body: Record<string, unknown>,
  cache: SimulatedPromptCache,
  index: number,
): Record<string, unknown> {
  const content = message.content ?? [{ type: 'text' as const, text: message.text ?? '' }];
  const text = content.flatMap((block) => (block.type === 'text' ? [block.text] : [])).join('');
  const calls = content.flatMap((block) =>
    block.type === 'tool_use'
      ? [{ id: block.id, type: 'function', function: { name: block.name, arguments: JSON.stringify(block.input) } }]
      : [],
  );
  const stopReason = message.stopReason ?? (calls.length > 0 ? 'tool_use' : 'end');
  const cached = cache.automatic(String(body.model), JSON.stringify([body.tools ?? null, body.messages]));
  const cachedTokens = message.usage?.cacheReadTokens ?? cached.cacheRead;
  const promptTokens = (message.usage?.inputTokens ?? cached.input) + cachedTokens;
  const completionTokens = message.usage?.outputTokens ?? Math.max(1, estimateTextTokens(text + JSON.stringify(calls)));
  return {
    id: wireId('chatcmpl-', index),
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: body.model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: text === '' && calls.length > 0 ? null : text,
          refusal: null,
          annotations: [],
          ...(calls.length > 0 && { tool_calls: calls }),
        },
        logprobs: null,
        finish_reason: FINISH_REASONS[stopReason],
      },
    ],
    usage: {
      prompt_tokens: promptTokens,
      completion_tokens: completionTokens,
      total_tokens: promptTokens + completionTokens,
      prompt_tokens_details: { cached_tokens: cachedTokens, audio_tokens: 0 },
      completion_tokens_details: {
        reasoning_tokens: 0,
        audio_tokens: 0,
        accepted_prediction_tokens: 0,
        rejected_prediction_tokens: 0,
      },
    },
    service_tier: 'default',
    system_fingerprint: 'fp_loopback',
  };
}

/** The SSE chunks of a streamed completion, ending with `data: [DONE]`. */
function streamEvents(completion: Record<string, unknown>, body: Record<string, unknown>, size: number): string[] {
  const [choice] = completion.choices as Array<{
    message: {
      content: string | null;
      tool_calls?: Array<{ id: string; function: { name: string; arguments: string } }>;
    };
    finish_reason: string;
  }>;
  const base = {
    id: completion.id,
    object: 'chat.completion.chunk',
    created: completion.created,
    model: completion.model,
    system_fingerprint: 'fp_loopback',
  };
  const data = (delta: Record<string, unknown>, finish: string | null = null): string =>
    `data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] })}\n\n`;
  const events = [data({ role: 'assistant', content: '', refusal: null })];
  for (const piece of textPieces(choice!.message.content ?? '', size))
    if (piece !== '') events.push(data({ content: piece }));
  (choice!.message.tool_calls ?? []).forEach((call, index) => {
    events.push(
      data({
        tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.function.name, arguments: '' } }],
      }),
    );
    for (const piece of textPieces(call.function.arguments, size))
      events.push(data({ tool_calls: [{ index, function: { arguments: piece } }] }));
  });
  events.push(data({}, choice!.finish_reason));
  if ((body.stream_options as { include_usage?: unknown } | undefined)?.include_usage === true) {
    events.push(`data: ${JSON.stringify({ ...base, choices: [], usage: completion.usage })}\n\n`);
  }
  events.push('data: [DONE]\n\n');
  return events;
}

/** Reads a chat completions request body back into engram's terms (tool messages become tool_result blocks of a user message). */
export function summarizeChatRequest(body: unknown): ModelRequestSummary | undefined {
  const record = body as Record<string, unknown> | null;
  if (record === null || typeof record !== 'object' || !Array.isArray(record.messages)) return undefined;
  const wire = record.messages as Array<{
    role: string;
    content?: unknown;
    tool_calls?: Array<{ id: string; function: { name: string; arguments: string } }>;
    tool_call_id?: string;
  }>;
  const textOf = (content: unknown): string =>
    typeof content === 'string'
      ? content
      : Array.isArray(content)
        ? content.map((part: { text?: string }) => part.text ?? '').join('')
        : '';
  const messages: LanguageModelMessage[] = [];
  let pendingResults: ContentBlock[] = [];
  const flushResults = (): void => {
    if (pendingResults.length > 0) messages.push({ role: 'user', content: pendingResults });
    pendingResults = [];
  };
  for (const message of wire) {
    if (message.role === 'system' || message.role === 'developer') continue;
    if (message.role === 'tool') {
      pendingResults.push({
        type: 'tool_result',
        toolUseId: String(message.tool_call_id),
        content: textOf(message.content),
      });
      continue;
    }
    if (message.role === 'user' && pendingResults.length > 0) {
      messages.push({ role: 'user', content: [...pendingResults, { type: 'text', text: textOf(message.content) }] });
      pendingResults = [];
      continue;
    }
    flushResults();
    if (message.role === 'assistant' && message.tool_calls?.length) {
      const text = textOf(message.content);
      const blocks: ContentBlock[] = text === '' ? [] : [{ type: 'text', text }];
      for (const call of message.tool_calls)
        blocks.push({
          type: 'tool_use',
          id: call.id,
          name: call.function.name,
          input: JSON.parse(call.function.arguments || '{}'),
        });
      messages.push({ role: 'assistant', content: blocks });
    } else {
      messages.push({ role: message.role === 'assistant' ? 'assistant' : 'user', content: textOf(message.content) });
    }
  }
  flushResults();
  const choice = record.tool_choice as string | { function?: { name?: string } } | undefined;
  const format = (record.response_format as { type?: string } | undefined)?.type;
  return {
    model: String(record.model),
    system: wire
      .filter((message) => message.role === 'system' || message.role === 'developer')
      .map((message) => textOf(message.content))
      .join('\n\n'),
    cachedSystemBlocks: [],
    messages,
    tools: Array.isArray(record.tools)
      ? (record.tools as Array<{ function?: { name?: string } }>).map((tool) => String(tool.function?.name))
      : [],
    ...(choice !== undefined && {
      toolChoice:
        typeof choice === 'string' ? (choice === 'required' ? 'any' : choice) : `tool:${choice.function?.name}`,
    }),
    maxOutputTokens: Number(record.max_completion_tokens ?? record.max_tokens ?? 0),
    json: format === 'json_object' || format === 'json_schema',
    stream: record.stream === true,
  };
}
