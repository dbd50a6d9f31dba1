import { estimateTextTokens } from '../kernel/token-estimate.js';
import type {
  AppliedContextEdit,
  ContentBlock,
  LanguageModel,
  LanguageModelRequest,
  LanguageModelResponse,
  LanguageModelStopReason,
  LanguageModelUsage,
} from '../contracts/language-model.js';
import { messageText, systemText } from '../contracts/language-model-content.js';

/**
 * One scripted answer: the text to return, a response (text and/or content blocks such as tool
 * uses, with usage), an error to reject with, a `hang` that waits until the request is aborted
 * (to exercise timeouts), or a function of the request that decides.
 */
export type ScriptedAnswer =
  | string
  | {
      text?: string;
      content?: ContentBlock[];
      stopReason?: LanguageModelStopReason;
      usage?: Partial<LanguageModelUsage>;
      delayMs?: number;
      /** Context edits to report as applied (only when the request asked for context editing, as a provider would). */
      contextEdits?: AppliedContextEdit[];
    }
  | { error: unknown }
  | { hang: true }
  | ((request: LanguageModelRequest, call: number) => ScriptedAnswer | Promise<ScriptedAnswer>);

export interface ScriptedLanguageModelOptions {
  /** Answers in order, one per call. */
  script: readonly ScriptedAnswer[];
  /** What happens once the script is used up: reject (default) or keep giving the last answer. */
  whenExhausted?: 'reject' | 'repeat-last';
  modelId?: string;
  /** Characters per `onTextDelta` call when a request streams (default: each text block whole). */
  streamChunkCharacters?: number;
}

/**
 * A real `LanguageModel` for tests: answers from a script and records every request it was sent.
 * It checks requests as a provider would (messages present, roles known, a positive output cap)
 * and honours abort signals, so code under test meets the same contract as with a real model.
 * @example
 * const model = new ScriptedLanguageModel({ script: ['{"selected":["m1a2b3c"]}'] });
 * const answer = await model.generate({ messages: [{ role: 'user', content: 'hi' }], maxOutputTokens: 50 });
 */
export class ScriptedLanguageModel implements LanguageModel {
  readonly provider = 'scripted';
  readonly modelId: string;
  /** Every request received, in order (copies; the signal is kept by reference). */
  readonly requests: LanguageModelRequest[] = [];
  readonly #script: readonly ScriptedAnswer[];
  readonly #whenExhausted: 'reject' | 'repeat-last';
  readonly #streamChunkCharacters: number | undefined;

  constructor(options: ScriptedLanguageModelOptions) {
    this.#script = [...options.script];
    this.#whenExhausted = options.whenExhausted ?? 'reject';
    this.#streamChunkCharacters = options.streamChunkCharacters;
    this.modelId = options.modelId ?? 'scripted-model';
  }

  /** How many requests were sent. */
  get calls(): number {
    return this.requests.length;
  }

  /** The last request sent, or undefined. */
  get lastRequest(): LanguageModelRequest | undefined {
    return this.requests.at(-1);
  }

  async generate(request: LanguageModelRequest): Promise<LanguageModelResponse> {
    checkRequest(request);
    const call = this.requests.length;
    this.requests.push({
      ...request,
      messages: request.messages.map((message) => ({
        ...message,
        content: typeof message.content === 'string' ? message.content : message.content.map((block) => ({ ...block })),
      })),
    });
    request.signal?.throwIfAborted();
    const index =
      call < this.#script.length ? call : this.#whenExhausted === 'repeat-last' ? this.#script.length - 1 : -1;
    if (index < 0)
      throw new Error(
        `ScriptedLanguageModel: the script has ${this.#script.length} answers and this is call ${call + 1}.`,
      );
    let answer = this.#script[index]!;
    while (typeof answer === 'function') answer = await answer(request, call);
    if (typeof answer === 'string') return this.#stream(request, respond(request, answer));
    if ('error' in answer) throw answer.error;
    if ('hang' in answer) return waitForAbort(request.signal);
    if (answer.delayMs !== undefined) await delay(answer.delayMs, request.signal);
    const response = respond(request, answer.text, answer);
    if (request.contextEditing) response.contextEdits = answer.contextEdits ?? [];
    return this.#stream(request, response);
  }

  /** Streams the answer's text blocks to `onTextDelta` (in pieces when asked), as a provider would, then returns it. */
  #stream(request: LanguageModelRequest, response: LanguageModelResponse): LanguageModelResponse {
    if (!request.onTextDelta) return response;
    for (const block of response.content ?? [{ type: 'text', text: response.text }]) {
      if (block.type !== 'text' || block.text === '') continue;
      const characters = [...block.text];
      const size = this.#streamChunkCharacters ?? characters.length;
      for (let start = 0; start < characters.length; start += size) {
        request.signal?.throwIfAborted();
        request.onTextDelta(characters.slice(start, start + size).join(''));
      }
    }
    return response;
  }
}

function respond(
  request: LanguageModelRequest,
  answerText: string | undefined,
  answer: { content?: ContentBlock[]; stopReason?: LanguageModelStopReason; usage?: Partial<LanguageModelUsage> } = {},
): LanguageModelResponse {
  const content = answer.content ?? [{ type: 'text', text: answerText ?? '' }];
  const text = answerText ?? content.flatMap((block) => (block.type === 'text' ? [block.text] : [])).join('');
  const input = [systemText(request.system), ...request.messages.map(messageText)].join('\n');
  const hasToolUse = content.some((block) => block.type === 'tool_use');
  return {
    text,
    content,
    stopReason: answer.stopReason ?? (hasToolUse ? 'tool_use' : 'end'),
    usage: {
      inputTokens: estimateTextTokens(input),
      outputTokens: estimateTextTokens(answer.content === undefined ? text : JSON.stringify(content)),
      ...answer.usage,
    },
  };
}

function checkRequest(request: LanguageModelRequest): void {
  if (request === null || typeof request !== 'object') throw new TypeError('generate() takes a request object.');
  if (!Array.isArray(request.messages) || request.messages.length === 0)
    throw new TypeError('A request needs at least one message.');
  for (const message of request.messages) {
    if (message?.role !== 'user' && message?.role !== 'assistant')
      throw new TypeError(`Unknown message role ${JSON.stringify(message?.role)}.`);
    if (typeof message.content !== 'string' && !Array.isArray(message.content))
      throw new TypeError('Message content is a string or an array of blocks.');
  }
  if (!Number.isInteger(request.maxOutputTokens) || request.maxOutputTokens < 1) {
    throw new TypeError(
      `maxOutputTokens must be a whole number from 1, got ${JSON.stringify(request.maxOutputTokens)}.`,
    );
  }
  if (request.responseFormat !== undefined && request.responseFormat !== 'text' && request.responseFormat !== 'json') {
    throw new TypeError(`Unknown responseFormat ${JSON.stringify(request.responseFormat)}.`);
  }
}

function waitForAbort(signal: AbortSignal | undefined): Promise<never> {
  return new Promise((_, reject) => {
    signal?.addEventListener('abort', () => reject(signal.reason), { once: true });
  });
}

function delay(milliseconds: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, milliseconds);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(signal.reason);
      },
      { once: true },
    );
  });
}
