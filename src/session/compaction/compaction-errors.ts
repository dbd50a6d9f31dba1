import { messageGroups } from './compaction-summary.js';
import { estimateMessagesTokens } from '../context-budget.js';
import { EngramError, isEngramError } from '../../kernel/errors.js';
import type { Settings } from '../../kernel/settings.js';
import type { SessionMessage } from '../../contracts/session-message.js';

/** How a compaction fails: too-long refusals and how much to drop after one, what the circuit breaker counts, and the errors it throws. */

/** Context-length refusals, as Anthropic ("prompt is too long"), OpenAI ("maximum context length") and others word them. */
const TOO_LONG =
  /prompt is too long|too long|context[ _-]?length|maximum context|context window|too many (input )?tokens|request_too_large|exceeds? the maximum/i;

/** Whether a model error says the request did not fit the model's context. */
export function isPromptTooLong(error: unknown): boolean {
  if (!isEngramError(error) || error.code !== 'MODEL_REQUEST_INVALID') return false;
  return TOO_LONG.test(error.message) || error.details?.status === 413;
}

/** How many groups to drop after a too-long refusal: enough to cover the overflow the provider named ("N tokens > M maximum"), else a fifth. */
export function groupsToDrop(
  messages: readonly SessionMessage[],
  error: EngramError,
  settings: Pick<Settings, 'tokens'>,
): number {
  const groups = messageGroups(messages);
  const overflow = /(\d[\d,]*)\s*tokens?\s*>\s*(\d[\d,]*)/i.exec(error.message);
  if (overflow) {
    const excess = Number(overflow[1]!.replaceAll(',', '')) - Number(overflow[2]!.replaceAll(',', ''));
    let covered = 0;
    let count = 0;
    for (const group of groups.slice(0, -1)) {
      if (covered >= excess) break;
      if (!group[0]!.compactSummary) {
        covered += estimateMessagesTokens(group, settings);
        count += 1;
      }
    }
    if (count > 0 && covered >= excess) return count;
  }
  return Math.max(1, Math.floor(groups.length / 5));
}

export function countsAsFailure(error: unknown, signal: AbortSignal | undefined): boolean {
  if (signal?.aborted) return false;
  if (!isEngramError(error)) return true;
  return (
    error.code !== 'INVALID_INPUT' &&
    error.code !== 'MODEL_ABORTED' &&
    error.code !== 'CONFLICT' &&
    error.code !== 'COMPACTION_DISABLED'
  );
}

export function failed(error: unknown, modelCalls: number, droppedGroups: number, note: string): EngramError {
  if (isEngramError(error) && (error.code === 'MODEL_ABORTED' || error.code === 'COMPACTION_FAILED')) return error;
  return new EngramError(
    'COMPACTION_FAILED',
    `The compaction summary could not be made${note}: ${describe(error)} Nothing was changed; the session goes on uncompacted.`,
    {
      cause: error,
      details: { modelCalls, droppedGroups, ...(isEngramError(error) && { modelError: error.code }) },
    },
  );
}

/** A compaction refused because it would not shrink the context: the session keeps what it has. */
export function notSmaller(why: string, modelCalls: number, droppedGroups: number): EngramError {
  return new EngramError(
    'COMPACTION_FAILED',
    `${why}; nothing was changed, the session goes on uncompacted. A compaction never makes the context larger.`,
    { details: { modelCalls, droppedGroups, grows: true } },
  );
}

export function aborted(): EngramError {
  return new EngramError('MODEL_ABORTED', 'The compaction was aborted; nothing was changed.');
}

export function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
