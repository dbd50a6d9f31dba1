import { EngramError } from '../../kernel/errors.js';
import { assertScope, type Scope } from '../../memory/scope.js';
import type { Engram } from '../../engram.js';
import type { LanguageModel } from '../../contracts/language-model.js';
import { MAX_RECALL_TIME_CAP_MS, type MemoryTurnError, type MemoryTurnEvent } from '../../agent/memory-injection.js';
import { MAX_TOKENS } from '../../agent/memory-turn-input.js';

// What the client wrappers (`withMemory`, `engramMiddleware`) are given and tell: their options,
// checked here before any call is made, their events, and the handle a wrapped client carries.

/** Options of `withMemory` and `engramMiddleware`: where memory lives, what the wrapper does, and who hears about it. */
export interface WithMemoryOptions {
  /** An open Engram (the caller closes it); default: opened on the first call as the CLI does (settings, store, project of `cwd`). */
  engram?: Engram;
  /** Store URL (a SQLite path, `sqlite:<path>` or `postgres://…`) instead of `store.url` / `ENGRAM_STORE`; not with `engram`. */
  store?: string;
  /** The project folder whose settings and project identity are used (default the current directory). */
  cwd?: string;
  /** Project id instead of the one found from `cwd` (as `ENGRAM_PROJECT`); not with `engram`. */
  project?: string;
  /** The scopes recall reads (default the Engram's read scopes: the project and global). */
  scopes?: readonly Scope[];
  /** Token budget of the `<memory_context>` block (default `injection.maxTokens`, 3,000). */
  maxTokens?: number;
  /** `false`: no recall and no injection; extraction still runs. Default true. */
  recall?: boolean;
  /** `false`: nothing is queued for extraction. Default true. */
  extract?: boolean;
  /** How long memory may hold a call before it goes on without memory (default `wrappers.recallTimeCapMs`, 300 ms). */
  recallTimeoutMs?: number;
  /** Names the conversation for extraction's cursor (default: a hash of the system prompt and the first user message). */
  sessionId?: string;
  /**
   * The model that extracts memories; `false`: explicit statements only. Default: the wrapped
   * client's own provider, endpoint and key (a provider named by `model.provider` wins), its cheap
   * model on the provider's own API, else the model its calls use (extraction-model-choice.ts); it
   * runs in a thread that never keeps the process alive. A model given here runs in this thread, so
   * its calls keep the process alive until they end: call `close()`.
   */
  extractionModel?: LanguageModel | false;
  /** An LLM retriever for recall (default none: ranked recall only, which keeps the added latency to milliseconds). */
  selectionModel?: LanguageModel | false;
  /** Environment for the settings when engram opens itself (default `process.env`). */
  env?: Record<string, string | undefined>;
  /** Told what memory did for each call; a throwing listener is ignored. */
  onEvent?: (event: WithMemoryEvent) => void;
}

/**
 * What the wrapper tells `onEvent`: the memory turn's events (recalled, injected, time cap, failures,
 * extraction queued) plus the wrapper's own. `extraction-model-chosen` / `extraction-model-missing`:
 * the model that extracts this client's turns, or why there is none (explicit statements only), told
 * once before the first extraction. `memory-unavailable`: the store could not be opened (the
 * call went on without memory). `memory-skipped`: the request could not be read, it was sent as it
 * was. `extraction-job-failed`: a queued extraction failed when it ran (kept in the queue when retrying).
 */
export type WithMemoryEvent =
  | MemoryTurnEvent
  | { type: 'extraction-model-chosen'; provider: string; model: string; endpoint: string; chosenBy: string }
  | { type: 'extraction-model-missing'; reason: string }
  | { type: 'memory-unavailable'; error: MemoryTurnError }
  | { type: 'memory-skipped'; error: MemoryTurnError }
  | { type: 'extraction-job-failed'; jobId: string; state: 'retrying' | 'failed'; code?: string; message: string };

/** The handle of a wrapped client (`client.memory`): waits for what was queued, and closes what engram opened. */
export interface ClientMemoryHandle {
  /** Waits until queued extraction is written to the store's queue and run. Never rejects. */
  flush(): Promise<void>;
  /** Flushes, then closes the store engram opened itself (an Engram given in the options stays open). */
  close(): Promise<void>;
}

