// Anthropic's Messages API, read and written as plain JSON: the SDK's own types stay the user's, this
// module never imports the SDK, so any 1.x client that speaks the wire format works.
import type { ConversationMessage, ConversationToolCall } from '../../contracts/conversation.js';
import type { MemoryInjection } from '../../agent/memory-injection.js';
import { joinPrompt, parseToolInput, resultText, shortHash, withMessageId } from './wrapped-call.js';

type Json = Record<string, unknown>;

/** The last user message's text: what recall searches (a tool-result turn recalls for the user's question before it). */
export function anthropicQuery(params: Json): string {
  const messages = Array.isArray(params.messages) ? (params.messages as unknown[]) : [];
  for (let index = messages.length - 1; index >= 0; index -= 1) {
    const message = messages[index] as Json | null;
    if (!message || message.role !== 'user') continue;
    const text = blockText(message.content);
    if (text !== '') return text;
  }
  return '';
}

/**
 * The request with memory: the static part as the system prompt's first text, the block as its last
 * (after the user's cache breakpoints, so their cached prefix is unchanged from turn to turn). A string
 * system prompt stays a string, blocks stay blocks; messages, tools and cache_control are untouched.
 */
export function anthropicWithMemory(params: Json, injection: MemoryInjection): Json {
  const { staticPart, block } = injection;
  if (staticPart === '' && block === '') return params;
  const system = params.system;
  if (Array.isArray(system)) {
    return {
      ...params,
      system: [
        ...(staticPart === '' ? [] : [{ type: 'text', text: staticPart }]),
        ...(system as unknown[]),
        ...(block === '' ? [] : [{ type: 'text', text: block }]),
      ],
    };
  }
  const own = typeof system === 'string' ? system : undefined;
  return { ...params, system: joinPrompt([staticPart, own, block]) };
}

/** Names a conversation by what starts it: the user's own system prompt and first message. */
export function anthropicSessionSeed(params: Json): string {
  const messages = Array.isArray(params.messages) ? (params.messages as Json[]) : [];
  const system = Array.isArray(params.system) ? blockText(params.system) : String(params.system ?? '');
  return `sdk-anthropic-${shortHash(JSON.stringify([system, blockText(messages[0]?.content)]))}`;
}

/**
 * The request's messages as extraction reads them (ids stable across turns). `offset`: how many
 * messages came before them (a thread's server-held turns).
 */
export function anthropicConversation(params: Json, offset = 0): ConversationMessage[] {
  const messages = Array.isArray(params.messages) ? (params.messages as unknown[]) : [];
  return messages.flatMap((raw, index) => {
    const message = raw as Json | null;
    if (!message || (message.role !== 'user' && message.role !== 'assistant')) return [];
    return [withMessageId(offset + index, fromContent(message.role, message.content))];
  });
}

/** A Message the API answered with (`messages.create`), as the conversation's next message. */
export function anthropicAnswer(message: unknown, index: number): ConversationMessage | undefined {
  const answer = message as Json | null;
  if (!answer || typeof answer !== 'object' || !Array.isArray(answer.content)) return undefined;
  return withMessageId(index, fromContent('assistant', answer.content));
}

/** Builds the answer from the stream's events, as the SDK's MessageStream does. */
export class AnthropicStreamAnswer {
  readonly #blocks: Array<{ type: string; text: string; id: string; name: string; json: string }> = [];
  #complete = false;
  #id: string | undefined;

  read(event: unknown): void {
    const value = event as Json | null;
    if (!value || typeof value.type !== 'string') return;
    if (value.type === 'message_start') {
      const id = (value.message as Json | null)?.id;
      if (typeof id === 'string') this.#id = id;
    } else if (value.type === 'content_block_start') {
      const block = value.content_block as Json;
      this.#blocks[Number(value.index)] = {
        type: String(block?.type),
        text: typeof block?.text === 'string' ? block.text : '',
        id: String(block?.id ?? ''),
        name: String(block?.name ?? ''),
        json: '',
      };
    } else if (value.type === 'content_block_delta') {
      const block = this.#blocks[Number(value.index)];
      const delta = value.delta as Json;
      if (!block || !delta) return;
      if (delta.type === 'text_delta' && typeof delta.text === 'string') block.text += delta.text;
      if (delta.type === 'input_json_delta' && typeof delta.partial_json === 'string') block.json += delta.partial_json;
    } else if (value.type === 'message_stop') {
      this.#complete = true;
    }
  }

  /** The message's id (message_start), which a thread's next turn continues from. */
  id(): string | undefined {
    return this.#id;
  }

  /** The answer, once the stream sent message_stop (a broken stream is not extracted). */
  message(index: number): ConversationMessage | undefined {
    if (!this.#complete) return undefined;
    const content = this.#blocks
      .filter((block) => block !== undefined)
      .map((block) =>
        block.type === 'tool_use'
          ? { type: 'tool_use', id: block.id, name: block.name, input: parseToolInput(block.json) }
          : { type: block.type, text: block.text },
      );
    return withMessageId(index, fromContent('assistant', content));
  }
}

function fromContent(role: 'user' | 'assistant', content: unknown): Omit<ConversationMessage, 'id'> {
  if (typeof content === 'string') return { role, text: content };
  const blocks = Array.isArray(content) ? (content as Json[]) : [];
  const text = blockText(blocks);
  const toolCalls: ConversationToolCall[] = blocks
    .filter((block) => block?.type === 'tool_use')
    .map((block) => ({
      id: String(block.id ?? ''),
      name: String(block.name ?? ''),
      input: block.input !== null && typeof block.input === 'object' ? (block.input as Record<string, unknown>) : {},
    }));
  const toolResults = blocks
    .filter((block) => block?.type === 'tool_result')
    .map((block) => ({
      toolUseId: String(block.tool_use_id ?? ''),
      content: resultText(block.content).slice(0, 10_000),
      ...(block.is_error === true && { isError: true }),
    }));
  // A user turn of tool results only is the tool's answer, not the user's words.
  const asRole = role === 'user' && text === '' && toolResults.length > 0 ? 'tool' : role;
  return {
    role: asRole,
    text,
    ...(toolCalls.length > 0 && { toolCalls }),
    ...(toolResults.length > 0 && { toolResults }),
  };
}

function blockText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return (content as Json[])
    .flatMap((block) => (block?.type === 'text' && typeof block.text === 'string' ? [block.text] : []))
    .join('\n');
}
