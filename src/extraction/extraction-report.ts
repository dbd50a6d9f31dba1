import type { MemoryType } from '../memory/memory.js';
import type { Scope } from '../memory/scope.js';
import type { LanguageModelUsage } from '../contracts/language-model.js';
import type { DroppedItem } from './extraction-output.js';
import type { Job } from '../contracts/memory-store-jobs.js';

/** One tool call the helper made, as the report shows it. */
export interface AgentToolCall {
  name: string;
  command?: string;
  path?: string;
  isError: boolean;
  /** The start of the result of a refused call, to see why. */
  error?: string;
}

/** A memory one extraction run wrote: new, or merged into a near-duplicate (dedupe on write). */
export interface WrittenMemory {
  id: string;
  name: string;
  type: MemoryType;
  scope: Scope;
  action: 'created' | 'merged' | 'archived';
  /** The message the memory came from. */
  turnId: string;
  /** `extraction` (the model), `explicit` (the user's own "remember …" / "forget …"). */
  origin: 'extraction' | 'explicit';
}

/** What happened to a run of one extraction job: every write, every dropped item with its reason. */
export interface ExtractionRunReport {
  jobId: string;
  key: string;
  sessionId: string;
  /**
   * - `extracted`: the model read the span (cheap or agent mode);
   * - `nothing-new`: no message after the cursor;
   * - `already-done`: an earlier run covered this job's span (coalesced into it, or the cursor passed it);
   * - `memory-written-in-span`: the main agent wrote memory itself, so only the cursor moved;
   * - `offline`: no model; explicit statements only.
   */
  status: 'extracted' | 'nothing-new' | 'already-done' | 'memory-written-in-span' | 'offline';
  mode: 'cheap' | 'agent' | 'offline';
  /** Keys of the other queued jobs this run covered (one trailing run for several requests). */
  coalesced: string[];
  span: { messages: number; firstId?: string; lastId?: string; cursorFallback: boolean };
  modelCalls: number;
  /** Model answers reused from an earlier attempt of this job (no second call for the same turn). */
  reusedAnswers: number;
  usage: Required<LanguageModelUsage>;
  /** Bytes sent to the model, and how many of them were the fixed (cacheable) system prompt. */
  sentBytes: { system: number; total: number };
  written: WrittenMemory[];
  dropped: DroppedItem[];
  repairs: string[];
  agent?: { toolCalls: AgentToolCall[]; stoppedBy: 'final-answer' | 'turn-cap' };
  warnings: string[];
}

/** An empty report for a job, filled in as the run goes. */
export function emptyReport(
  job: { id: string; key: string },
  sessionId: string,
  mode: ExtractionRunReport['mode'],
): ExtractionRunReport {
  return {
    jobId: job.id,
    key: job.key,
    sessionId,
    status: 'nothing-new',
    mode,
    coalesced: [],
    span: { messages: 0, cursorFallback: false },
    modelCalls: 0,
    reusedAnswers: 0,
    usage: { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 },
    sentBytes: { system: 0, total: 0 },
    written: [],
    dropped: [],
    repairs: [],
    warnings: [],
  };
}

/** Adds one usage to a running total. */
export function addUsage(total: Required<LanguageModelUsage>, usage: LanguageModelUsage | undefined): void {
  if (!usage) return;
  total.inputTokens += usage.inputTokens ?? 0;
  total.outputTokens += usage.outputTokens ?? 0;
  total.cacheReadTokens += usage.cacheReadTokens ?? 0;
  total.cacheWriteTokens += usage.cacheWriteTokens ?? 0;
}

/** The outcome of one claimed job: its report, or the error it failed with and what became of it. */
export type JobOutcome =
  | { job: Job; state: 'done'; report: ExtractionRunReport }
  | { job: Job; state: 'retrying' | 'failed'; error: string; code?: string; retryAt?: string };
