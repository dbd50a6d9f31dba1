import { EngramError } from '../kernel/errors.js';
import type {
  ContentBlock,
  LanguageModel,
  LanguageModelMessage,
  LanguageModelRequest,
  LanguageModelResponse,
  LanguageModelUsage,
  SystemBlock,
  ToolDefinition,
  ToolResultBlock,
} from '../contracts/language-model.js';
import { toolUses, withLastMessageCached } from '../contracts/language-model-content.js';
import type { SessionMessage, SessionTranscriptSink } from '../contracts/session-message.js';
import { deepFreeze } from './session-message-helpers.js';
import type { SessionTool } from '../contracts/session-tool.js';

/**
 * Forked helpers (SPEC §5): session notes, summaries and other side work run as a helper that sends
 * the parent's system blocks, tools and messages unchanged, then its own instruction. Its requests
 * therefore begin with the parent's last request byte for byte, and the provider's prompt cache
 * serves that prefix: a helper costs little more than its own output. It works on frozen copies
 * (it cannot change the parent's messages), owns its abort signal (aborting it leaves the parent
 * alone; aborting the parent aborts it) and runs only the tools it is allowed.
 */

/** The parent's request prefix: what the helper repeats before its instruction. */
export interface ForkPrefix {
  system: readonly SystemBlock[];
  tools: readonly ToolDefinition[];
  messages: readonly LanguageModelMessage[];
}

export interface ForkedHelperOptions {
  /** Use the parent's model: the prompt cache is per model. */
  model: LanguageModel;
  prefix: ForkPrefix;
  /** The helper's task, sent as the user message after the parent's messages. */
  instruction: string;
  maxOutputTokens: number;
  /** Model calls at most (default 1; tool calls need more). */
  maxTurns?: number;
  /** The tools the helper may run, by name; calls to any other tool of the prefix get an error result. */
  allowedTools?: Record<string, SessionTool>;
  /** The parent's signal: aborting it aborts the helper. */
  parentSignal?: AbortSignal;
  /** The helper's own signal: aborting it aborts the helper only. */
  signal?: AbortSignal;
  /** Where the helper's own messages go (a sidechain transcript); the parent's prefix is not repeated there. */
  transcript?: SessionTranscriptSink;
  /** Sees each request before it is sent. */
  onRequest?: (request: LanguageModelRequest) => void;
  /** Passed to tools as their context's sessionId. */
  sessionId?: string;
  timeoutMs?: number;
  generateId?: () => string;
  now?: () => Date;
}

export interface ForkedHelperResult {
  /** The text of the helper's last answer. */
  text: string;
  usage: LanguageModelUsage;
  /** Model calls made. */
  turns: number;
  aborted: boolean;
  /** `answer`: it stopped calling tools; `turn-cap`: maxTurns ran out while it still called tools. */
  stoppedBy: 'answer' | 'turn-cap' | 'aborted';
  toolCalls: Array<{ name: string; isError: boolean }>;
  /** Problems that did not stop the helper (e.g. its transcript could not be flushed). */
  warnings: string[];
}

const NOT_RUN = "Not run: a forked helper does not run the parent session's pending tool calls.";
const MAX_INSTRUCTION_CHARS = 1_000_000;

