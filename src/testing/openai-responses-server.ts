import { estimateTextTokens } from '../kernel/token-estimate.js';
import type { ContentBlock, LanguageModelMessage, LanguageModelStopReason } from '../contracts/language-model.js';
import { openAiErrorReply } from './openai-chat-completions-server.js';
import {
  breakStream,
  passThroughReply,
  startLoopbackModelServer,
  textPieces,
  wireId,
  type LanguageModelServer,
  type ModelRequestSummary,
  type ModelServerResponder,
  type ScriptedModelError,
  type ScriptedModelMessage,
} from './loopback-model-server.js';

export interface OpenAiResponsesServerOptions {
  /** When set, every request must carry `Authorization: Bearer <apiKey>`; others get 401 invalid_api_key. */
  apiKey?: string;
  /** Answers what the script does not cover; default: a text answer "OK". */
  respond?: ModelServerResponder;
  /** Largest request body; larger ones get 413 (default 32 MB). */
  maxBodyBytes?: number;
  /** Characters per text or arguments delta when streaming (default 16). */
  streamChunkCharacters?: number;
}

const INCOMPLETE_REASONS: Partial<Record<LanguageModelStopReason, string>> = {
  max_tokens: 'max_output_tokens',
  other: 'content_filter',
};

/** `POST …/v1/responses`; a path prefix before `/v1` is accepted, so tests tell runs apart by the base URL. */
const ROUTE = /(^|\/)v1\/responses$/;

/**
 * Starts a loopback server speaking OpenAI's Responses API (`POST /v1/responses`) to the real SDK and
 * to Codex (a `model_providers` entry with `wire_api = "responses"`): `message` and `function_call`
 * output items, usage with cached and reasoning token details, the OpenAI error shape, and SSE
 * streaming with the events Codex reads (`response.created`, `response.output_item.added`,
 * `response.output_text.delta`, `response.function_call_arguments.delta`, `response.output_item.done`,
 * `response.completed`, or `response.failed` for an error inside the stream). Scripted per test and
 * recording every request, with a reading of its `input` items in engram's terms.
 * @example
 * const server = await startOpenAiResponsesServer();
 * server.script({ message: { content: [{ type: 'tool_use', id: 'call_1', name: 'exec_command', input: { cmd: 'ls' } }] } });
 * const client = new OpenAI({ apiKey: 'test', baseURL: server.url });
 */
export async function startOpenAiResponsesServer(
  options: OpenAiResponsesServerOptions = {},
): Promise<LanguageModelServer> {
  const size = options.streamChunkCharacters ?? 16;
  let count = 0;
  return startLoopbackModelServer(
    {
      basePath: '/v1',
      maxBodyBytes: options.maxBodyBytes ?? 32 * 1024 * 1024,
      tooLarge: () => openAiErrorReply({ kind: 'too_large' }, wireId('req_', count++)),
      summarize: summarizeResponsesRequest,
      answer(request, reply) {
        const index = count++;
        const requestId = wireId('req_', index);
        if (request.method !== 'POST' || !ROUTE.test(request.path.split('?')[0]!))
          return openAiErrorReply(
            { kind: 'not_found', message: `Invalid URL (${request.method} ${request.path})` },
            requestId,
          );
        if (options.apiKey !== undefined && request.headers.authorization !== `Bearer ${options.apiKey}`)
          return openAiErrorReply({ kind: 'auth' }, requestId);
        if (reply && !('message' in reply))
          return passThroughReply(reply, (error) => openAiErrorReply(error, requestId), { 'x-request-id': requestId });
        const body = request.body as Record<string, unknown> | null;
        if (body === null || typeof body !== 'object' || Array.isArray(body))
          return openAiErrorReply(
            { kind: 'invalid_request', message: 'We could not parse the JSON body of your request.' },
            requestId,
          );
        if (typeof body.model !== 'string' || body.model === '')
          return openAiErrorReply(
            { kind: 'invalid_request', message: "Missing required parameter: 'model'." },
            requestId,
          );
        const response = renderResponse(reply?.message ?? { text: 'OK' }, body, index);
        const headers = { 'x-request-id': requestId, ...reply?.headers };
        const delay = reply?.delayMs ? { delayMs: reply.delayMs } : {};
        if (body.stream !== true) return { status: 200, headers, body: JSON.stringify(response), ...delay };
        const stream = breakStream(streamEvents(response, size), reply?.streamBreak, isTextDeltaEvent, (error) =>
          failedEvent(response, error),
        );
        return {
          status: 200,
          headers,
          ...stream,
          ...delay,
          ...(reply?.chunkDelayMs && { chunkDelayMs: reply.chunkDelayMs }),
        };
      },
    },
    options.respond,
  );
}

