// The OpenAI chat completions loopback server's request checks: what the real API refuses (no
// model, bad token limits, unknown roles, tool messages without a preceding call, json_object
// without the word "json") that a client could get wrong, with the API's own error messages.
import type { RecordedModelRequest } from './loopback-model-server.js';

/** What OpenAI refuses that a client could get wrong; undefined when the request is fine. */
export function checkChatCompletionsRequest(request: RecordedModelRequest): string | undefined {
  const body = request.body as Record<string, unknown> | null;
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    return 'We could not parse the JSON body of your request.';
  if (typeof body.model !== 'string' || body.model === '') return 'you must provide a model parameter';
  if (!Array.isArray(body.messages) || body.messages.length === 0)
    return "'messages' must contain at least one message.";
  for (const field of ['max_tokens', 'max_completion_tokens']) {
    const value = body[field];
    if (value !== undefined && value !== null && (typeof value !== 'number' || !Number.isInteger(value) || value < 1))
      return `Invalid '${field}': must be a positive integer.`;
  }
  let openCalls = new Set<string>();
  for (const [index, message] of (body.messages as Array<Record<string, unknown>>).entries()) {
    const role = message?.role;
    if (!['system', 'developer', 'user', 'assistant', 'tool'].includes(String(role)))
      return `Invalid value for 'messages[${index}].role': ${JSON.stringify(role)}.`;
    if (role === 'tool') {
      if (!openCalls.has(String(message.tool_call_id))) {
        return "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.";
      }
      continue;
    }
    if (role === 'assistant' && Array.isArray(message.tool_calls)) {
      openCalls = new Set((message.tool_calls as Array<{ id?: unknown }>).map((call) => String(call.id)));
    } else {
      openCalls = new Set();
    }
  }
  const format = (body.response_format as { type?: unknown } | undefined)?.type;
  if (
    format === 'json_object' &&
    !(body.messages as Array<{ content?: unknown }>).some((message) =>
      /json/i.test(JSON.stringify(message.content ?? '')),
    )
  ) {
    return "'messages' must contain the word 'json' in some form, to use 'response_format' of type 'json_object'.";
  }
  return undefined;
}