/** Runs a forked helper over the parent's prefix; resolves `aborted: true` when aborted, rejects on other failures. */
export async function runForkedHelper(options: ForkedHelperOptions): Promise<ForkedHelperResult> {
  const { model, instruction } = checkOptions(options);
  const prefix = freezeCopy(options.prefix);
  const maxTurns = options.maxTurns ?? 1;
  const allowed = new Map(Object.entries(options.allowedTools ?? {}));
  const generateId = options.generateId ?? (() => crypto.randomUUID());
  const now = options.now ?? (() => new Date());

  const controller = new AbortController();
  const abort = (): void => controller.abort(new EngramError('MODEL_ABORTED', 'The forked helper was aborted.'));
  const sources = [options.parentSignal, options.signal].filter(
    (signal): signal is AbortSignal => signal !== undefined,
  );
  for (const source of sources) {
    if (source.aborted) abort();
    else source.addEventListener('abort', abort, { once: true });
  }

  const result: ForkedHelperResult = {
    text: '',
    usage: { inputTokens: 0, outputTokens: 0 },
    turns: 0,
    aborted: false,
    stoppedBy: 'answer',
    toolCalls: [],
    warnings: [],
  };
  const own: LanguageModelMessage[] = [firstMessage(prefix.messages, instruction)];
  let parentUuid: string | null = null;
  const record = (message: LanguageModelMessage, response?: LanguageModelResponse): void => {
    if (!options.transcript) return;
    const entry: SessionMessage = {
      uuid: generateId(),
      role: message.role,
      content: typeof message.content === 'string' ? message.content : message.content.map((block) => ({ ...block })),
      timestamp: now().toISOString(),
      ...(response && { usage: response.usage, model: model.modelId }),
    };
    options.transcript.append({ kind: 'message', message: entry, parentUuid });
    parentUuid = entry.uuid;
  };
  record(own[0]!);

  try {
    for (let turn = 1; turn <= maxTurns; turn += 1) {
      controller.signal.throwIfAborted();
      // No responseFormat, toolChoice or temperature of its own: a JSON instruction would add a
      // system block before the messages, and a changed tool_choice can void the cached messages.
      const request: LanguageModelRequest = {
        system: prefix.system,
        // Its own last message ends the cached prefix; the parent's conversation before it is read back from the cache.
        messages: withLastMessageCached([...prefix.messages, ...own]),
        maxOutputTokens: options.maxOutputTokens,
        ...(prefix.tools.length > 0 && { tools: prefix.tools }),
        signal: controller.signal,
        ...(options.timeoutMs !== undefined && { timeoutMs: options.timeoutMs }),
      };
      options.onRequest?.(request);
      const response = await model.generate(request);
      result.turns += 1;
      addUsage(result.usage, response.usage);
      result.text = response.text ?? '';
      const assistant: LanguageModelMessage = {
        role: 'assistant',
        content: response.content ?? [{ type: 'text', text: result.text }],
      };
      record(assistant, response);
      const calls = toolUses(response);
      if (calls.length === 0) break;
      if (turn === maxTurns) {
        result.stoppedBy = 'turn-cap';
        break;
      }
      const results: ContentBlock[] = [];
      for (const call of calls) {
        const outcome = await runTool(
          allowed.get(call.name),
          call.name,
          call.input,
          { sessionId: options.sessionId ?? '', toolUseId: call.id, signal: controller.signal },
          [...allowed.keys()],
        );
        result.toolCalls.push({ name: call.name, isError: outcome.isError });
        results.push({
          type: 'tool_result',
          toolUseId: call.id,
          content: outcome.content,
          ...(outcome.isError && { isError: true }),
        } satisfies ToolResultBlock);
      }
      controller.signal.throwIfAborted();
      own.push(deepFreeze(assistant), deepFreeze({ role: 'user', content: results }));
      record(own.at(-1)!);
    }
  } catch (error) {
    if (!controller.signal.aborted) throw error;
    result.aborted = true;
    result.stoppedBy = 'aborted';
  } finally {
    for (const source of sources) source.removeEventListener('abort', abort);
    if (options.transcript) {
      await options.transcript.flush().catch((error: unknown) => {
        result.warnings.push(
          `The helper's transcript could not be written: ${error instanceof Error ? error.message : String(error)}`,
        );
      });
    }
  }
  return result;
}

/** The helper's first message: answers to tool calls the parent left pending (so the request stays valid), then the instruction. */
function firstMessage(messages: readonly LanguageModelMessage[], instruction: string): LanguageModelMessage {
  const last = messages.at(-1);
  const pending =
    last?.role === 'assistant' && typeof last.content !== 'string'
      ? last.content.filter((block) => block.type === 'tool_use')
      : [];
  if (pending.length === 0) return deepFreeze({ role: 'user', content: instruction });
  const content: ContentBlock[] = pending.map((block) => ({
    type: 'tool_result',
    toolUseId: (block as { id: string }).id,
    content: NOT_RUN,
    isError: true,
  }));
  content.push({ type: 'text', text: instruction });
  return deepFreeze({ role: 'user', content });
}

async function runTool(
  tool: SessionTool | undefined,
  name: string,
  input: unknown,
  context: { sessionId: string; toolUseId: string; signal: AbortSignal },
  allowedNames: string[],
): Promise<{ content: string; isError: boolean }> {
  if (tool === undefined) {
    const choice = allowedNames.length > 0 ? `it may use only ${allowedNames.join(', ')}` : 'it may use no tools';
    return {
      content: `Error: the tool ${JSON.stringify(name.slice(0, 64))} is not available to this helper; ${choice}.`,
      isError: true,
    };
  }
  if (input === null || typeof input !== 'object' || Array.isArray(input))
    return { content: 'Error: the tool input must be a JSON object.', isError: true };
  try {
    const output = await tool.run(input as Record<string, unknown>, context);
    return {
      content: typeof output?.content === 'string' ? output.content : String(output?.content),
      isError: output?.isError === true,
    };
  } catch (error) {
    if (context.signal.aborted) throw error;
    return { content: `Error: ${error instanceof Error ? error.message : String(error)}`, isError: true };
  }
}

