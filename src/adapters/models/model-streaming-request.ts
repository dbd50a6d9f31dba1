import { EngramError } from '../../kernel/errors.js';
import type {
  AppliedContextEdit,
  ContextEditingRequest,
  LanguageModelRequest,
} from '../../contracts/language-model.js';
import { redact } from '../http/request-policy.js';
import type { ModelCallContext } from './model-call-policy.js';

/** The beta that turns on Anthropic's server-side context editing (FORMATS §4.2). */
export const CONTEXT_MANAGEMENT_BETA = 'context-management-2025-06-27';

const MAX_TOKENS = 100_000_000;
const MAX_EXCLUDED_TOOLS = 512;

/**
 * Checks the streaming and context-editing parts of a request the same way for every provider
 * (MODEL_REQUEST_INVALID naming the field; nothing is sent): `onTextDelta` a function,
 * `contextEditing.clearToolUses` with whole non-negative token counts and tool names.
 */
export function checkStreamingAndContextEditing(request: LanguageModelRequest): void {
  const onTextDelta = request.onTextDelta as unknown;
  if (onTextDelta !== undefined && typeof onTextDelta !== 'function') invalid('onTextDelta must be a function.');
  const editing = request.contextEditing as unknown;
  if (editing === undefined) return;
  const clear = (editing as { clearToolUses?: unknown } | null)?.clearToolUses as Record<string, unknown> | undefined;
  if (
    editing === null ||
    typeof editing !== 'object' ||
    clear === null ||
    typeof clear !== 'object' ||
    Array.isArray(clear)
  ) {
    invalid('contextEditing is {clearToolUses: {…}}.');
  }
  for (const field of ['triggerInputTokens', 'keepToolUses', 'clearAtLeastTokens'] as const) {
    const value = clear[field];
    if (
      value !== undefined &&
      (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > MAX_TOKENS)
    ) {
      invalid(`contextEditing.clearToolUses.${field} must be a whole number from 0 to ${MAX_TOKENS}.`);
    }
  }
  const exclude = clear.excludeTools;
  if (
    exclude !== undefined &&
    (!Array.isArray(exclude) ||
      exclude.length > MAX_EXCLUDED_TOOLS ||
      !exclude.every((name) => typeof name === 'string' && /^[a-zA-Z0-9_-]{1,64}$/.test(name)))
  ) {
    invalid(`contextEditing.clearToolUses.excludeTools must be a list of at most ${MAX_EXCLUDED_TOOLS} tool names.`);
  }
  if (clear.clearToolInputs !== undefined && typeof clear.clearToolInputs !== 'boolean')
    invalid('contextEditing.clearToolUses.clearToolInputs must be true or false.');
}

/** Anthropic's `context_management` body for engram's request (`clear_tool_uses_20250919`). */
export function toContextManagement(editing: ContextEditingRequest): { edits: Array<Record<string, unknown>> } {
  const clear = editing.clearToolUses;
  return {
    edits: [
      {
        type: 'clear_tool_uses_20250919',
        ...(clear.triggerInputTokens !== undefined && {
          trigger: { type: 'input_tokens', value: clear.triggerInputTokens },
        }),
        ...(clear.keepToolUses !== undefined && { keep: { type: 'tool_uses', value: clear.keepToolUses } }),
        ...(clear.clearAtLeastTokens !== undefined && {
          clear_at_least: { type: 'input_tokens', value: clear.clearAtLeastTokens },
        }),
        ...(clear.excludeTools !== undefined && { exclude_tools: [...clear.excludeTools] }),
        ...(clear.clearToolInputs !== undefined && { clear_tool_inputs: clear.clearToolInputs }),
      },
    ],
  };
}

/** `context_management.applied_edits` of an answer in engram's terms; malformed entries are skipped (the answer itself is still good). */
export function readAppliedEdits(management: unknown): AppliedContextEdit[] {
  const applied = (management as { applied_edits?: unknown } | null | undefined)?.applied_edits;
  if (!Array.isArray(applied)) return [];
  const count = (value: unknown): number | undefined =>
    typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : undefined;
  return applied.flatMap((raw): AppliedContextEdit[] => {
    const edit = raw as { type?: unknown; cleared_tool_uses?: unknown; cleared_input_tokens?: unknown } | null;
    if (edit === null || typeof edit !== 'object' || typeof edit.type !== 'string') return [];
    const toolUses = count(edit.cleared_tool_uses);
    const inputTokens = count(edit.cleared_input_tokens);
    return [
      {
        type: edit.type,
        ...(toolUses !== undefined && { clearedToolUses: toolUses }),
        ...(inputTokens !== undefined && { clearedInputTokens: inputTokens }),
      },
    ];
  });
}

/**
 * Passes streamed text on to the caller and remembers that it did: once text was shown, a failure
 * is final (retrying would show it twice), so `fail` turns it into MODEL_UNAVAILABLE at once
 * (an EngramError, which the request policy passes through without another try).
 */
export class TextDeltaRelay {
  #delivered = false;
  readonly #onTextDelta: (text: string) => void;
  readonly #signal: AbortSignal;

  constructor(onTextDelta: (text: string) => void, signal: AbortSignal) {
    this.#onTextDelta = onTextDelta;
    this.#signal = signal;
  }

  /** Hands a piece of text to the caller, unless the call was stopped (nothing is shown after an abort). */
  send(text: string): void {
    if (text === '' || this.#signal.aborted) return;
    this.#delivered = true;
    this.#onTextDelta(text);
  }

  /** The error to throw for a failure during the stream. */
  fail(error: unknown, context: ModelCallContext): unknown {
    if (!this.#delivered || this.#signal.aborted || error instanceof EngramError) return error;
    const failure = context.describe(error);
    const said =
      failure.kind === 'http'
        ? [failure.errorType, failure.message].filter(Boolean).join(': ')
        : failure.kind === 'timeout'
          ? undefined
          : failure.message;
    const reason = redact(said ?? '', context.secrets) || 'the connection broke';
    return new EngramError(
      'MODEL_UNAVAILABLE',
      `${context.service} broke off a streamed answer after part of it was shown (${reason}). It was not retried, so no text repeats: send the message again.`,
      {
        cause: error,
        details: { partial: true },
      },
    );
  }
}

/** The stream ended before the provider said the answer was complete (no message_stop / finish_reason). */
export class StreamCutShort extends Error {
  constructor(what: string) {
    super(`the stream ended before ${what}`);
    this.name = 'StreamCutShort';
  }
}

function invalid(message: string): never {
  throw new EngramError('MODEL_REQUEST_INVALID', `Invalid model request: ${message} Nothing was sent.`);
}