type ResponseObject = ReturnType<typeof renderResponse>;

function renderResponse(message: ScriptedModelMessage, body: Record<string, unknown>, index: number) {
  const content = message.content ?? [{ type: 'text' as const, text: message.text ?? '' }];
  const text = content.flatMap((block) => (block.type === 'text' ? [block.text] : [])).join('');
  const output: Array<Record<string, unknown>> = [];
  if (text !== '')
    output.push({
      type: 'message',
      id: wireId('msg_', index),
      status: 'completed',
      role: 'assistant',
      content: [{ type: 'output_text', text, annotations: [] }],
    });
  for (const block of content) {
    if (block.type !== 'tool_use') continue;
    output.push({
      type: 'function_call',
      id: wireId('fc_', index),
      call_id: block.id,
      name: block.name,
      arguments: JSON.stringify(block.input),
      status: 'completed',
    });
  }
  const incomplete = INCOMPLETE_REASONS[message.stopReason ?? 'end'];
  const cached = message.usage?.cacheReadTokens ?? 0;
  const input =
    (message.usage?.inputTokens ?? Math.max(1, estimateTextTokens(JSON.stringify(body.input ?? '')))) + cached;
  const outputTokens = message.usage?.outputTokens ?? Math.max(1, estimateTextTokens(JSON.stringify(output)));
  return {
    id: wireId('resp_', index),
    object: 'response',
    created_at: Math.floor(Date.now() / 1000),
    status: incomplete ? 'incomplete' : 'completed',
    incomplete_details: incomplete ? { reason: incomplete } : null,
    error: null,
    model: body.model,
    instructions: body.instructions ?? null,
    output,
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    tool_choice: body.tool_choice ?? 'auto',
    tools: body.tools ?? [],
    usage: {
      input_tokens: input,
      input_tokens_details: { cached_tokens: cached },
      output_tokens: outputTokens,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: input + outputTokens,
    },
  };
}

function sse(type: string, data: Record<string, unknown>, sequence: { next: number }): string {
  return `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: sequence.next++, ...data })}\n\n`;
}

/** The events of a streamed response, in the order the API sends them. */
function streamEvents(response: ResponseObject, size: number): string[] {
  const sequence = { next: 0 };
  const started = { ...response, status: 'in_progress', output: [], usage: null };
  const events = [sse('response.created', { response: started }, sequence)];
  events.push(sse('response.in_progress', { response: started }, sequence));
  response.output.forEach((item, outputIndex) => {
    const at = { output_index: outputIndex, item_id: item.id };
    if (item.type === 'message') {
      events.push(
        sse(
          'response.output_item.added',
          { output_index: outputIndex, item: { ...item, status: 'in_progress', content: [] } },
          sequence,
        ),
      );
      const text = (item.content as Array<{ text: string }>)[0]!.text;
      const part = { type: 'output_text', text: '', annotations: [] };
      events.push(sse('response.content_part.added', { ...at, content_index: 0, part }, sequence));
      for (const piece of textPieces(text, size))
        events.push(
          sse('response.output_text.delta', { ...at, content_index: 0, delta: piece, logprobs: [] }, sequence),
        );
      events.push(sse('response.output_text.done', { ...at, content_index: 0, text, logprobs: [] }, sequence));
      events.push(sse('response.content_part.done', { ...at, content_index: 0, part: { ...part, text } }, sequence));
    } else {
      events.push(
        sse(
          'response.output_item.added',
          { output_index: outputIndex, item: { ...item, status: 'in_progress', arguments: '' } },
          sequence,
        ),
      );
      const args = String(item.arguments);
      for (const piece of textPieces(args, size))
        events.push(sse('response.function_call_arguments.delta', { ...at, delta: piece }, sequence));
      events.push(sse('response.function_call_arguments.done', { ...at, arguments: args }, sequence));
    }
    events.push(sse('response.output_item.done', { output_index: outputIndex, item }, sequence));
  });
  const final = response.status === 'incomplete' ? 'response.incomplete' : 'response.completed';
  events.push(sse(final, { response }, sequence));
  return events;
}

