import { estimateTextTokens } from '../kernel/token-estimate.js';
import type {
  AppliedContextEdit,
  ContentBlock,
  LanguageModelMessage,
  LanguageModelStopReason,
} from '../contracts/language-model.js';
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
  type RecordedModelRequest,
  type ScriptedModelError,
  type ScriptedModelMessage,
  type WireReply,
} from './loopback-model-server.js';
import { MessageThreads, type ThreadRefusal } from './anthropic-message-threads.js';
import { checkMessagesRequest } from './anthropic-messages-request-check.js';
import { SimulatedPromptCache } from './simulated-prompt-cache.js';

export interface AnthropicMessagesServerOptions {
  /** When set, every request must carry it (`x-api-key`, or `Authorization: Bearer`); others get 401. */
  apiKey?: string;
  /** Answers what the script does not cover; default: a text answer "OK". */
  respond?: ModelServerResponder;
  /** Largest request body; larger ones get 413 request_too_large (default 32 MB, as the real API). */
  maxBodyBytes?: number;
  /** Shortest prefix the simulated prompt cache keeps (default 1,024 tokens). */
  minCacheableTokens?: number;
  /** Characters per text delta when streaming (default 16). */
  streamChunkCharacters?: number;
  /**
   * Accept what Claude Code sends besides the documented API (FORMATS §1.6): `role:"system"` entries
   * in `messages` (hook context) and any path prefix before `/v1/messages` (tests tell runs apart by
   * the prefix of `ANTHROPIC_BASE_URL`). Default false: such requests are refused as the API does.
   */
  claudeCode?: boolean;
}

const ERRORS: Record<ScriptedModelError['kind'], { status: number; type: string; message: string }> = {
  rate_limit: {
    status: 429,
    type: 'rate_limit_error',
    message: 'Number of request tokens has exceeded your per-minute rate limit.',
  },
  overloaded: { status: 529, type: 'overloaded_error', message: 'Overloaded' },
  server: { status: 500, type: 'api_error', message: 'Internal server error' },
  unavailable: { status: 503, type: 'api_error', message: 'Service unavailable' },
  auth: { status: 401, type: 'authentication_error', message: 'invalid x-api-key' },
  permission: {
    status: 403,
    type: 'permission_error',
    message: 'Your API key does not have permission to use the specified resource.',
  },
  not_found: { status: 404, type: 'not_found_error', message: 'The requested resource could not be found.' },
  invalid_request: { status: 400, type: 'invalid_request_error', message: 'Invalid request.' },
  too_large: {
    status: 413,
    type: 'request_too_large',
    message: 'Request exceeds the maximum allowed number of bytes.',
  },
};

const WIRE_STOP_REASONS: Record<LanguageModelStopReason, string> = {
  end: 'end_turn',
  tool_use: 'tool_use',
  max_tokens: 'max_tokens',
  other: 'refusal',
};

/**
 * Starts a loopback server speaking Anthropic's Messages API (`POST /v1/messages`) to the real SDK:
 * content blocks, tool_use, stop_reason, usage with cache fields from a simulated prompt cache,
 * error shapes `{type:'error', error:{type, message}}` with their statuses (429 with retry-after,
 * 529 overloaded_error), a `request-id` header, and SSE streaming when the request asks for it.
 * Scripted per test and recording every request (headers, raw and parsed body, and a reading in
 * engram's terms). It checks what the real API checks that engram could get wrong.
 * @example
 * const server = await startAnthropicMessagesServer();
 * server.script({ error: { kind: 'rate_limit', retryAfter: 1 } }, { message: { text: 'Hi' } });
 * const client = new Anthropic({ apiKey: 'test', baseURL: server.url });
 */
export async function startAnthropicMessagesServer(
  options: AnthropicMessagesServerOptions = {},
): Promise<LanguageModelServer> {
  const cache = new SimulatedPromptCache({ minCacheableTokens: options.minCacheableTokens ?? 1_024 });
  const chunk = options.streamChunkCharacters ?? 16;
  const threads = new MessageThreads();
  let count = 0;
  return startLoopbackModelServer(
    {
      basePath: '',
      maxBodyBytes: options.maxBodyBytes ?? 32 * 1024 * 1024,
      tooLarge: () => errorReply({ kind: 'too_large' }, count++),
      summarize: summarizeMessagesRequest,
      answer(request, reply) {
        const index = count++;
        const route = request.path.split('?')[0]!;
        const known = route === '/v1/messages' || (options.claudeCode === true && route.endsWith('/v1/messages'));
        if (request.method !== 'POST' || !known) {
          return errorReply({ kind: 'not_found', message: `Unknown route ${request.method} ${request.path}.` }, index);
        }
        if (options.apiKey !== undefined && !carriesKey(request, options.apiKey))
          return errorReply({ kind: 'auth' }, index);
        if (reply && !('message' in reply)) {
          const requestId = wireId('req_', index);
          return passThroughReply(reply, (error) => anthropicErrorReply(error, requestId), { 'request-id': requestId });
        }
        const threaded = threads.read(request.body);
        if (threaded && 'error' in threaded) return threadRefusal(threaded, index);
        const seen = threaded ? { ...request, body: threaded.body } : request;
        const problem = checkMessagesRequest(seen, options.claudeCode === true);
        if (problem) return errorReply({ kind: 'invalid_request', message: problem }, index);
        const message = reply?.message ?? { text: 'OK' };
        const body = seen.body as Record<string, unknown>;
        const rendered = renderMessage(message, body, cache, index);
        if (threaded) threads.hold(rendered, body);
        const headers = { 'request-id': wireId('req_', index), ...reply?.headers };
        if (body.stream === true) {
          const stream = breakStream(streamEvents(rendered, chunk), reply?.streamBreak, isTextDeltaEvent, (error) =>
            errorEvent(error, index),
          );
          return {
            status: 200,
            headers,
            ...stream,
            ...(reply?.delayMs && { delayMs: reply.delayMs }),
            ...(reply?.chunkDelayMs && { chunkDelayMs: reply.chunkDelayMs }),
          };
        }
        return {
          status: 200,
          headers,
          body: JSON.stringify(rendered),
          ...(reply?.delayMs && { delayMs: reply.delayMs }),
        };
      },
    },
    options.respond,
  );
}

