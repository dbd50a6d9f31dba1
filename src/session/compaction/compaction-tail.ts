import { messageGroups, type CompactableMessage } from './compaction-summary.js';

/**
 * Which recent messages a compaction from session notes keeps verbatim (SPEC §2 layer 4 step 1):
 * those after the last message the notes summarized, without ever separating a tool_use from its
 * tool_result, and fewer when they would not fit. Pure; works on indexes, never copies messages.
 */

/** A message the tail can measure and find by uuid. */
export interface TailMessage extends CompactableMessage {
  uuid: string;
}

export interface KeptTailOptions<T extends TailMessage = TailMessage> {
  /** The last message the notes cover; undefined or unknown: the notes do not say. */
  lastSummarizedUuid: string | undefined;
  /** Older groups of the tail go first once it passes this (the rest fits well under the threshold). */
  softMaxTokens: number;
  /** The tail never passes this, not even its newest group (it would trigger a compaction again at once). */
  hardMaxTokens: number;
  /** Tokens of one message. */
  measure: (message: T) => number;
}

export interface KeptTail {
  /** Index of the first kept message; `messages.length` when none is kept. */
  start: number;
  /** Whether `lastSummarizedUuid` was found among the messages. */
  anchored: boolean;
  /** Messages after the notes' last summarized one that were not kept (the notes do not cover them). */
  droppedUncovered: number;
}

function isToolResultMessage(message: CompactableMessage): boolean {
  return (
    message.role === 'user' &&
    typeof message.content !== 'string' &&
    message.content.some((block) => block.type === 'tool_result')
  );
}

/**
 * The tail to keep. Anchored at the message after `lastSummarizedUuid` (moved back onto the
 * assistant message whose tool_use the first kept tool_result answers); without an anchor, every
 * message after a leading earlier summary and its re-injected meta messages. Then whole API-round
 * groups are dropped from its front while it is over `softMaxTokens` (keeping at least the newest
 * group) and while it is over `hardMaxTokens` (even the newest).
 */
export function keptTail<T extends TailMessage>(messages: readonly T[], options: KeptTailOptions<T>): KeptTail {
  const anchor =
    options.lastSummarizedUuid === undefined
      ? -1
      : messages.findIndex((message) => message.uuid === options.lastSummarizedUuid);
  let start: number;
  if (anchor >= 0) {
    start = anchor + 1;
    while (start < messages.length && start > 0 && isToolResultMessage(messages[start]!)) start -= 1;
  } else {
    start = 0;
    while (
      start < messages.length &&
      (messages[start]!.compactSummary || (messages[start]!.meta && messages[start]!.role === 'user'))
    )
      start += 1;
  }
  const naturalStart = anchor >= 0 ? anchor + 1 : start;
  const groups = messageGroups(messages.slice(start));
  const sizes = groups.map((group) => group.reduce((sum, message) => sum + options.measure(message), 0));
  let total = sizes.reduce((sum, size) => sum + size, 0);
  let first = 0;
  while (
    first < groups.length &&
    ((total > options.softMaxTokens && first < groups.length - 1) || total > options.hardMaxTokens)
  ) {
    total -= sizes[first]!;
    start += groups[first]!.length;
    first += 1;
  }
  return { start, anchored: anchor >= 0, droppedUncovered: Math.max(0, start - naturalStart) };
}
