// OpenAI's Chat Completions and Responses APIs, read and written as plain JSON (the SDK is never
// imported here: its types stay the user's).
import type { ConversationMessage, ConversationToolCall } from '../../contracts/conversation.js';
import type { MemoryInjection } from '../../agent/memory-injection.js';
import { joinPrompt, parseToolInput, resultText, shortHash, withMessageId } from './wrapped-call.js';

type Json = Record<string, unknown>;

const SYSTEM_ROLES = new Set(['system', 'developer']);

/** Chat Completions: the last user message's text. */
export function chatQuery(params: Json): string {
  const messages = Array.isArray(params.messages) ? (params.messages as Json[]) : [];
  for (let index = messages.length - 1; index >= 0; index -= 1) {
    const message = messages[index];
    if (message?.role !== 'user') continue;
    const text = partText(message.content);
    if (text !== '') return text;
  }
  return '';
}

/**
 * Chat Completions with memory: the static part at the start of the first system (or developer)
 * message, the block at its end; a system message is added first when the request has none.
 */
export function chatWithMemory(params: Json, injection: MemoryInjection): Json {
  const { staticPart, block } = injection;
  if (staticPart === '' && block === '') return params;
  const messages = Array.isArray(params.messages) ? [...(params.messages as Json[])] : [];
  const first = messages[0];
  if (first && SYSTEM_ROLES.has(String(first.role))) {
    const content = first.content;
    messages[0] = Array.isArray(content)
      ? {
          ...first,
          content: [
            ...(staticPart === '' ? [] : [{ type: 'text', text: staticPart }]),
            ...(content as unknown[]),
            ...(block === '' ? [] : [{ type: 'text', text: block }]),
          ],
        }
      : { ...first, content: joinPrompt([staticPart, typeof content === 'string' ? content : '', block]) };
  } else {
    messages.unshift({ role: 'system', content: joinPrompt([staticPart, block]) });
  }
  return { ...params, messages };
}

export function chatSessionSeed(params: Json): string {
  const messages = Array.isArray(params.messages) ? (params.messages as Json[]) : [];
  const system = messages.filter((message) => SYSTEM_ROLES.has(String(message?.role))).map((m) => partText(m.content));
  const user = messages.find((message) => message?.role === 'user');
  return `sdk-openai-${shortHash(JSON.stringify([system, partText(user?.content)]))}`;
}

/** Chat Completions messages as extraction reads them (system messages left out; ids by place). */
export function chatConversation(params: Json): ConversationMessage[] {
  const messages = Array.isArray(params.messages) ? (params.messages as unknown[]) : [];
  return messages.flatMap((raw, index) => {
    const message = raw as Json | null;
    if (!message) return [];
    if (message.role === 'user') return [withMessageId(index, { role: 'user', text: partText(message.content) })];
    if (message.role === 'assistant') return [withMessageId(index, chatAssistant(message))];
    if (message.role === 'tool') {
      return [
        withMessageId(index, {
          role: 'tool',
          text: '',
          toolResults: [
            { toolUseId: String(message.tool_call_id ?? ''), content: resultText(message.content).slice(0, 10_000) },
          ],
        }),
      ];
    }
    return [];
  });
}

/** The first choice of a ChatCompletion as the conversation's next message. */
export function chatAnswer(completion: unknown, index: number): ConversationMessage | undefined {
  const choices = (completion as Json | null)?.choices;
  const message = Array.isArray(choices) ? ((choices[0] as Json | undefined)?.message as Json | undefined) : undefined;
  return message ? withMessageId(index, chatAssistant(message)) : undefined;
}

/** Builds the first choice's answer from the chunks of a streamed completion. */
export class ChatStreamAnswer {
  #text = '';
  readonly #calls: Array<{ id: string; name: string; arguments: string }> = [];
  #finished = false;