function addUsage(total: LanguageModelUsage, usage: LanguageModelUsage | undefined): void {
  if (!usage) return;
  total.inputTokens += usage.inputTokens ?? 0;
  total.outputTokens += usage.outputTokens ?? 0;
  if (usage.cacheReadTokens !== undefined) total.cacheReadTokens = (total.cacheReadTokens ?? 0) + usage.cacheReadTokens;
  if (usage.cacheWriteTokens !== undefined)
    total.cacheWriteTokens = (total.cacheWriteTokens ?? 0) + usage.cacheWriteTokens;
}

function checkOptions(options: ForkedHelperOptions): { model: LanguageModel; instruction: string } {
  const invalid = (message: string): never => {
    throw new EngramError('INVALID_INPUT', message);
  };
  if (options === null || typeof options !== 'object')
    invalid('runForkedHelper takes an options object { model, prefix, instruction, maxOutputTokens }.');
  if (!options.model || typeof options.model.generate !== 'function')
    invalid("A forked helper needs a model (the parent's, so its prompt cache is shared).");
  const prefix = options.prefix as unknown as Record<string, unknown> | null;
  if (
    prefix === null ||
    typeof prefix !== 'object' ||
    !Array.isArray(prefix.system) ||
    !Array.isArray(prefix.tools) ||
    !Array.isArray(prefix.messages)
  ) {
    invalid(
      "A forked helper's prefix is { system: SystemBlock[], tools: ToolDefinition[], messages: LanguageModelMessage[] } from the parent's last request.",
    );
  }
  checkPrefixShape(options.prefix, invalid);
  if (typeof options.instruction !== 'string' || options.instruction.trim() === '')
    invalid('A forked helper needs a non-empty instruction.');
  if (options.instruction.length > MAX_INSTRUCTION_CHARS)
    invalid(
      `A forked helper's instruction holds at most ${MAX_INSTRUCTION_CHARS} characters; got ${options.instruction.length}.`,
    );
  const whole = (value: unknown, field: string, maximum: number): void => {
    if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > maximum)
      invalid(`${field} must be a whole number from 1 to ${maximum}, got ${JSON.stringify(value) ?? String(value)}.`);
  };
  whole(options.maxOutputTokens, 'maxOutputTokens', 1_000_000);
  if (options.maxTurns !== undefined) whole(options.maxTurns, 'maxTurns', 100);
  if (options.allowedTools !== undefined) {
    if (options.allowedTools === null || typeof options.allowedTools !== 'object')
      invalid('allowedTools maps tool names to SessionTools.');
    for (const [name, tool] of Object.entries(options.allowedTools)) {
      if (!tool || typeof tool.run !== 'function')
        invalid(`allowedTools.${name} is not a SessionTool (it needs run()).`);
    }
  }
  for (const [field, signal] of [
    ['parentSignal', options.parentSignal],
    ['signal', options.signal],
  ] as const) {
    if (signal !== undefined && !(signal instanceof AbortSignal)) invalid(`${field} must be an AbortSignal.`);
  }
  return { model: options.model, instruction: options.instruction };
}

/** The parts the helper builds on: roles and content kinds (the model adapter checks the rest before sending). */
function checkPrefixShape(prefix: ForkPrefix, invalid: (message: string) => never): void {
  prefix.system.forEach((block, index) => {
    if (block === null || typeof block !== 'object' || typeof block.text !== 'string')
      invalid(`prefix.system[${index}] is not a system block { text, cache? }.`);
  });
  prefix.tools.forEach((tool, index) => {
    if (tool === null || typeof tool !== 'object' || typeof tool.name !== 'string')
      invalid(`prefix.tools[${index}] is not a tool definition { name, description, inputSchema }.`);
  });
  prefix.messages.forEach((message, index) => {
    if (message === null || typeof message !== 'object' || (message.role !== 'user' && message.role !== 'assistant')) {
      invalid(
        `prefix.messages[${index}].role must be "user" or "assistant" (the parent's request messages, the system prompt apart).`,
      );
    }
    if (typeof message.content !== 'string' && !Array.isArray(message.content))
      invalid(`prefix.messages[${index}].content is a string or an array of blocks.`);
  });
}

/** A deep copy of the prefix, frozen: nothing the helper or its model does can reach the parent's objects. */
function freezeCopy(prefix: ForkPrefix): ForkPrefix {
  let copy: ForkPrefix;
  try {
    copy = structuredClone({ system: prefix.system, tools: prefix.tools, messages: prefix.messages }) as ForkPrefix;
  } catch (error) {
    throw new EngramError(
      'INVALID_INPUT',
      "A forked helper's prefix must be plain data (system blocks, tool definitions, messages).",
      { cause: error },
    );
  }
  return deepFreeze(copy);
}
