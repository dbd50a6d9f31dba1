import { EngramError } from '../../kernel/errors.js';
import type {
  ContentBlock,
  LanguageModelMessage,
  LanguageModelRequest,
  ToolDefinition,
} from '../../contracts/language-model.js';

/** Tool names both providers accept (Anthropic and OpenAI share this pattern). */
const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const MAX_MESSAGES = 100_000;
const MAX_TOOLS = 512;
const MAX_OUTPUT_TOKENS = 1_000_000;

/**
 * Checks a request before anything is sent, the same way for every provider: a malformed request
 * is refused with MODEL_REQUEST_INVALID and a message that names the field, and nothing leaves the
 * machine. Tool uses belong to assistant messages and tool results to user messages, each result
 * answering a tool use sent earlier.
 */
export function checkLanguageModelRequest(request: LanguageModelRequest): void {
  if (request === null || typeof request !== 'object' || Array.isArray(request))
    invalid('generate() takes a request object with messages and maxOutputTokens.');
  checkSystem(request.system);
  const messages = request.messages as unknown;
  if (!Array.isArray(messages) || messages.length === 0) invalid('A request needs at least one message.');
  if (messages.length > MAX_MESSAGES)
    invalid(`A request holds at most ${MAX_MESSAGES} messages; got ${messages.length}.`);
  const toolUseIds = new Set<string>();
  messages.forEach((message: LanguageModelMessage, index: number) => checkMessage(message, index, toolUseIds));
  const maxOutputTokens = request.maxOutputTokens as unknown;
  if (
    typeof maxOutputTokens !== 'number' ||
    !Number.isInteger(maxOutputTokens) ||
    maxOutputTokens < 1 ||
    maxOutputTokens > MAX_OUTPUT_TOKENS
  ) {
    invalid(`maxOutputTokens must be a whole number from 1 to ${MAX_OUTPUT_TOKENS}, got ${describe(maxOutputTokens)}.`);
  }
  if (request.responseFormat !== undefined && request.responseFormat !== 'text' && request.responseFormat !== 'json') {
    invalid(`responseFormat is "text" or "json", got ${describe(request.responseFormat)}.`);
  }
  const tools = checkTools(request.tools);
  checkToolChoice(request.toolChoice, tools);
  const temperature = request.temperature as unknown;
  if (
    temperature !== undefined &&
    (typeof temperature !== 'number' || !Number.isFinite(temperature) || temperature < 0 || temperature > 2)
  ) {
    invalid(`temperature must be a number from 0 to 2, got ${describe(temperature)}.`);
  }
  const timeoutMs = request.timeoutMs as unknown;
  if (
    timeoutMs !== undefined &&
    (typeof timeoutMs !== 'number' || !Number.isInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > 3_600_000)
  ) {
    invalid(`timeoutMs must be a whole number of milliseconds from 1 to 3600000, got ${describe(timeoutMs)}.`);
  }
  const signal = request.signal as unknown;
  if (signal !== undefined && !(signal instanceof AbortSignal)) invalid('signal must be an AbortSignal.');
}

function checkSystem(system: unknown): void {
  if (system === undefined || typeof system === 'string') return;
  if (!Array.isArray(system)) invalid('system is a string or an array of {text, cache?} blocks.');
  system.forEach((block: unknown, index) => {
    const record = block as { text?: unknown; cache?: unknown } | null;
    if (record === null || typeof record !== 'object' || typeof record.text !== 'string')
      invalid(`system[${index}] needs a string text.`);
    if (record.cache !== undefined && typeof record.cache !== 'boolean')
      invalid(`system[${index}].cache is true or false.`);
  });
}

function checkMessage(message: LanguageModelMessage, index: number, toolUseIds: Set<string>): void {
  const where = `messages[${index}]`;
  if (message === null || typeof message !== 'object') invalid(`${where} is not a message object.`);
  if (message.role !== 'user' && message.role !== 'assistant') {
    invalid(
      `${where}.role must be "user" or "assistant", got ${describe(message.role)} (the system prompt goes in request.system).`,
    );
  }
  if (message.cache !== undefined && typeof message.cache !== 'boolean') invalid(`${where}.cache is true or false.`);
  const content = message.content as unknown;
  if (typeof content === 'string') return;
  if (!Array.isArray(content)) invalid(`${where}.content is a string or an array of content blocks.`);
  if (content.length === 0) invalid(`${where}.content has no blocks.`);
  content.forEach((block: ContentBlock, blockIndex: number) =>
    checkBlock(block, `${where}.content[${blockIndex}]`, message.role, toolUseIds),
  );
}