/** A refused thread request, with the `error.details.error_code` the SDK's thread recovery reads. */
function threadRefusal(refusal: ThreadRefusal, index: number): WireReply {
  const reply = anthropicErrorReply(refusal.error, wireId('req_', index));
  if (refusal.errorCode === undefined) return reply;
  const wire = JSON.parse(reply.body) as { error: Record<string, unknown> };
  wire.error.details = { error_code: refusal.errorCode };
  return { ...reply, body: JSON.stringify(wire) };
}

/** An Anthropic error answer: its status, `{type:'error', error:{type, message}, request_id}` and headers. */
export function anthropicErrorReply(
  error: ScriptedModelError,
  requestId = wireId('req_', 0),
): { status: number; headers: Record<string, string>; body: string } {
  const known = ERRORS[error.kind];
  const body = {
    type: 'error',
    error: { type: known.type, message: error.message ?? known.message },
    request_id: requestId,
  };
  return {
    status: known.status,
    headers: { 'request-id': requestId, ...retryAfterHeader(error) },
    body: JSON.stringify(body),
  };
}

function errorReply(error: ScriptedModelError, index: number): WireReply {
  return anthropicErrorReply(error, wireId('req_', index));
}

/** An `error` event inside a stream, as the API sends one when it fails after the answer started. */
function errorEvent(error: ScriptedModelError, index: number): string {
  const known = ERRORS[error.kind];
  return `event: error\ndata: ${JSON.stringify({ type: 'error', error: { type: known.type, message: error.message ?? known.message }, request_id: wireId('req_', index) })}\n\n`;
}

function isTextDeltaEvent(event: string): boolean {
  return event.startsWith('event: content_block_delta\n') && event.includes('"type":"text_delta"');
}

function carriesKey(request: RecordedModelRequest, key: string): boolean {
  const header = request.headers['x-api-key'];
  const authorization = request.headers.authorization;
  return header === key || authorization === `Bearer ${key}`;
}

function renderMessage(
  message: ScriptedModelMessage,
  body: Record<string, unknown>,
  cache: SimulatedPromptCache,
  index: number,
): Record<string, unknown> {
  const content = message.content ?? [{ type: 'text' as const, text: message.text ?? '' }];
  const wireContent = content.map((block) =>
    block.type === 'text'
      ? { type: 'text', text: block.text, citations: null }
      : { type: 'tool_use', id: block.id, name: block.name, input: block.input },
  );
  const stopReason = message.stopReason ?? (content.some((block) => block.type === 'tool_use') ? 'tool_use' : 'end');
  const { segments, breakpoints } = promptSegments(body);
  const cached = cache.explicit(String(body.model), segments, breakpoints);
  const usage = {
    input_tokens: message.usage?.inputTokens ?? cached.input,
    cache_creation_input_tokens: message.usage?.cacheWriteTokens ?? cached.cacheWrite,
    cache_read_input_tokens: message.usage?.cacheReadTokens ?? cached.cacheRead,
    output_tokens: message.usage?.outputTokens ?? Math.max(1, estimateTextTokens(JSON.stringify(wireContent))),
    service_tier: 'standard',
  };
  return {
    id: wireId('msg_', index),
    type: 'message',
    role: 'assistant',
    model: body.model,
    content: wireContent,
    stop_reason: WIRE_STOP_REASONS[stopReason],
    stop_sequence: null,
    stop_details: null,
    container: null,
    usage,
    context_management:
      message.contextEdits || body.context_management
        ? { applied_edits: (message.contextEdits ?? []).map(toAppliedEdit) }
        : null,
  };
}

function toAppliedEdit(edit: AppliedContextEdit): Record<string, unknown> {
  return {
    type: edit.type,
    cleared_tool_uses: edit.clearedToolUses ?? 0,
    cleared_input_tokens: edit.clearedInputTokens ?? 0,
  };
}

