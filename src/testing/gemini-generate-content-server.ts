import { estimateTextTokens } from '../kernel/token-estimate.js';
import type { ContentBlock, LanguageModelMessage, LanguageModelStopReason } from '../contracts/language-model.js';
import {
  breakStream,
  passThroughReply,
  retryAfterHeader,
  startLoopbackModelServer,
  textPieces,
  type LanguageModelServer,
  type ModelRequestSummary,
  type ModelServerResponder,
  type RecordedModelRequest,
  type ScriptedModelError,
  type ScriptedModelMessage,
  type WireReply,
} from './loopback-model-server.js';

export interface GeminiGenerateContentServerOptions {
  /** When set, every request must carry it (`x-goog-api-key` header or `?key=`); others get 400 API_KEY_INVALID. */
  apiKey?: string;
  /** Answers what the script does not cover; default: a text answer "OK". */
  respond?: ModelServerResponder;
  /** Largest request body; larger ones get 413 (default 32 MB). */
  maxBodyBytes?: number;
  /** Characters per streamed chunk (default 16). */
  streamChunkCharacters?: number;
}

const ERRORS: Record<ScriptedModelError['kind'], { status: number; code: string; message: string }> = {
  rate_limit: {
    status: 429,
    code: 'RESOURCE_EXHAUSTED',
    message: 'Resource has been exhausted (e.g. check quota).',
  },
  overloaded: { status: 503, code: 'UNAVAILABLE', message: 'The model is overloaded. Please try again later.' },
  server: { status: 500, code: 'INTERNAL', message: 'An internal error has occurred.' },
  unavailable: { status: 503, code: 'UNAVAILABLE', message: 'The service is currently unavailable.' },
  auth: {
    status: 400,
    code: 'INVALID_ARGUMENT',
    message: 'API key not valid. Please pass a valid API key.',
  },
  permission: {
    status: 403,
    code: 'PERMISSION_DENIED',
    message: 'Permission denied on resource project.',
  },
  not_found: { status: 404, code: 'NOT_FOUND', message: 'models/unknown is not found for API version v1beta.' },
  invalid_request: { status: 400, code: 'INVALID_ARGUMENT', message: 'Request contains an invalid argument.' },
  too_large: { status: 413, code: 'INVALID_ARGUMENT', message: 'Request payload size exceeds the limit.' },
};

const FINISH_REASONS: Record<LanguageModelStopReason, string> = {
  end: 'STOP',
  tool_use: 'STOP',
  max_tokens: 'MAX_TOKENS',
  other: 'SAFETY',
};

/** `/v1beta/models/<model>:<method>`, as the Google GenAI SDK sends it (any path prefix before it is accepted). */
const ROUTE = /\/(v1beta|v1|v1alpha)\/models\/([^/:?]+):(generateContent|streamGenerateContent|countTokens)$/;

/**
 * Starts a loopback server speaking the Gemini API (`POST /v1beta/models/<model>:generateContent`,
 * `:streamGenerateContent?alt=sse` and `:countTokens`), as the Google GenAI SDK and Gemini CLI
 * use it: `contents` of `parts` (text, functionCall, functionResponse), `systemInstruction`,
 * `usageMetadata`, the error shape `{error:{code, message, status}}`, and SSE streaming where each
 * `data:` line is a whole GenerateContentResponse. Scripted per test and recording every request.
 * @example
 * const server = await startGeminiGenerateContentServer();
 * // Gemini CLI: GOOGLE_GEMINI_BASE_URL=server.url GEMINI_API_KEY=test gemini -p hello
 */
