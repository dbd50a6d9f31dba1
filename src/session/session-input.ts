import { randomUUID } from 'node:crypto';
import { EngramError } from '../kernel/errors.js';
import type { ContentBlock, LanguageModelResponse, SystemBlock, TextBlock } from '../contracts/language-model.js';

/**
 * The checks a Session applies to what its callers hand it (system prompt, messages, tool results,
 * responses, output caps): malformed input is refused with INVALID_INPUT before anything changes.
 * Todo lists are checked by the session's WorkingMemory (working-memory.ts), against the settings.
 */

/** What an assistant message says when the model answered nothing (the API refuses empty text blocks). */
export const EMPTY_ANSWER_TEXT = '(no content)';

/** A new session or message id (UUID v4, as Claude Code's transcripts use). */
export function newSessionId(): string {
  return randomUUID();
}

/** User content: non-empty text, or text blocks only (tool results go through addToolResults). */
export function checkUserContent(content: unknown, what: string): string | TextBlock[] {
  if (typeof content === 'string') {
    if (content.length === 0)
      throw new EngramError('INVALID_INPUT', `The ${what} is empty; a user message needs text.`);
    return content;
  }
  if (!Array.isArray(content) || content.length === 0)
    throw new EngramError('INVALID_INPUT', `The ${what} is a string or a non-empty array of text blocks.`);
  return content.map((block: unknown, index) => {
    const record = block as { type?: unknown; text?: unknown } | null;
    if (record === null || typeof record !== 'object' || record.type !== 'text') {
      throw new EngramError(
        'INVALID_INPUT',
        `${what}[${index}] must be a text block; answer tool calls with addToolResults.`,
      );
    }
    if (typeof record.text !== 'string' || record.text === '')
      throw new EngramError('INVALID_INPUT', `${what}[${index}] needs non-empty text.`);
    return { type: 'text', text: record.text };
  });
}

/** One result per pending tool_use, each a string content: refused otherwise (nothing is stored). */
export function checkToolResults<Result extends { toolUseId: string; content: string; isError?: boolean }>(
  results: readonly Result[],
  pendingIds: readonly string[],
): Map<string, Result> {
  if (!Array.isArray(results) || results.length === 0)
    throw new EngramError('INVALID_INPUT', 'addToolResults takes a non-empty array of { toolUseId, content }.');
  const byId = new Map<string, Result>();
  for (const [index, result] of results.entries()) {
    if (result === null || typeof result !== 'object')
      throw new EngramError('INVALID_INPUT', `results[${index}] is not a { toolUseId, content } object.`);
    if (typeof result.toolUseId !== 'string' || !pendingIds.includes(result.toolUseId)) {
      throw new EngramError(
        'INVALID_INPUT',
        `results[${index}].toolUseId ${JSON.stringify(String(result.toolUseId).slice(0, 80))} answers none of the pending tool calls (${pendingIds.join(', ')}).`,
      );
    }
    if (byId.has(result.toolUseId))
      throw new EngramError('INVALID_INPUT', `Tool call ${result.toolUseId} is answered twice.`);
    if (typeof result.content !== 'string')
      throw new EngramError('INVALID_INPUT', `results[${index}].content must be a string.`);
    if (result.isError !== undefined && typeof result.isError !== 'boolean')
      throw new EngramError('INVALID_INPUT', `results[${index}].isError is true or false.`);
    byId.set(result.toolUseId, result);
  }
  const missing = pendingIds.filter((id) => !byId.has(id));
  if (missing.length > 0)
    throw new EngramError('INVALID_INPUT', `Every tool call needs a result; missing: ${missing.join(', ')}.`);
  return byId;
}

