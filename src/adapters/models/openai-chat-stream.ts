import { StreamCutShort, type TextDeltaRelay } from './model-streaming-request.js';

interface ToolCallParts {
  id?: string;
  name: string;
  arguments: string;
}

/**
 * Reads the chunks of a streamed chat completion back into the completion the non-streamed call
 * returns, passing each content delta to `relay` as it comes: content and refusal joined, tool
 * calls assembled by their `index` (id and name from the first piece, arguments concatenated),
 * the finish reason, and usage from the last chunk (`stream_options.include_usage`; servers that
 * send none count zero, as without streaming).
 */
export async function collectChatCompletionStream(
  chunks: AsyncIterable<unknown>,
  relay: TextDeltaRelay,
): Promise<Record<string, unknown>> {
  let content = '';
  let refusal = '';
  let sawContent = false;
  let finishReason: unknown;
  let usage: unknown;
  const calls = new Map<number, ToolCallParts>();
  for await (const raw of chunks) {
    const chunk = raw as { choices?: unknown; usage?: unknown };
    if (chunk.usage !== undefined && chunk.usage !== null) usage = chunk.usage;
    const choice = (Array.isArray(chunk.choices) ? chunk.choices[0] : undefined) as
      { delta?: unknown; finish_reason?: unknown } | undefined;
    if (!choice) continue;
    if (choice.finish_reason !== undefined && choice.finish_reason !== null) finishReason = choice.finish_reason;
    const delta = (choice.delta ?? {}) as { content?: unknown; refusal?: unknown; tool_calls?: unknown };
    if (typeof delta.content === 'string') {
      sawContent = true;
      content += delta.content;
      relay.send(delta.content);
    }
    if (typeof delta.refusal === 'string') refusal += delta.refusal;
    for (const piece of Array.isArray(delta.tool_calls) ? (delta.tool_calls as Array<Record<string, unknown>>) : []) {
      const index = typeof piece.index === 'number' ? piece.index : calls.size;
      const call = calls.get(index) ?? { name: '', arguments: '' };
      const fn = (piece.function ?? {}) as { name?: unknown; arguments?: unknown };
      if (typeof piece.id === 'string' && piece.id !== '') call.id = piece.id;
      if (typeof fn.name === 'string') call.name += fn.name;
      if (typeof fn.arguments === 'string') call.arguments += fn.arguments;
      calls.set(index, call);
    }
  }
  if (finishReason === undefined) throw new StreamCutShort('a finish_reason');
  const toolCalls = [...calls.entries()]
    .sort(([left], [right]) => left - right)
    .map(([, call]) => ({
      ...(call.id !== undefined && { id: call.id }),
      type: 'function',
      function: { name: call.name, arguments: call.arguments },
    }));
  return {
    object: 'chat.completion',
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: sawContent ? content : null,
          refusal: refusal === '' ? null : refusal,
          ...(toolCalls.length > 0 && { tool_calls: toolCalls }),
        },
        finish_reason: finishReason,
      },
    ],
    usage: usage ?? null,
  };
}