export async function startGeminiGenerateContentServer(
  options: GeminiGenerateContentServerOptions = {},
): Promise<LanguageModelServer> {
  const size = options.streamChunkCharacters ?? 16;
  let count = 0;
  return startLoopbackModelServer(
    {
      basePath: '',
      maxBodyBytes: options.maxBodyBytes ?? 32 * 1024 * 1024,
      tooLarge: () => geminiErrorReply({ kind: 'too_large' }),
      summarize: summarizeGenerateContentRequest,
      answer(request, reply) {
        const index = count++;
        const [route, query = ''] = request.path.split('?') as [string, string?];
        const match = ROUTE.exec(route);
        if (request.method !== 'POST' || !match)
          return geminiErrorReply({
            kind: 'not_found',
            message: `The requested URL ${route} was not found on this server.`,
          });
        if (options.apiKey !== undefined && !carriesKey(request, query, options.apiKey))
          return geminiErrorReply({ kind: 'auth' });
        if (reply && !('message' in reply)) return passThroughReply(reply, geminiErrorReply);
        const problem = checkRequest(request);
        if (problem) return geminiErrorReply({ kind: 'invalid_request', message: problem });
        const model = decodeURIComponent(match[2]!);
        const body = request.body as Record<string, unknown>;
        if (match[3] === 'countTokens') {
          const contents = body.contents ?? (body.generateContentRequest as { contents?: unknown })?.contents;
          return json({ totalTokens: Math.max(1, estimateTextTokens(JSON.stringify(contents ?? []))) });
        }
        const message = reply?.message ?? { text: 'OK' };
        const delay = reply?.delayMs ? { delayMs: reply.delayMs } : {};
        const headers = { 'x-gemini-request': String(index + 1), ...reply?.headers };
        const rendered = renderResponse(message, body, model, index);
        if (match[3] === 'streamGenerateContent') {
          // Without alt=sse the API streams one JSON array; Gemini CLI and the SDK always ask for SSE.
          if (!/(^|&)alt=sse(&|$)/.test(query))
            return { status: 200, headers, body: JSON.stringify([rendered]), ...delay };
          const stream = breakStream(streamChunks(rendered, size), reply?.streamBreak, isTextChunk, streamErrorEvent);
          return {
            status: 200,
            headers,
            ...stream,
            ...delay,
            ...(reply?.chunkDelayMs && { chunkDelayMs: reply.chunkDelayMs }),
          };
        }
        return { status: 200, headers, body: JSON.stringify(rendered), ...delay };
      },
    },
    options.respond,
  );
}

function json(value: unknown): WireReply {
  return { status: 200, headers: {}, body: JSON.stringify(value) };
}

/** A Gemini API error answer: its status and `{error:{code, message, status}}`. */
export function geminiErrorReply(error: ScriptedModelError): {
  status: number;
  headers: Record<string, string>;
  body: string;
} {
  const known = ERRORS[error.kind];
  return {
    status: known.status,
    headers: retryAfterHeader(error),
    body: JSON.stringify({
      error: { code: known.status, message: error.message ?? known.message, status: known.code },
    }),
  };
}

function streamErrorEvent(error: ScriptedModelError): string {
  return `data: ${geminiErrorReply(error).body}\r\n\r\n`;
}

