import { EngramError } from '../kernel/errors.js';
import { DEFAULT_SETTINGS, type Settings } from '../kernel/settings.js';
import { estimateJsonTokens, estimateTextTokens, tokensForBytes, utf8ByteLength } from '../kernel/token-estimate.js';
import type { ContentBlock, LanguageModelUsage, SystemBlock, ToolDefinition } from '../contracts/language-model.js';

/**
 * Token accounting of a session (SPEC §2): the input tokens the provider reported for the last
 * request plus an estimate of what was added since, measured against the model's context window,
 * with an output reserve and three warning levels. Pure: callers pass messages, usage and settings.
 */

/**
 * Framing a provider adds around each message and each content block (role markers, block
 * delimiters, the tool_use id and name fields). Structural, not a policy: a few tokens per item.
 */
const MESSAGE_OVERHEAD_TOKENS = 4;
const BLOCK_OVERHEAD_TOKENS = 3;

/** Where a session's context stands against its window. */
export interface ContextUsage {
  /** Tokens the next request is expected to carry (reported + estimated since). */
  tokens: number;
  /** The model's context window. */
  window: number;
  /** The window minus the output reserve: what the input may fill. */
  effectiveWindow: number;
  /** tokens / window. */
  ratio: number;
  /** How many of `session.warnRatios` the usage has reached (0 = none). */
  level: 0 | 1 | 2 | 3;
}

/** Estimated tokens of one message: text at ~4 bytes a token, JSON (tool inputs, JSON tool results) at ~2, plus framing. */
export function estimateMessageTokens(
  message: { content: string | readonly ContentBlock[] },
  settings: Pick<Settings, 'tokens'> = DEFAULT_SETTINGS,
): number {
  const { bytesPerTextToken, bytesPerJsonToken } = settings.tokens;
  if (typeof message?.content === 'string')
    return MESSAGE_OVERHEAD_TOKENS + tokensForBytes(utf8ByteLength(message.content), bytesPerTextToken);
  if (!Array.isArray(message?.content))
    throw new EngramError(
      'INVALID_INPUT',
      'A message to estimate needs content: a string or an array of content blocks.',
    );
  let tokens = MESSAGE_OVERHEAD_TOKENS;
  for (const block of message.content as readonly ContentBlock[])
    tokens += BLOCK_OVERHEAD_TOKENS + blockTokens(block, bytesPerTextToken, bytesPerJsonToken);
  return tokens;
}

/** Estimated tokens of several messages (the sum of {@link estimateMessageTokens}). */
export function estimateMessagesTokens(
  messages: ReadonlyArray<{ content: string | readonly ContentBlock[] }>,
  settings: Pick<Settings, 'tokens'> = DEFAULT_SETTINGS,
): number {
  let tokens = 0;
  for (const message of messages) tokens += estimateMessageTokens(message, settings);
  return tokens;
}

function blockTokens(block: ContentBlock, bytesPerTextToken: number, bytesPerJsonToken: number): number {
  switch (block?.type) {
    case 'text':
      return tokensForBytes(utf8ByteLength(String(block.text)), bytesPerTextToken);
    case 'tool_use':
      return (
        tokensForBytes(utf8ByteLength(String(block.name)), bytesPerTextToken) +
        tokensForBytes(utf8ByteLength(JSON.stringify(block.input ?? {})), bytesPerJsonToken)
      );
    case 'tool_result': {
      const content = String(block.content);
      return tokensForBytes(utf8ByteLength(content), looksLikeJson(content) ? bytesPerJsonToken : bytesPerTextToken);
    }
    default:
      // A block type this estimate does not know (a provider's extension): count its JSON form.
      return tokensForBytes(utf8ByteLength(JSON.stringify(block) ?? ''), bytesPerJsonToken);
  }
}

// JSON tokenizes denser than prose; a tool result that is a JSON document is counted as one.
function looksLikeJson(text: string): boolean {
  const start = text.trimStart()[0];
  const end = text.trimEnd().at(-1);
  return (start === '{' && end === '}') || (start === '[' && end === ']');
}

