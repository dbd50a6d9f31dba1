import { EngramError } from '../kernel/errors.js';
import type { Engram } from '../engram.js';
import type { Extractor } from '../extraction/extractor.js';
import type { RecalledMemory } from '../extraction/recalled-memories.js';
import type { LanguageModel } from '../contracts/language-model.js';
import { assertScope, type Scope } from '../memory/scope.js';
import type { MemoryPlacement } from '../privacy/injected-markers.js';
import type { AgentTurnOptions, AgentTurnResult } from './agent-turn.js';
import {
  MAX_RECALL_TIME_CAP_MS,
  type ExtractionQueueResult,
  type MemoryInjection,
  type MemoryTurnEvent,
} from './memory-injection.js';
import { MAX_TOKENS, checkFlag, checkInteger, checkSurfaced } from './memory-turn-input.js';

// What a MemoryTurn is given and answers: its options (checked here, once, with their defaults),
// the options of its steps, and what an agent turn with memory returns.

/** The parts of the Engram facade the memory turn reads through. */
export type MemoryTurnEngram = Pick<Engram, 'buildMemoryContext' | 'store' | 'settings' | 'readScopes'>;

/** One conversation's memory turn: what it reads, where it queues, and what it already surfaced. */
export interface MemoryTurnOptions {
  /** Long-term memory, opened by the caller. */
  engram: MemoryTurnEngram;
  /** Queues extraction after each answer (its `afterTurn` only enqueues); absent: the after-response step does nothing. */
  extractor?: Pick<Extractor, 'afterTurn'>;
  /** The LLM retriever: a cheap model that also picks memories; `false`: ranked recall only; default the engram's own model. */
  selectionModel?: LanguageModel | false;
  /** The scopes recall reads (default the engram's read scopes: the project and global). */
  scopes?: readonly Scope[];
  /** Token budget of the `<memory_context>` block (default `injection.maxTokens`). */
  maxTokens?: number;
  /** How long the before-request step may take before the request goes on without memory (default `recall.timeCapMs`, 1,000 ms). */
  recallTimeoutMs?: number;
  /**
   * `false`: the turn reads no memory at all, the static part (the MEMORY.md index) included, since it
   * is memory too; the after-response step still queues. Default true.
   */
  recall?: boolean;
  /**
   * Leave out memories already surfaced in this conversation (default true): right when the injected
   * text stays in the conversation (a turn's context message, a hook's additionalContext). A caller
   * that rebuilds the whole prompt on every request sets false.
   */
  excludeSurfaced?: boolean;
  /**
   * Where the caller puts the `<memory_context>` block, which the static part tells the model:
   * `before-message` (default: in the conversation just before the user's message, as `run` does) or
   * `system-end` (at the end of the system prompt, as the client wrappers do).
   */
  placement?: MemoryPlacement;
  /** Ids surfaced earlier in this conversation (restored from `surfacedIds()` by a caller that runs one process per prompt). */
  surfaced?: Iterable<string>;
  /** Told what happens: recall, injection, time caps, failures, queued extraction. A throwing listener is ignored. */
  onEvent?: (event: MemoryTurnEvent) => void;
}

/** One before-request step. */
export interface BeforeRequestOptions {
  /** Build the static part too (default true); it is built once and kept, so asking again costs nothing. */
  staticPart?: boolean;
  /** The turn is abandoned: recall stops waiting and the injection is empty. */
  signal?: AbortSignal;
  /** Tools the conversation used lately, shown to the LLM retriever. */
  recentTools?: readonly string[];
  /** This request's budget and time cap, instead of the memory turn's. */
  maxTokens?: number;
  recallTimeoutMs?: number;
}

/** One after-response step. */
export interface AfterResponseOptions {
  /**
   * Whether the conversation ends the turn. Default: it does unless its last message is the
   * assistant's with tool calls (the loop goes on: queued with the final answer).
   */
  final?: boolean;
  /** Memories the model saw that this memory turn did not inject (a host's own injection). */
  recalled?: readonly RecalledMemory[];
}

