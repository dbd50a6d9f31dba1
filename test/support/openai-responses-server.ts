import {
  startLoopbackModelServer,
  wireId,
  type LanguageModelServer,
  type ModelServerResponder,
  type ScriptedModelMessage,
  type WireReply,
} from '../../src/testing/loopback-model-server.js';

/**
 * A loopback server speaking OpenAI's Responses API (`POST /v1/responses`) to the real SDK, enough for
 * the client wrappers: text and function_call output items, usage, and SSE streaming (created, output
 * text deltas, completed). Scripted and recording like the other loopback model servers.
 */
export async function startOpenAiResponsesServer(
  options: { respond?: ModelServerResponder; streamChunkCharacters?: number } = {},
): Promise<LanguageModelServer> {
  const size = options.streamChunkCharacters ?? 16;
  let count = 0;
  const errorReply = (status: number, message: string): WireReply => ({
    status,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ error: { message, type: 'invalid_request_error', param: null, code: null } }),
  });
  return startLoopbackModelServer(
    {
      basePath: '/v1',
      maxBodyBytes: 32 * 1024 * 1024,
      tooLarge: () => errorReply(413, 'Request too large.'),
      summarize: () => undefined,
      answer(request, reply) {
        const index = count++;
        if (request.method !== 'POST' || request.path.split('?')[0] !== '/v1/responses')
          return errorReply(404, `Unknown request URL: ${request.method} ${request.path}.`);
        if (reply && 'error' in reply) return errorReply(500, 'The server had an error.');
        if (reply && !('message' in reply)) return errorReply(500, 'Not scripted for the Responses server.');
        const body = request.body as Record<string, unknown>;
        const response = renderResponse(reply?.message ?? { text: 'OK' }, body, index);
        const headers = { 'x-request-id': wireId('req_', index) };
        if (body.stream !== true) return { status: 200, headers, body: JSON.stringify(response) };
        return { status: 200, headers, events: streamEvents(response, size) };
      },
    },
    options.respond,
  );
}

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
  return {
    id: wireId('resp_', index),
    object: 'response',
    created_at: Math.floor(Date.now() / 1000),
    status: 'completed',
    model: body.model,
    instructions: body.instructions ?? null,
    output,
    parallel_tool_calls: true,
    tool_choice: 'auto',
    tools: body.tools ?? [],
    usage: { input_tokens: 10, output_tokens: 5, total_tokens: 15 },
  };
}

function streamEvents(response: ReturnType<typeof renderResponse>, size: number): string[] {
  const event = (type: string, data: Record<string, unknown>): string =>
    `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
  const events = [event('response.created', { response: { ...response, status: 'in_progress', output: [] } })];
  response.output.forEach((item, outputIndex) => {
    events.push(event('response.output_item.added', { output_index: outputIndex, item: { ...item, content: [] } }));
    if (item.type !== 'message') return;
    const text = ((item.content as Array<{ text: string }>)[0]?.text ?? '').toString();
    for (let start = 0; start < text.length; start += size) {
      events.push(
        event('response.output_text.delta', {
          item_id: item.id,
          output_index: outputIndex,
          content_index: 0,
          delta: text.slice(start, start + size),
        }),
      );
    }
    events.push(event('response.output_item.done', { output_index: outputIndex, item }));
  });
  events.push(event('response.completed', { response }));
  return events;
}