function isTextDeltaEvent(event: string): boolean {
  return event.startsWith('event: response.output_text.delta\n');
}

/** An error after the stream started: `response.failed` carrying the error, as the API sends it. */
function failedEvent(response: ResponseObject, error: ScriptedModelError): string {
  const wire = JSON.parse(openAiErrorReply(error).body) as { error: { code: string | null; message: string } };
  const failed = {
    ...response,
    status: 'failed',
    output: [],
    error: { code: wire.error.code ?? 'server_error', message: wire.error.message },
  };
  return sse('response.failed', { response: failed }, { next: 0 });
}

/**
 * Reads a Responses request back into engram's terms: `instructions` and system/developer messages
 * are the system prompt, `function_call` items are tool uses of an assistant message, and
 * `function_call_output` items tool results of a user message.
 */
export function summarizeResponsesRequest(body: unknown): ModelRequestSummary | undefined {
  const record = body as Record<string, unknown> | null;
  if (record === null || typeof record !== 'object' || record.input === undefined) return undefined;
  const items: Array<Record<string, unknown>> =
    typeof record.input === 'string'
      ? [{ type: 'message', role: 'user', content: record.input }]
      : Array.isArray(record.input)
        ? (record.input as Array<Record<string, unknown>>)
        : [];
  const system: string[] = typeof record.instructions === 'string' ? [record.instructions] : [];
  const messages: LanguageModelMessage[] = [];
  const push = (role: 'user' | 'assistant', block: ContentBlock): void => {
    const last = messages.at(-1);
    if (last && last.role === role && Array.isArray(last.content)) (last.content as ContentBlock[]).push(block);
    else messages.push({ role, content: [block] });
  };
  for (const item of items) {
    const type = item.type ?? 'message';
    if (type === 'message') {
      const text = contentText(item.content);
      if (item.role === 'system' || item.role === 'developer') system.push(text);
      else push(item.role === 'assistant' ? 'assistant' : 'user', { type: 'text', text });
    } else if (type === 'function_call') {
      let input: Record<string, unknown> = {};
      try {
        input = JSON.parse(String(item.arguments ?? '{}')) as Record<string, unknown>;
      } catch {
        input = { arguments: item.arguments };
      }
      push('assistant', { type: 'tool_use', id: String(item.call_id), name: String(item.name), input });
    } else if (type === 'function_call_output') {
      push('user', { type: 'tool_result', toolUseId: String(item.call_id), content: contentText(item.output) });
    }
  }
  const choice = record.tool_choice as string | { name?: string } | undefined;
  const format = (record.text as { format?: { type?: string } } | undefined)?.format?.type;
  return {
    model: String(record.model),
    system: system.join('\n\n'),
    cachedSystemBlocks: [],
    messages,
    tools: Array.isArray(record.tools)
      ? (record.tools as Array<{ name?: string; type?: string }>).map((tool) => String(tool.name ?? tool.type))
      : [],
    ...(choice !== undefined && {
      toolChoice: typeof choice === 'string' ? (choice === 'required' ? 'any' : choice) : `tool:${choice.name}`,
    }),
    maxOutputTokens: Number(record.max_output_tokens ?? 0),
    json: format === 'json_object' || format === 'json_schema',
    stream: record.stream === true,
  };
}

function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((part: { text?: unknown }) => (typeof part?.text === 'string' ? part.text : '')).join('');
}