/**
 * Estimated tokens of a request's fixed prefix: the system blocks (joined as the provider sees them)
 * and the tool definitions as JSON. Every request of a session and of its forked helpers starts with it.
 */
export function estimatePrefixTokens(prefix: {
  system: readonly SystemBlock[];
  tools: readonly ToolDefinition[];
}): number {
  return (
    estimateTextTokens(prefix.system.map((block) => block.text).join('\n\n')) +
    estimateJsonTokens(JSON.stringify(prefix.tools))
  );
}

/**
 * The context a response leaves behind: every input token of the request (uncached + cache read +
 * cache write, FORMATS §4.3) plus the answer's output tokens, since the answer is now part of the
 * conversation and the next request carries it.
 */
export function contextTokensFromUsage(usage: LanguageModelUsage): number {
  const values = [usage?.inputTokens, usage?.outputTokens, usage?.cacheReadTokens ?? 0, usage?.cacheWriteTokens ?? 0];
  if (values.some((value) => typeof value !== 'number' || !Number.isFinite(value) || value < 0)) {
    throw new EngramError(
      'INVALID_INPUT',
      'Usage token counts must be non-negative numbers (inputTokens, outputTokens, cacheReadTokens, cacheWriteTokens).',
    );
  }
  // totalInputTokens (src/contracts/language-model-content.ts) plus outputTokens.
  return usage.inputTokens + (usage.cacheReadTokens ?? 0) + (usage.cacheWriteTokens ?? 0) + usage.outputTokens;
}

/**
 * Splits a message list into what the provider already counted and what must be estimated: the
 * usage of the latest assistant message that carries one (from `usageValidFrom` on; pass the length
 * of the list a compaction or microcompaction left, since usage recorded before it counted messages
 * that are gone or changed), and an estimate of every message after it. `measure` replaces
 * {@link estimateMessageTokens} (a caller that caches estimates per message).
 */
export function contextTokenCount<
  Message extends { role?: string; content: string | readonly ContentBlock[]; usage?: LanguageModelUsage },
>(
  messages: readonly Message[],
  settings: Pick<Settings, 'tokens'> = DEFAULT_SETTINGS,
  options: { usageValidFrom?: number; measure?: (message: Message) => number } = {},
): { reportedInputTokens?: number; estimatedSinceReport: number } {
  const from = options.usageValidFrom ?? 0;
  const measure = options.measure ?? ((message: Message) => estimateMessageTokens(message, settings));
  let index = messages.length - 1;
  while (index >= from && !(messages[index]?.role === 'assistant' && messages[index]?.usage)) index -= 1;
  const reported = index >= from;
  let estimated = 0;
  // With no valid report every message is estimated (those before `from` are still sent).
  for (let next = reported ? index + 1 : 0; next < messages.length; next += 1) estimated += measure(messages[next]!);
  return reported
    ? { reportedInputTokens: contextTokensFromUsage(messages[index]!.usage!), estimatedSinceReport: estimated }
    : { estimatedSinceReport: estimated };
}

/** One `<model>=<tokens>` entry of `session.modelContextWindows`. */
export interface ModelContextWindow {
  /** A model id, or a prefix when `prefix` is true (written with a trailing `*`). */
  pattern: string;
  prefix: boolean;
  tokens: number;
}

const WINDOW_ENTRY = /^([^=\s*]+)(\*?)\s*=\s*(\d[\d_]*)([km]?)$/i;

