import { EngramError } from '../kernel/errors.js';
import type { Settings } from '../kernel/settings.js';
import type { ContentBlock, ContextEditingRequest, ToolResultBlock } from '../contracts/language-model.js';
import type { SessionMessage } from '../contracts/session-message.js';

/**
 * Layer 2 of SPEC §2, microcompaction: cheap clean-up before a request, with no model call. Once the
 * session has been idle longer than the provider's prompt cache lives (60 minutes by default), the
 * next request rebuilds the cache anyway, so clearing old content costs nothing extra: meta messages
 * go first, then tool results older than the most recent few become a fixed placeholder.
 */

/** What a cleared tool result says, byte for byte the same every time (so a second run changes nothing). */
export const OLD_TOOL_RESULT_PLACEHOLDER = '[Old tool result content cleared]';

/** Anthropic's memory tool (its name is fixed by the API); its results are never cleared server-side (FORMATS §4.2). */
const MEMORY_TOOL_NAME = 'memory';

export interface MicrocompactionInput {
  /** The clock of the decision. */
  now: Date;
  /** When the assistant last answered; default: the timestamp of the last assistant message before `protectFrom`. */
  lastAssistantAt?: Date;
  /** Fires only when more than this many minutes passed since `lastAssistantAt`. */
  idleMinutes: number;
  /** Tool results kept as they are, counted from the most recent (all of the list's tool results count). */
  keepRecent: number;
  /** Index of the first message never touched (the turn in progress); default: the list's length. */
  protectFrom?: number;
  /** Clear old tool results (default true); false when the provider clears them server-side, so only meta messages go. */
  clearToolResults?: boolean;
  /** Tool names whose results are never cleared (matched through the assistant's tool_use blocks). */
  excludeTools?: readonly string[];
}

export interface MicrocompactionResult {
  /**
   * The new list. Messages left as they were are the same objects; changed ones are new objects.
   * The protected messages are its last `messages.length - protectFrom` (dropped meta messages
   * shift them up by `droppedMeta`).
   */
  messages: SessionMessage[];
  changed: boolean;
  clearedToolResults: number;
  droppedMeta: number;
}

/**
 * Clears what an idle session no longer needs before its next request: meta messages (not a
 * compaction summary) before `protectFrom` are dropped, then tool results older than the most recent
 * `keepRecent` become {@link OLD_TOOL_RESULT_PLACEHOLDER}. A cleared result keeps its block and
 * `toolUseId`, so every tool_use still has its tool_result. Never mutates `messages`.
 */
export function microcompact(messages: readonly SessionMessage[], input: MicrocompactionInput): MicrocompactionResult {
  checkInput(messages, input);
  const protectFrom = input.protectFrom ?? messages.length;
  const unchanged: MicrocompactionResult = {
    messages: [...messages],
    changed: false,
    clearedToolResults: 0,
    droppedMeta: 0,
  };
  const lastAssistantAt = input.lastAssistantAt ?? lastAssistantTime(messages, protectFrom);
  if (lastAssistantAt === undefined) return unchanged;
  if (!(input.now.getTime() - lastAssistantAt.getTime() > input.idleMinutes * 60_000)) return unchanged;

  const kept = dropMeta(messages, protectFrom);
  const droppedMeta = messages.length - kept.length;
  const protectedStart = protectFrom - droppedMeta;
  const cleared =
    input.clearToolResults === false
      ? { messages: kept, count: 0 }
      : clearOldToolResults(kept, protectedStart, input.keepRecent, input.excludeTools ?? []);
  const changed = droppedMeta > 0 || cleared.count > 0;
  return changed ? { messages: cleared.messages, changed, clearedToolResults: cleared.count, droppedMeta } : unchanged;
}

/**
 * Drops meta messages before `protectFrom`, except a compaction summary, a message carrying tool
 * blocks (its pair would be left alone), and the one that must stay so the list still opens with
 * the user's role.
 */
function dropMeta(messages: readonly SessionMessage[], protectFrom: number): SessionMessage[] {
  const kept: SessionMessage[] = [];
  let lastDropped: SessionMessage | undefined;
  for (const [index, message] of messages.entries()) {
    const droppable =
      index < protectFrom && message.meta === true && message.compactSummary !== true && !hasToolBlocks(message);
    if (droppable) {
      if (message.role === 'user') lastDropped = message;
      continue;
    }
    if (kept.length === 0 && messages[0]?.role === 'user' && message.role === 'assistant' && lastDropped)
      kept.push(lastDropped);
    kept.push(message);
  }
  return kept;
}