/** One turn of an agent that runs on a Session: `AgentTurnOptions` plus what the host injects beside memory. */
export interface MemoryAgentTurnOptions extends AgentTurnOptions {
  /** Context of the host's own for this turn (path-scoped rules), put after the memory block. */
  context?: string;
}

/** What `run` did: the agent turn, what memory it got, and the queueing of its extraction (never rejects). */
export interface MemoryAgentTurnResult extends AgentTurnResult {
  injection: MemoryInjection;
  extraction: Promise<ExtractionQueueResult>;
}

/** The memory turn's options, checked and with their defaults filled in. */
export interface CheckedMemoryTurnOptions {
  engram: MemoryTurnEngram;
  extractor: Pick<Extractor, 'afterTurn'> | undefined;
  selectionModel: LanguageModel | false | undefined;
  scopes: Scope[];
  maxTokens: number;
  timeoutMs: number;
  recall: boolean;
  excludeSurfaced: boolean;
  onEvent: ((event: MemoryTurnEvent) => void) | undefined;
  surfaced: Set<string>;
  placement: MemoryPlacement;
}

/** Checks a MemoryTurn's options (INVALID_INPUT, INVALID_SCOPE) and fills in the defaults from the engram's settings. */
export function checkMemoryTurnOptions(options: MemoryTurnOptions): CheckedMemoryTurnOptions {
  if (options === null || typeof options !== 'object')
    throw new EngramError('INVALID_INPUT', 'A MemoryTurn takes { engram, extractor?, ... }.');
  const { engram, extractor, selectionModel } = options;
  if (
    engram === null ||
    typeof engram !== 'object' ||
    typeof engram.buildMemoryContext !== 'function' ||
    !engram.store ||
    !engram.settings
  ) {
    throw new EngramError('INVALID_INPUT', 'A MemoryTurn needs engram: an open Engram.');
  }
  if (extractor !== undefined && typeof extractor?.afterTurn !== 'function')
    throw new EngramError('INVALID_INPUT', 'extractor must be an Extractor (with afterTurn).');
  if (selectionModel !== undefined && selectionModel !== false && typeof selectionModel?.generate !== 'function') {
    throw new EngramError(
      'INVALID_INPUT',
      'selectionModel must be a LanguageModel with a generate() method, or false.',
    );
  }
  if (options.onEvent !== undefined && typeof options.onEvent !== 'function')
    throw new EngramError('INVALID_INPUT', 'onEvent must be a function.');
  const scopes = options.scopes ?? engram.readScopes;
  if (!Array.isArray(scopes) || scopes.length === 0)
    throw new EngramError('INVALID_SCOPE', 'A MemoryTurn reads at least one scope.');
  const checkedScopes = scopes.map((scope) => assertScope(scope));
  const maxTokens = checkInteger(options.maxTokens ?? engram.settings.injection.maxTokens, 'maxTokens', 0, MAX_TOKENS);
  const timeoutMs = checkInteger(
    options.recallTimeoutMs ?? engram.settings.recall.timeCapMs,
    'recallTimeoutMs',
    1,
    MAX_RECALL_TIME_CAP_MS,
  );
  const recall = checkFlag(options.recall, 'recall');
  const excludeSurfaced = checkFlag(options.excludeSurfaced, 'excludeSurfaced');
  const surfaced = checkSurfaced(options.surfaced);
  const placement = options.placement ?? 'before-message';
  if (placement !== 'before-message' && placement !== 'system-end')
    throw new EngramError('INVALID_INPUT', "placement is 'before-message' or 'system-end'.");
  return {
    engram,
    extractor,
    selectionModel,
    scopes: checkedScopes,
    maxTokens,
    timeoutMs,
    recall,
    excludeSurfaced,
    onEvent: options.onEvent,
    surfaced,
    placement,
  };
}