/** Parses `session.modelContextWindows` ("claude-sonnet-4-5=1m, gpt-4o*=128k"); refuses a malformed entry with CONFIG_INVALID. */
export function parseModelContextWindows(text: string): ModelContextWindow[] {
  if (typeof text !== 'string')
    throw new EngramError(
      'CONFIG_INVALID',
      'session.modelContextWindows must be a string of <model>=<tokens> entries.',
    );
  const entries: ModelContextWindow[] = [];
  for (const raw of text.split(/[,;\n]/)) {
    const entry = raw.trim();
    if (entry === '') continue;
    const match = WINDOW_ENTRY.exec(entry);
    const multiplier = match?.[4]?.toLowerCase() === 'm' ? 1_000_000 : match?.[4]?.toLowerCase() === 'k' ? 1_000 : 1;
    const tokens = match ? Number(match[3]!.replaceAll('_', '')) * multiplier : Number.NaN;
    if (!match || !Number.isSafeInteger(tokens) || tokens <= 0) {
      throw new EngramError(
        'CONFIG_INVALID',
        `session.modelContextWindows: ${JSON.stringify(entry.slice(0, 80))} is not <model>=<tokens> (for example "claude-sonnet-4-5=1000000, gpt-4o*=128k"); fix it in ~/.engram/config.json, .engram.json or ENGRAM_MODEL_CONTEXT_WINDOWS.`,
      );
    }
    entries.push({ pattern: match[1]!, prefix: match[2] === '*', tokens });
  }
  return entries;
}

/**
 * The context window of a model: the `session.modelContextWindows` entry naming it exactly, else
 * the longest prefix entry that matches, else `session.contextWindow`. A window that leaves no room
 * past the output reserve is refused (CONFIG_INVALID), since every request would be over it.
 */
export function contextWindowFor(modelId: string | undefined, settings: Pick<Settings, 'session'>): number {
  const { contextWindow, outputReserve } = settings.session;
  const entries = parseModelContextWindows(settings.session.modelContextWindows ?? '');
  let window = contextWindow;
  let chosen: string | undefined;
  if (typeof modelId === 'string' && modelId !== '') {
    const exact = entries.findLast((entry) => !entry.prefix && entry.pattern === modelId);
    const prefixed = entries
      .filter((entry) => entry.prefix && modelId.startsWith(entry.pattern))
      .sort((a, b) => b.pattern.length - a.pattern.length)[0];
    const match = exact ?? prefixed;
    if (match) {
      window = match.tokens;
      chosen = `session.modelContextWindows (${match.pattern}${match.prefix ? '*' : ''})`;
    }
  }
  if (!(window > outputReserve)) {
    throw new EngramError(
      'CONFIG_INVALID',
      `The context window of ${modelId ?? 'the model'} (${window} tokens, from ${chosen ?? 'session.contextWindow'}) must be larger than session.outputReserve (${outputReserve}); raise the window or lower the reserve.`,
    );
  }
  return window;
}

/** How many warning ratios `tokens` has reached in `window` (ratios from `session.warnRatios`, at most 3 levels). */
export function warningLevel(tokens: number, window: number, settings: Pick<Settings, 'session'>): 0 | 1 | 2 | 3 {
  assertCount(tokens, 'tokens');
  if (!(typeof window === 'number' && Number.isFinite(window) && window > 0))
    throw new EngramError(
      'INVALID_INPUT',
      `The context window must be a positive number of tokens, got ${String(window)}.`,
    );
  // tokens / window is correctly rounded, so usage exactly at a ratio (140,000 of 200,000 at 0.7) reaches it.
  const ratio = tokens / window;
  const reached = settings.session.warnRatios.filter((threshold) => ratio >= threshold).length;
  return Math.min(3, reached) as 0 | 1 | 2 | 3;
}

/** Where the context stands: reported input tokens of the last request plus the estimate since, against the window. */
export function contextUsage(
  input: { reportedInputTokens?: number; estimatedSinceReport: number; window: number },
  settings: Pick<Settings, 'session'>,
): ContextUsage {
  if (input.reportedInputTokens !== undefined) assertCount(input.reportedInputTokens, 'reportedInputTokens');
  assertCount(input.estimatedSinceReport, 'estimatedSinceReport');
  const tokens = (input.reportedInputTokens ?? 0) + input.estimatedSinceReport;
  const level = warningLevel(tokens, input.window, settings);
  return {
    tokens,
    window: input.window,
    effectiveWindow: Math.max(0, input.window - settings.session.outputReserve),
    ratio: tokens / input.window,
    level,
  };
}

function assertCount(value: number, name: string): void {
  if (!(typeof value === 'number' && Number.isFinite(value) && value >= 0)) {
    throw new EngramError('INVALID_INPUT', `${name} must be a non-negative number of tokens, got ${String(value)}.`);
  }
}