  read(chunk: unknown): void {
    const choices = (chunk as Json | null)?.choices;
    if (!Array.isArray(choices)) return;
    const choice = (choices as Json[]).find((entry) => (entry?.index ?? 0) === 0);
    if (!choice) return;
    const delta = choice.delta as Json | undefined;
    if (typeof delta?.content === 'string') this.#text += delta.content;
    if (Array.isArray(delta?.tool_calls)) {
      for (const part of delta.tool_calls as Json[]) {
        const at = Number(part.index ?? 0);
        const call = (this.#calls[at] ??= { id: '', name: '', arguments: '' });
        const fn = part.function as Json | undefined;
        if (typeof part.id === 'string') call.id = part.id;
        if (typeof fn?.name === 'string') call.name += fn.name;
        if (typeof fn?.arguments === 'string') call.arguments += fn.arguments;
      }
    }
    if (typeof choice.finish_reason === 'string') this.#finished = true;
  }

  message(index: number): ConversationMessage | undefined {
    if (!this.#finished) return undefined;
    const toolCalls = this.#calls
      .filter((call) => call !== undefined)
      .map((call) => ({ id: call.id, name: call.name, input: parseToolInput(call.arguments) }));
    return withMessageId(index, { role: 'assistant', text: this.#text, ...(toolCalls.length > 0 && { toolCalls }) });
  }
}

/** Responses: the last user input's text (`input` as a string, or its last user message). */
export function responsesQuery(params: Json): string {
  const input = params.input;
  if (typeof input === 'string') return input;
  const items = Array.isArray(input) ? (input as Json[]) : [];
  for (let index = items.length - 1; index >= 0; index -= 1) {
    const item = items[index];
    if (item?.role !== 'user') continue;
    const text = partText(item.content);
    if (text !== '') return text;
  }
  return '';
}

/** Responses with memory: the static part before the user's `instructions`, the block after them. */
export function responsesWithMemory(params: Json, injection: MemoryInjection): Json {
  const { staticPart, block } = injection;
  if (staticPart === '' && block === '') return params;
  const own = typeof params.instructions === 'string' ? params.instructions : undefined;
  return { ...params, instructions: joinPrompt([staticPart, own, block]) };
}

export function responsesSessionSeed(params: Json): string {
  const input = params.input;
  const first =
    typeof input === 'string'
      ? input
      : partText((Array.isArray(input) ? (input as Json[]) : []).find((item) => item?.role === 'user')?.content);
  return `sdk-openai-responses-${shortHash(JSON.stringify([params.instructions ?? '', first]))}`;
}

/** Responses input items as extraction reads them. */
export function responsesConversation(params: Json): ConversationMessage[] {
  const input = params.input;
  if (typeof input === 'string') return [withMessageId(0, { role: 'user', text: input })];
  const items = Array.isArray(input) ? (input as unknown[]) : [];
  return items.flatMap((raw, index) => {
    const message = responsesItem(raw as Json | null);
    return message ? [withMessageId(index, message)] : [];
  });
}

/** A Response's output as one assistant message (its text and function calls). */
export function responsesAnswer(response: unknown, index: number): ConversationMessage | undefined {
  const output = (response as Json | null)?.output;
  if (!Array.isArray(output)) return undefined;
  const texts: string[] = [];
  const toolCalls: ConversationToolCall[] = [];
  for (const item of output as Json[]) {
    if (item?.type === 'message') texts.push(partText(item.content));
    if (item?.type === 'function_call')
      toolCalls.push({
        id: String(item.call_id ?? item.id ?? ''),
        name: String(item.name ?? ''),
        input: parseToolInput(String(item.arguments ?? '')),
      });
  }
  return withMessageId(index, {
    role: 'assistant',
    text: texts.filter((text) => text !== '').join('\n'),
    ...(toolCalls.length > 0 && { toolCalls }),
  });
}

/** A streamed Response: its final event carries the whole response. */
export class ResponsesStreamAnswer {
  #response: unknown;

  read(event: unknown): void {
    const value = event as Json | null;
    if (value?.type === 'response.completed') this.#response = value.response;
  }

  message(index: number): ConversationMessage | undefined {
    return this.#response === undefined ? undefined : responsesAnswer(this.#response, index);
  }
}

function responsesItem(item: Json | null): Omit<ConversationMessage, 'id'> | undefined {
  if (!item) return undefined;
  if (item.type === 'function_call') {
    return {
      role: 'assistant',
      text: '',
      toolCalls: [
        {
          id: String(item.call_id ?? ''),
          name: String(item.name ?? ''),
          input: parseToolInput(String(item.arguments ?? '')),
        },
      ],
    };
  }
  if (item.type === 'function_call_output')
    return {
      role: 'tool',
      text: '',
      toolResults: [{ toolUseId: String(item.call_id ?? ''), content: resultText(item.output).slice(0, 10_000) }],
    };
  if (item.role === 'user') return { role: 'user', text: partText(item.content) };
  if (item.role === 'assistant') return { role: 'assistant', text: partText(item.content) };
  return undefined;
}

function chatAssistant(message: Json): Omit<ConversationMessage, 'id'> {
  const calls = Array.isArray(message.tool_calls) ? (message.tool_calls as Json[]) : [];
  const toolCalls = calls.map((call) => {
    const fn = call.function as Json | undefined;
    return {
      id: String(call.id ?? ''),
      name: String(fn?.name ?? ''),
      input: parseToolInput(String(fn?.arguments ?? '')),
    };
  });
  return { role: 'assistant', text: partText(message.content), ...(toolCalls.length > 0 && { toolCalls }) };
}

/** Text of a content that is a string or parts (`text`, `input_text`, `output_text`). */
function partText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return (content as Json[])
    .flatMap((part) =>
      part && typeof part.text === 'string' && ['text', 'input_text', 'output_text'].includes(String(part.type))
        ? [part.text]
        : [],
    )
    .join('\n');
}
