import type { WarningCode } from '../kernel/warnings.js';
import { isEngramError, type EngramErrorCode } from '../kernel/errors.js';
import type { PackedMemory } from '../recall/memory-context-format.js';

/**
 * What the memory turn's before-request step gives the caller to put in front of the model: the
 * static part for the start of the system prompt and the `<memory_context>` block for its end (or
 * the turn's context), with what is in them and why something is missing.
 */
export interface MemoryInjection {
  /**
   * `injected`: the block holds memories. `nothing-recalled`: recall ran (or the message was empty)
   * and nothing new fits. `timed-out`: recall passed its time cap. `aborted`: the caller's signal
   * fired. `failed`: the store or recall failed (`error` says how). `recall-off`: recall is turned off.
   */
  status: 'injected' | 'nothing-recalled' | 'timed-out' | 'aborted' | 'failed' | 'recall-off';
  /** Instructions and the MEMORY.md index, kept byte-stable for the session (prompt cache); '' when not asked for or not known. */
  staticPart: string;
  /** `<memory_context>…</memory_context>`, or ''. */
  block: string;
  /** The memories in the block, in block order, with their scores and where they came from. */
  memories: PackedMemory[];
  /** How many recalled memories the budget left out. */
  omitted: number;
  /** Estimated tokens; `block` never exceeds `budget`. */
  tokens: { staticPart: number; block: number; budget: number };
  /** Degraded parts, as codes: `vector-search-unavailable`, `llm-selection-timeout`, `recall-timed-out`, `recall-failed`… */
  warnings: WarningCode[];
  /** Why memory is missing, when `status` is `failed`. */
  error?: MemoryTurnError;
}

/** An error reported by the memory turn instead of thrown: plain data, so a hook can log it as JSON. */
export interface MemoryTurnError {
  code: EngramErrorCode;
  message: string;
}

/** What the after-response step did with the turn. */
export interface ExtractionQueueResult {
  /**
   * `queued`: jobs are in the store's queue. `nothing-new`: nothing after what was already queued.
   * `deferred`: the turn ends in a tool call, queued with the loop's final answer. `off`: no
   * extractor. `failed`: not queued (`error` says why); the next turn's call queues it from the cursor.
   * `unavailable`: the store has no job queue (`warnings` names what is missing).
   */
  status: 'queued' | 'nothing-new' | 'deferred' | 'off' | 'failed' | 'unavailable';
  jobs: number;
  messages: number;
  error?: MemoryTurnError;
  warnings?: WarningCode[];
}

/** What the memory turn tells `onEvent`: noun-verb names, plain data. */
export type MemoryTurnEvent =
  | { type: 'memory-recalled'; recalled: number; omitted: number; warnings: readonly WarningCode[] }
  | { type: 'memory-injected'; ids: readonly string[]; tokens: MemoryInjection['tokens'] }
  | { type: 'recall-timed-out'; timeoutMs: number; kept: number }
  | { type: 'recall-aborted' }
  | { type: 'recall-failed'; error: MemoryTurnError }
  | { type: 'hits-failed'; error: MemoryTurnError }
  | { type: 'extraction-queued'; sessionId: string; jobs: number; messages: number }
  | { type: 'extraction-deferred'; sessionId: string }
  | { type: 'extraction-failed'; sessionId: string; error: MemoryTurnError };

/** Longest time cap accepted (10 minutes): the maximum of `recall.timeCapMs` and `recall.llmTimeoutMs` too, so every value they take starts a memory turn. */
export const MAX_RECALL_TIME_CAP_MS = 600_000;

/** The error as plain data. */
export function turnError(error: unknown): MemoryTurnError {
  if (isEngramError(error)) return { code: error.code, message: error.message.slice(0, 500) };
  return { code: 'INTERNAL', message: (error instanceof Error ? error.message : String(error)).slice(0, 500) };
}

/** An injection with no memories in it. */
export function emptyInjection(
  status: MemoryInjection['status'],
  staticPart: { text: string; tokens: number },
  budget: number,
  why: { warnings?: WarningCode[]; error?: MemoryTurnError } = {},
): MemoryInjection {
  return {
    status,
    staticPart: staticPart.text,
    block: '',
    memories: [],
    omitted: 0,
    tokens: { staticPart: staticPart.tokens, block: 0, budget },
    warnings: why.warnings ?? [],
    ...(why.error && { error: why.error }),
  };
}

/** How a piece of work stood when the caller stopped waiting. */
export type Settled<T> =
  { state: 'done'; value: T } | { state: 'failed'; error: unknown } | { state: 'cut'; by: 'time-cap' | 'signal' };

/**
 * Waits for `work` at most `timeoutMs` (0: only what finishes before the next timer tick), or until
 * `signal` fires. The work is never cancelled here: the caller aborts what it can and leaves the rest.
 */
export function settleWithin<T>(work: Promise<T>, timeoutMs: number, signal?: AbortSignal): Promise<Settled<T>> {
  return new Promise((resolve) => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const finish = (settled: Settled<T>): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      resolve(settled);
    };
    const onAbort = (): void => finish({ state: 'cut', by: 'signal' });
    if (signal?.aborted) return finish({ state: 'cut', by: 'signal' });
    signal?.addEventListener('abort', onAbort, { once: true });
    timer = setTimeout(() => finish({ state: 'cut', by: 'time-cap' }), timeoutMs);
    work.then(
      (value) => finish({ state: 'done', value }),
      (error: unknown) => finish({ state: 'failed', error }),
    );
  });
}

/** Runs `work` on a later turn of the event loop, so the caller's own code goes on first. */
export function later<T>(work: () => Promise<T>): Promise<T> {
  return new Promise<void>((resolve) => setTimeout(resolve, 0)).then(work);
}