/** The request's parts in prompt order (tools, system, messages) and which of them carry cache_control. */
function promptSegments(body: Record<string, unknown>): { segments: string[]; breakpoints: number[] } {
  const segments: string[] = [];
  const breakpoints: number[] = [];
  const add = (part: unknown, text: string): void => {
    if (part && typeof part === 'object' && (part as { cache_control?: unknown }).cache_control)
      breakpoints.push(segments.length);
    segments.push(text);
  };
  const withoutMark = (part: unknown): string =>
    JSON.stringify(part, (key, value) => (key === 'cache_control' ? undefined : value));
  for (const tool of Array.isArray(body.tools) ? body.tools : []) add(tool, withoutMark(tool));
  if (typeof body.system === 'string') add(undefined, body.system);
  for (const block of Array.isArray(body.system) ? body.system : [])
    add(block, String((block as { text?: unknown }).text));
  for (const message of Array.isArray(body.messages)
    ? (body.messages as Array<{ role: string; content: unknown }>)
    : []) {
    const blocks =
      typeof message.content === 'string' ? [{ type: 'text', text: message.content }] : (message.content as unknown[]);
    for (const block of blocks) add(block, `${message.role}:${withoutMark(block)}`);
  }
  return { segments, breakpoints };
}

/** The SSE events of a streamed message, as the API sends them. */
function streamEvents(message: Record<string, unknown>, chunk: number): string[] {
  const event = (type: string, data: Record<string, unknown>): string =>
    `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
  const usage = message.usage as Record<string, unknown>;
  const events = [
    event('message_start', {
      message: {
        ...message,
        content: [],
        stop_reason: null,
        context_management: null,
        usage: { ...usage, output_tokens: 1 },
      },
    }),
    event('ping', {}),
  ];
  (message.content as Array<Record<string, unknown>>).forEach((block, index) => {
    if (block.type === 'text') {
      events.push(event('content_block_start', { index, content_block: { type: 'text', text: '', citations: null } }));
      for (const piece of textPieces(String(block.text), chunk))
        events.push(event('content_block_delta', { index, delta: { type: 'text_delta', text: piece } }));
    } else {
      events.push(
        event('content_block_start', {
          index,
          content_block: { type: 'tool_use', id: block.id, name: block.name, input: {} },
        }),
      );
      for (const piece of textPieces(JSON.stringify(block.input), chunk))
        events.push(event('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: piece } }));
    }
    events.push(event('content_block_stop', { index }));
  });
  // Applied context edits arrive on the final message_delta (FORMATS §4.2).
  events.push(
    event('message_delta', {
      delta: { stop_reason: message.stop_reason, stop_sequence: null },
      usage,
      context_management: message.context_management ?? null,
    }),
  );
  events.push(event('message_stop', {}));
  return events;
}

/** Reads a Messages API request body back into engram's terms. */
export function summarizeMessagesRequest(body: unknown): ModelRequestSummary | undefined {
  const record = body as Record<string, unknown> | null;
  if (record === null || typeof record !== 'object' || !Array.isArray(record.messages)) return undefined;
  const system =
    typeof record.system === 'string'
      ? [{ text: record.system }]
      : Array.isArray(record.system)
        ? (record.system as Array<{ text: string; cache_control?: unknown }>)
        : [];
  const choice = record.tool_choice as { type?: string; name?: string } | undefined;
  return {
    model: String(record.model),
    system: system.map((block) => block.text).join('\n\n'),
    cachedSystemBlocks: system
      .filter((block) => (block as { cache_control?: unknown }).cache_control)
      .map((block) => block.text),
    messages: (record.messages as Array<{ role: 'user' | 'assistant'; content: unknown }>).map(readMessage),
    tools: Array.isArray(record.tools) ? (record.tools as Array<{ name: string }>).map((tool) => tool.name) : [],
    ...(choice && { toolChoice: choice.type === 'tool' ? `tool:${choice.name}` : String(choice.type) }),
    maxOutputTokens: Number(record.max_tokens),
    json: Boolean((record.output_config as { format?: unknown } | undefined)?.format),
    stream: record.stream === true,
  };
}

function readMessage(message: { role: 'user' | 'assistant'; content: unknown }): LanguageModelMessage {
  if (typeof message.content === 'string') return { role: message.role, content: message.content };
  const blocks = (message.content as Array<Record<string, unknown>>).map((block): ContentBlock => {
    if (block.type === 'tool_use')
      return {
        type: 'tool_use',
        id: String(block.id),
        name: String(block.name),
        input: block.input as Record<string, unknown>,
      };
    if (block.type === 'tool_result') {
      const content =
        typeof block.content === 'string'
          ? block.content
          : ((block.content as Array<{ text?: string }> | undefined) ?? []).map((part) => part.text ?? '').join('');
      return {
        type: 'tool_result',
        toolUseId: String(block.tool_use_id),
        content,
        ...(block.is_error !== undefined && { isError: Boolean(block.is_error) }),
      };
    }
    return { type: 'text', text: String(block.text) };
  });
  return { role: message.role, content: blocks };
}
