import { StreamCutShort, type TextDeltaRelay } from './model-streaming-request.js';

type WireBlock = Record<string, unknown> & { type?: unknown };

/**
 * Reads the events of a streamed Messages API answer (`message_start`, `content_block_start/delta/stop`,
 * `message_delta`, `message_stop`) back into the message the non-streamed call returns, passing
 * each text delta to `relay` as it comes: usage from `message_start`, completed by `message_delta`
 * (output tokens, and context edits applied server-side). Tool inputs arrive as partial JSON and
 * are parsed when their block stops (a SyntaxError when they are not JSON).
 */
export async function collectMessageStream(
  events: AsyncIterable<unknown>,
  relay: TextDeltaRelay,
): Promise<Record<string, unknown>> {
  let message: Record<string, unknown> | undefined;
  const content: WireBlock[] = [];
  const partialJson = new Map<number, string>();
  let usage: Record<string, unknown> = {};
  let complete = false;
  for await (const raw of events) {
    const event = raw as {
      type?: unknown;
      index?: unknown;
      message?: unknown;
      content_block?: unknown;
      delta?: unknown;
      usage?: unknown;
      context_management?: unknown;
    };
    switch (event.type) {
      case 'message_start': {
        message = { ...(event.message as Record<string, unknown>) };
        usage = { ...((message.usage as Record<string, unknown> | undefined) ?? {}) };
        break;
      }
      case 'content_block_start': {
        const index = Number(event.index);
        const block = { ...(event.content_block as WireBlock) };
        content[index] = block;
        if (block.type === 'tool_use') partialJson.set(index, '');
        break;
      }
      case 'content_block_delta': {
        const index = Number(event.index);
        const delta = event.delta as { type?: unknown; text?: unknown; partial_json?: unknown };
        const block = content[index];
        if (!block) break;
        if (delta.type === 'text_delta' && typeof delta.text === 'string') {
          block.text = `${typeof block.text === 'string' ? block.text : ''}${delta.text}`;
          relay.send(delta.text);
        } else if (delta.type === 'input_json_delta' && typeof delta.partial_json === 'string') {
          partialJson.set(index, (partialJson.get(index) ?? '') + delta.partial_json);
        }
        // Thinking, signature and citation deltas have no place in engram's interface.
        break;
      }
      case 'content_block_stop': {
        const index = Number(event.index);
        const json = partialJson.get(index);
        if (json !== undefined && content[index]) {
          content[index]!.input = json.trim() === '' ? {} : JSON.parse(json);
          partialJson.delete(index);
        }
        break;
      }
      case 'message_delta': {
        const delta = (event.delta ?? {}) as Record<string, unknown>;
        if (message) {
          if (delta.stop_reason !== undefined) message.stop_reason = delta.stop_reason;
          if (delta.stop_sequence !== undefined) message.stop_sequence = delta.stop_sequence;
          if (event.context_management !== undefined) message.context_management = event.context_management;
        }
        // The delta's counts are cumulative: present fields replace those of message_start.
        for (const [field, value] of Object.entries((event.usage ?? {}) as Record<string, unknown>)) {
          if (value !== null && value !== undefined) usage[field] = value;
        }
        break;
      }
      case 'message_stop':
        complete = true;
        break;
      default:
        break;
    }
  }
  if (!message || !complete) throw new StreamCutShort('message_stop');
  return { ...message, content: content.filter((block) => block !== undefined), usage };
}