function checkBlock(
  block: ContentBlock,
  where: string,
  role: LanguageModelMessage['role'],
  toolUseIds: Set<string>,
): void {
  if (block === null || typeof block !== 'object') invalid(`${where} is not a content block.`);
  switch (block.type) {
    case 'text':
      if (typeof block.text !== 'string') invalid(`${where} is a text block without a string text.`);
      return;
    case 'tool_use':
      if (role !== 'assistant') invalid(`${where}: tool_use blocks belong to assistant messages.`);
      if (typeof block.id !== 'string' || block.id === '' || block.id.length > 256)
        invalid(`${where}: a tool_use block needs an id (1 to 256 characters).`);
      if (typeof block.name !== 'string' || !TOOL_NAME.test(block.name))
        invalid(`${where}: tool name ${describe(block.name)} must match ${TOOL_NAME}.`);
      if (block.input === null || typeof block.input !== 'object' || Array.isArray(block.input))
        invalid(`${where}: tool_use input must be a JSON object.`);
      toolUseIds.add(block.id);
      return;
    case 'tool_result':
      if (role !== 'user') invalid(`${where}: tool_result blocks belong to user messages.`);
      if (typeof block.toolUseId !== 'string' || !toolUseIds.has(block.toolUseId)) {
        invalid(
          `${where}: toolUseId ${describe(block.toolUseId)} answers no tool_use block sent earlier in the request.`,
        );
      }
      if (typeof block.content !== 'string') invalid(`${where}: tool_result content is a string.`);
      if (block.isError !== undefined && typeof block.isError !== 'boolean')
        invalid(`${where}: isError is true or false.`);
      return;
    default:
      invalid(
        `${where} has unknown type ${describe((block as { type?: unknown }).type)}; use text, tool_use or tool_result.`,
      );
  }
}

function checkTools(tools: unknown): readonly ToolDefinition[] {
  if (tools === undefined) return [];
  if (!Array.isArray(tools)) invalid('tools is an array of {name, description, inputSchema}.');
  if (tools.length > MAX_TOOLS) invalid(`At most ${MAX_TOOLS} tools; got ${tools.length}.`);
  const names = new Set<string>();
  tools.forEach((tool: ToolDefinition, index) => {
    const where = `tools[${index}]`;
    if (tool === null || typeof tool !== 'object') invalid(`${where} is not a tool definition.`);
    if (typeof tool.name !== 'string' || !TOOL_NAME.test(tool.name))
      invalid(`${where}: tool name ${describe(tool.name)} must match ${TOOL_NAME}.`);
    if (names.has(tool.name)) invalid(`${where}: two tools are named ${tool.name}.`);
    names.add(tool.name);
    if (typeof tool.description !== 'string') invalid(`${where}: description is a string.`);
    const schema = tool.inputSchema as unknown;
    if (
      schema === null ||
      typeof schema !== 'object' ||
      Array.isArray(schema) ||
      (schema as { type?: unknown }).type !== 'object'
    ) {
      invalid(`${where}: inputSchema must be a JSON Schema object with type "object".`);
    }
  });
  return tools;
}

function checkToolChoice(choice: unknown, tools: readonly ToolDefinition[]): void {
  if (choice === undefined || choice === 'auto' || choice === 'none') return;
  if (choice === 'any') {
    if (tools.length === 0) invalid('toolChoice "any" needs at least one tool.');
    return;
  }
  const name = (choice as { name?: unknown } | null)?.name;
  if (choice === null || typeof choice !== 'object' || typeof name !== 'string')
    invalid('toolChoice is "auto", "none", "any" or {name}.');
  if (!tools.some((tool) => tool.name === name))
    invalid(`toolChoice names ${describe(name)}, which is not among the tools.`);
}

function invalid(message: string): never {
  throw new EngramError('MODEL_REQUEST_INVALID', `Invalid model request: ${message} Nothing was sent.`);
}

function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}…` : value);
  if (typeof value === 'number' || typeof value === 'boolean' || value === null || value === undefined)
    return String(value);
  return Array.isArray(value) ? 'an array' : `a ${typeof value}`;
}