function clearOldToolResults(
  messages: SessionMessage[],
  protectFrom: number,
  keepRecent: number,
  excludeTools: readonly string[],
): { messages: SessionMessage[]; count: number } {
  const toolNames = new Map<string, string>();
  const positions: Array<{ message: number; block: number }> = [];
  for (const [messageIndex, message] of messages.entries()) {
    if (typeof message.content === 'string') continue;
    for (const [blockIndex, block] of message.content.entries()) {
      if (block.type === 'tool_use') toolNames.set(block.id, block.name);
      else if (block.type === 'tool_result') positions.push({ message: messageIndex, block: blockIndex });
    }
  }
  const clearable = positions
    .slice(0, Math.max(0, positions.length - keepRecent))
    .filter((position) => position.message < protectFrom);
  const result = [...messages];
  let count = 0;
  for (const position of clearable) {
    const message = result[position.message]!;
    const block = (message.content as ContentBlock[])[position.block] as ToolResultBlock;
    if (block.content === OLD_TOOL_RESULT_PLACEHOLDER) continue;
    const toolName = toolNames.get(block.toolUseId);
    if (toolName !== undefined && excludeTools.includes(toolName)) continue;
    // Copy the message (once) and its content array before changing one block: the input stays as it was.
    const copy =
      message === messages[position.message]
        ? { ...message, content: [...(message.content as ContentBlock[])] }
        : message;
    (copy.content as ContentBlock[])[position.block] = { ...block, content: OLD_TOOL_RESULT_PLACEHOLDER };
    result[position.message] = copy;
    count += 1;
  }
  return { messages: result, count };
}

function hasToolBlocks(message: SessionMessage): boolean {
  return (
    typeof message.content !== 'string' &&
    message.content.some((block) => block.type === 'tool_use' || block.type === 'tool_result')
  );
}

function lastAssistantTime(messages: readonly SessionMessage[], protectFrom: number): Date | undefined {
  for (let index = Math.min(protectFrom, messages.length) - 1; index >= 0; index -= 1) {
    const message = messages[index]!;
    if (message.role !== 'assistant') continue;
    const time = Date.parse(message.timestamp);
    return Number.isNaN(time) ? undefined : new Date(time);
  }
  return undefined;
}

function checkInput(messages: readonly SessionMessage[], input: MicrocompactionInput): void {
  if (!Array.isArray(messages))
    throw new EngramError('INVALID_INPUT', 'microcompact needs the session messages as an array.');
  if (!(input?.now instanceof Date) || Number.isNaN(input.now.getTime()))
    throw new EngramError('INVALID_INPUT', 'microcompact needs `now` as a valid Date (the injected clock).');
  if (
    input.lastAssistantAt !== undefined &&
    (!(input.lastAssistantAt instanceof Date) || Number.isNaN(input.lastAssistantAt.getTime()))
  ) {
    throw new EngramError('INVALID_INPUT', '`lastAssistantAt` must be a valid Date when given.');
  }
  if (!(typeof input.idleMinutes === 'number' && Number.isFinite(input.idleMinutes) && input.idleMinutes >= 0)) {
    throw new EngramError(
      'INVALID_INPUT',
      `idleMinutes must be a non-negative number (session.microcompactIdleMinutes), got ${String(input.idleMinutes)}.`,
    );
  }
  if (!(Number.isSafeInteger(input.keepRecent) && input.keepRecent >= 0)) {
    throw new EngramError(
      'INVALID_INPUT',
      `keepRecent must be a whole number of at least 0 (session.microcompactKeepRecent), got ${String(input.keepRecent)}.`,
    );
  }
  if (
    input.protectFrom !== undefined &&
    !(Number.isSafeInteger(input.protectFrom) && input.protectFrom >= 0 && input.protectFrom <= messages.length)
  ) {
    throw new EngramError(
      'INVALID_INPUT',
      `protectFrom must be a message index from 0 to ${messages.length}, got ${String(input.protectFrom)}.`,
    );
  }
  for (const message of messages) {
    if (!message || (typeof message.content !== 'string' && !Array.isArray(message.content))) {
      throw new EngramError(
        'INVALID_INPUT',
        'Every session message needs content: a string or an array of content blocks.',
      );
    }
  }
}

/**
 * Microcompaction as a session runs it before each request: the turn in progress (everything after
 * the last assistant message) is never touched, the idle gap is measured from that message, and with
 * server-side context editing (`session.serverContextEditing`) only meta messages are dropped here.
 */
export function microcompactSession(
  messages: readonly SessionMessage[],
  now: Date,
  settings: Pick<Settings, 'session'>,
): MicrocompactionResult {
  const lastAssistant = messages.findLastIndex((message) => message.role === 'assistant');
  if (lastAssistant < 0) return { messages: [...messages], changed: false, clearedToolResults: 0, droppedMeta: 0 };
  return microcompact(messages, {
    now,
    lastAssistantAt: new Date(messages[lastAssistant]!.timestamp),
    idleMinutes: settings.session.microcompactIdleMinutes,
    keepRecent: settings.session.microcompactKeepRecent,
    protectFrom: lastAssistant + 1,
    clearToolResults: settings.session.serverContextEditing !== true,
  });
}

/**
 * The server-side alternative (FORMATS §4.2): Anthropic's `clear_tool_uses` keeping the same number
 * of recent tool uses as local microcompaction and never clearing the memory tool's results.
 * Undefined when `session.serverContextEditing` is off (the default), so it can be passed straight
 * to `LanguageModelRequest.contextEditing`.
 */
export function contextEditingFor(settings: Pick<Settings, 'session'>): ContextEditingRequest | undefined {
  // Only a real `true` turns it on: the config loader passes booleans through unchecked.
  if (settings.session.serverContextEditing !== true) return undefined;
  return { clearToolUses: { keepToolUses: settings.session.microcompactKeepRecent, excludeTools: [MEMORY_TOOL_NAME] } };
}