/** The longest conversation id the wrappers queue under. */
export const MAX_SESSION_ID_LENGTH = 200;

const OPTION_NAMES = new Set([
  'engram',
  'store',
  'cwd',
  'project',
  'scopes',
  'maxTokens',
  'recall',
  'extract',
  'recallTimeoutMs',
  'sessionId',
  'extractionModel',
  'selectionModel',
  'env',
  'onEvent',
]);

/** Refuses what cannot work with INVALID_INPUT or INVALID_SCOPE, before any call is made. */
export function checkWithMemoryOptions(options: WithMemoryOptions): WithMemoryOptions {
  if (options === null || typeof options !== 'object' || Array.isArray(options))
    throw new EngramError('INVALID_INPUT', 'withMemory options are an object: { store?, scopes?, maxTokens?, ... }.');
  for (const name of Object.keys(options)) {
    if (!OPTION_NAMES.has(name))
      throw new EngramError(
        'INVALID_INPUT',
        `Unknown withMemory option ${JSON.stringify(name.slice(0, 60))}: one of ${[...OPTION_NAMES].join(', ')}.`,
      );
  }
  const { engram } = options;
  if (
    engram !== undefined &&
    (engram === null || typeof engram !== 'object' || typeof engram.buildMemoryContext !== 'function')
  )
    throw new EngramError('INVALID_INPUT', 'engram must be an open Engram.');
  if (engram !== undefined && (options.store !== undefined || options.project !== undefined))
    throw new EngramError(
      'INVALID_INPUT',
      'Give either engram or store/project, not both: an open Engram has its store.',
    );
  for (const name of ['store', 'cwd', 'project', 'sessionId'] as const) {
    const value = options[name];
    if (value !== undefined && (typeof value !== 'string' || value.trim() === '' || value.length > 4_096))
      throw new EngramError('INVALID_INPUT', `${name} must be a non-empty string.`);
  }
  if (
    options.sessionId !== undefined &&
    (options.sessionId.length > MAX_SESSION_ID_LENGTH || /[\u0000-\u001F\u007F-\u009F]/.test(options.sessionId))
  )
    throw new EngramError(
      'INVALID_INPUT',
      `sessionId is 1-${MAX_SESSION_ID_LENGTH} characters without control characters.`,
    );
  if (options.scopes !== undefined) {
    if (!Array.isArray(options.scopes) || options.scopes.length === 0)
      throw new EngramError(
        'INVALID_SCOPE',
        'scopes is a non-empty list of scopes, e.g. ["project:github.com/acme/app", "global"].',
      );
    for (const scope of options.scopes) assertScope(scope);
  }
  checkWhole(options.maxTokens, 'maxTokens', 0, MAX_TOKENS);
  checkWhole(options.recallTimeoutMs, 'recallTimeoutMs', 1, MAX_RECALL_TIME_CAP_MS);
  for (const name of ['recall', 'extract'] as const) {
    if (options[name] !== undefined && typeof options[name] !== 'boolean')
      throw new EngramError('INVALID_INPUT', `${name} is true or false.`);
  }
  for (const name of ['extractionModel', 'selectionModel'] as const) {
    const model = options[name];
    if (
      model !== undefined &&
      model !== false &&
      typeof (model as Partial<LanguageModel> | null)?.generate !== 'function'
    )
      throw new EngramError('INVALID_INPUT', `${name} must be a LanguageModel (with generate()) or false.`);
  }
  if (options.onEvent !== undefined && typeof options.onEvent !== 'function')
    throw new EngramError('INVALID_INPUT', 'onEvent must be a function.');
  if (options.env !== undefined && (options.env === null || typeof options.env !== 'object'))
    throw new EngramError('INVALID_INPUT', 'env is an object of environment variables.');
  return { ...options };
}

function checkWhole(value: unknown, name: string, minimum: number, maximum: number): void {
  if (value === undefined) return;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < minimum || value > maximum)
    throw new EngramError(
      'INVALID_INPUT',
      `Invalid ${name} ${JSON.stringify(value) ?? String(value)}: a whole number from ${minimum} to ${maximum}.`,
    );
}