/** A model response as recordResponse needs it: content blocks or text, and a usage of token counts. */
export function checkResponse(response: unknown): asserts response is LanguageModelResponse {
  const record = response as Partial<LanguageModelResponse> | null;
  if (record === null || typeof record !== 'object')
    throw new EngramError('INVALID_INPUT', 'recordResponse takes the LanguageModelResponse the model returned.');
  if (record.content !== undefined && !Array.isArray(record.content))
    throw new EngramError('INVALID_INPUT', 'response.content is an array of content blocks.');
  if (record.content === undefined && typeof record.text !== 'string')
    throw new EngramError('INVALID_INPUT', 'response needs text or content.');
  for (const [index, block] of (record.content ?? []).entries()) {
    const type = (block as { type?: unknown } | null)?.type;
    if (type === 'text' && typeof (block as TextBlock).text === 'string') continue;
    if (type === 'tool_use') {
      const use = block as { id?: unknown; name?: unknown; input?: unknown };
      if (
        typeof use.id === 'string' &&
        use.id !== '' &&
        typeof use.name === 'string' &&
        use.input !== null &&
        typeof use.input === 'object' &&
        !Array.isArray(use.input)
      )
        continue;
    }
    throw new EngramError(
      'INVALID_INPUT',
      `response.content[${index}] is not a text or tool_use block an assistant message can hold.`,
    );
  }
  const usage = record.usage as unknown as Record<string, unknown> | undefined;
  if (usage === null || typeof usage !== 'object')
    throw new EngramError('INVALID_INPUT', 'response.usage is required: token accounting starts from it.');
  for (const field of ['inputTokens', 'outputTokens', 'cacheReadTokens', 'cacheWriteTokens']) {
    const value = usage[field];
    const optional = field.startsWith('cache');
    if (optional && value === undefined) continue;
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0)
      throw new EngramError('INVALID_INPUT', `response.usage.${field} must be a token count (a number ≥ 0).`);
  }
}

/** The assistant content kept: its text and tool_use blocks, empty text dropped (the API refuses it in history). */
export function storedAssistantContent(response: LanguageModelResponse): ContentBlock[] {
  const blocks = (response.content ?? [{ type: 'text', text: response.text }]).flatMap((block): ContentBlock[] => {
    if (block.type === 'text') return block.text === '' ? [] : [{ type: 'text', text: block.text }];
    if (block.type === 'tool_use')
      return [{ type: 'tool_use', id: block.id, name: block.name, input: structuredClone(block.input) }];
    return [];
  });
  return blocks.length > 0 ? blocks : [{ type: 'text', text: EMPTY_ANSWER_TEXT }];
}

/** The output cap of a request: a whole number from 1 and below the window. */
export function checkMaxOutputTokens(value: unknown, window: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value >= window) {
    throw new EngramError(
      'INVALID_INPUT',
      `maxOutputTokens must be a whole number from 1 to ${window - 1} (below the context window), got ${JSON.stringify(value)}.`,
    );
  }
  return value;
}

/** The system prompt as frozen blocks: a string is one block marked for caching. */
export function systemBlocks(system: string | readonly SystemBlock[] | undefined): readonly SystemBlock[] {
  if (system === undefined || system === '') return Object.freeze([]);
  if (typeof system === 'string') return Object.freeze([Object.freeze({ text: system, cache: true })]);
  if (
    !Array.isArray(system) ||
    system.some((block) => block === null || typeof block !== 'object' || typeof block.text !== 'string')
  ) {
    throw new EngramError('INVALID_INPUT', 'system is a string or an array of { text, cache? } blocks.');
  }
  return Object.freeze(system.map((block) => Object.freeze({ ...block })));
}

/** The error of a request that cannot fit the window, with what to do about it. */
export function overflow(tokens: number, maxOutputTokens: number, window: number, cause: unknown): EngramError {
  const reason =
    cause === undefined ? '' : ` (auto-compaction: ${cause instanceof Error ? cause.message : String(cause)})`;
  return new EngramError(
    'CONTEXT_WINDOW_EXCEEDED',
    `The next request would need about ${tokens} input + ${maxOutputTokens} output tokens, over the ${window}-token context window${reason}. Run a manual compaction (/compact), lower maxOutputTokens, or start a new session.`,
    cause instanceof Error ? { cause } : undefined,
  );
}

/** A deterministic cut (same input → same bytes) at a UTF-8 boundary, with a note of what was left out. */
export function cutToBytes(text: string, limit: number): string {
  const buffer = Buffer.from(text, 'utf8');
  const kept = buffer
    .subarray(0, limit)
    .toString('utf8')
    .replace(/\uFFFD$/, '');
  return `${kept}\n[Output cut at ${limit} of ${buffer.length} bytes: no tool-result storage is configured.]`;
}

/** A plan: text of at most `session.planMaxChars` characters, or undefined ('' clears it too). */
export function checkPlan(plan: unknown, maxChars: number): string | undefined {
  if (plan !== undefined && typeof plan !== 'string')
    throw new EngramError('INVALID_INPUT', 'A plan is text (or undefined to clear it).');
  if (plan !== undefined && plan.length > maxChars) {
    throw new EngramError(
      'INVALID_INPUT',
      `A plan holds at most ${maxChars} characters (session.planMaxChars), got ${plan.length}; shorten it, or keep the details in a file.`,
    );
  }
  return plan === '' ? undefined : plan;
}