function isTextChunk(event: string): boolean {
  return /"parts":\[\{"text":/.test(event);
}

function carriesKey(request: RecordedModelRequest, query: string, key: string): boolean {
  if (request.headers['x-goog-api-key'] === key) return true;
  return new URLSearchParams(query).get('key') === key;
}

/** What the API refuses that a client could get wrong; undefined when the request is fine. */
function checkRequest(request: RecordedModelRequest): string | undefined {
  const body = request.body as Record<string, unknown> | null;
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    return 'Invalid JSON payload received. Expected an object.';
  if (request.path.includes(':countTokens')) return undefined;
  if (!Array.isArray(body.contents) || body.contents.length === 0)
    return '* GenerateContentRequest.contents: contents is not specified';
  for (const [index, content] of (body.contents as Array<Record<string, unknown>>).entries()) {
    if (content === null || typeof content !== 'object' || !Array.isArray(content.parts) || content.parts.length === 0)
      return `* GenerateContentRequest.contents[${index}].parts: contents.parts must not be empty.`;
    if (
      content.role !== undefined &&
      content.role !== 'user' &&
      content.role !== 'model' &&
      content.role !== 'function'
    )
      return `Please use a valid role: user, model. (contents[${index}].role ${JSON.stringify(content.role)})`;
  }
  return undefined;
}

function renderResponse(
  message: ScriptedModelMessage,
  body: Record<string, unknown>,
  model: string,
  index: number,
): Record<string, unknown> {
  const content = message.content ?? [{ type: 'text' as const, text: message.text ?? '' }];
  const parts: Array<Record<string, unknown>> = [];
  for (const block of content) {
    if (block.type === 'text' && block.text !== '') parts.push({ text: block.text });
    else if (block.type === 'tool_use')
      parts.push({ functionCall: { id: block.id, name: block.name, args: block.input } });
  }
  if (parts.length === 0) parts.push({ text: '' });
  const stopReason = message.stopReason ?? 'end';
  const prompt = message.usage?.inputTokens ?? Math.max(1, estimateTextTokens(JSON.stringify(body.contents ?? [])));
  const output = message.usage?.outputTokens ?? Math.max(1, estimateTextTokens(JSON.stringify(parts)));
  const cached = message.usage?.cacheReadTokens ?? 0;
  return {
    candidates: [{ content: { role: 'model', parts }, finishReason: FINISH_REASONS[stopReason], index: 0 }],
    usageMetadata: {
      promptTokenCount: prompt + cached,
      candidatesTokenCount: output,
      totalTokenCount: prompt + cached + output,
      ...(cached > 0 && { cachedContentTokenCount: cached }),
    },
    modelVersion: model,
    responseId: `loopback-${index + 1}`,
  };
}

/** The SSE chunks of a streamed answer: text in pieces, each function call whole, the finish reason and usage last. */
function streamChunks(response: Record<string, unknown>, size: number): string[] {
  const [candidate] = response.candidates as Array<{
    content: { role: string; parts: Array<Record<string, unknown>> };
    finishReason: string;
  }>;
  const base = { modelVersion: response.modelVersion, responseId: response.responseId };
  const chunk = (parts: Array<Record<string, unknown>>, last: boolean): string =>
    `data: ${JSON.stringify({
      candidates: [
        { content: { role: 'model', parts }, ...(last && { finishReason: candidate!.finishReason }), index: 0 },
      ],
      ...(last && { usageMetadata: response.usageMetadata }),
      ...base,
    })}\r\n\r\n`;
  const all: Array<Array<Record<string, unknown>>> = [];
  for (const part of candidate!.content.parts) {
    if (typeof part.text === 'string') for (const piece of textPieces(part.text, size)) all.push([{ text: piece }]);
    else all.push([part]);
  }
  if (all.length === 0) all.push([{ text: '' }]);
  return all.map((parts, index) => chunk(parts, index === all.length - 1));
}

/** Reads a generateContent request back into engram's terms (functionResponse parts become tool_result blocks). */
export function summarizeGenerateContentRequest(body: unknown, path = ''): ModelRequestSummary | undefined {
  const record = body as Record<string, unknown> | null;
  if (record === null || typeof record !== 'object' || !Array.isArray(record.contents)) return undefined;
  const messages: LanguageModelMessage[] = [];
  for (const content of record.contents as Array<{ role?: string; parts?: Array<Record<string, unknown>> }>) {
    const blocks: ContentBlock[] = [];
    for (const [index, part] of (content.parts ?? []).entries()) {
      if (typeof part.text === 'string' && part.thought !== true) blocks.push({ type: 'text', text: part.text });
      const call = part.functionCall as { id?: string; name?: string; args?: Record<string, unknown> } | undefined;
      if (call)
        blocks.push({
          type: 'tool_use',
          id: call.id ?? `call_${index}`,
          name: String(call.name),
          input: call.args ?? {},
        });
      const result = part.functionResponse as { id?: string; name?: string; response?: unknown } | undefined;
      if (result)
        blocks.push({
          type: 'tool_result',
          toolUseId: result.id ?? String(result.name),
          content: JSON.stringify(result.response ?? {}),
        });
    }
    messages.push({ role: content.role === 'model' ? 'assistant' : 'user', content: blocks });
  }
  const system = record.systemInstruction as { parts?: Array<{ text?: string }> } | string | undefined;
  const tools = Array.isArray(record.tools)
    ? (record.tools as Array<{ functionDeclarations?: Array<{ name?: string }> }>).flatMap((tool) =>
        (tool.functionDeclarations ?? []).map((declaration) => String(declaration.name)),
      )
    : [];
  const config = (record.generationConfig ?? {}) as { maxOutputTokens?: number; responseMimeType?: string };
  const mode = (record.toolConfig as { functionCallingConfig?: { mode?: string } } | undefined)?.functionCallingConfig
    ?.mode;
  const route = ROUTE.exec(path.split('?')[0] ?? '');
  return {
    model: route ? decodeURIComponent(route[2]!) : '',
    system: typeof system === 'string' ? system : (system?.parts ?? []).map((part) => part.text ?? '').join('\n\n'),
    cachedSystemBlocks: [],
    messages,
    tools,
    ...(mode !== undefined && { toolChoice: mode.toLowerCase() }),
    maxOutputTokens: Number(config.maxOutputTokens ?? 0),
    json: config.responseMimeType === 'application/json',
    stream: route?.[3] === 'streamGenerateContent',
  };
}
