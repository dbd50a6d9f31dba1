import { EngramError, type EngramErrorCode } from '../../kernel/errors.js';
import { DEFAULT_SETTINGS } from '../../kernel/settings.js';
import { abortableSleep } from './abortable-sleep.js';

/** One failed attempt in provider-neutral terms; each adapter describes its SDK's errors this way. */
export type AttemptFailure =
  | {
      kind: 'http';
      status: number;
      headers?: Headers | undefined;
      /** The provider's error type, e.g. `overloaded_error`, `rate_limit_exceeded`. */
      errorType?: string | undefined;
      /** The provider's own message (shown redacted and cut). */
      message?: string | undefined;
      requestId?: string | undefined;
    }
  /** The server could not be reached or the connection broke: worth another try. */
  | { kind: 'network'; message: string; cause?: unknown }
  /** The server answered something engram cannot read: another try would read the same. */
  | { kind: 'output'; message: string }
  /** Anything else (a bug or an SDK refusal): reported, not retried. */
  | { kind: 'other'; message: string; cause?: unknown };

/** Retry, backoff and time budget of model calls; defaults from `model.*` settings. */
export interface ModelRequestPolicyOptions {
  /** Budget of one generate() call, retries and waits included. */
  timeoutMs?: number;
  /** Retries after 429, 408, 409, 5xx, 529 and network errors. */
  maxRetries?: number;
  /** First backoff; doubles per retry, with jitter. */
  retryBaseDelayMs?: number;
  /** Longest wait between tries; a Retry-After longer than this ends the retries. */
  retryMaxDelayMs?: number;
  /** Replaces the wait between retries (tests record the waits instead of sleeping). */
  sleep?: (milliseconds: number, signal?: AbortSignal) => Promise<void>;
  /** Jitter source in [0, 1); default Math.random. */
  random?: () => number;
  /** Clock for the call budget and HTTP-date Retry-After; default Date.now. */
  now?: () => number;
}

/** Who is being called, for messages a user can act on, and what must never appear in them. */
export interface ModelCallContext {
  /** e.g. `The Anthropic API at https://api.anthropic.com`. */
  service: string;
  /** Where the key comes from, e.g. `ANTHROPIC_API_KEY or model.apiKey`. */
  keyHint: string;
  /** Where the base URL and model come from, for 404 answers. */
  endpointHint: string;
  /** Strings (the API key) replaced by [redacted] in every message. */
  secrets: readonly string[];
  describe(error: unknown): AttemptFailure;
}

const defaults = DEFAULT_SETTINGS.model;
const RETRYABLE_STATUS = new Set([408, 409, 429]);
const MESSAGE_LIMIT = 300;

class StoppedByCaller extends Error {}
class StoppedByTimeout extends Error {}

/**
 * The one retry policy of engram's model adapters (the SDKs' own retries are off): exponential
 * backoff with jitter on 429, 408, 409, 5xx, Anthropic's 529 and network errors, honouring
 * Retry-After (`retry-after-ms`, seconds or an HTTP date); no retry on other 4xx. One time budget
 * covers the whole call. An abort rejects at once with MODEL_ABORTED, even if the SDK ignores the
 * signal, and every failure becomes an EngramError with a MODEL_* code and no secret in its message.
 */
export class ModelRequestPolicy {
  readonly timeoutMs: number;
  readonly maxRetries: number;
  readonly retryBaseDelayMs: number;
  readonly retryMaxDelayMs: number;
  readonly #sleep: (milliseconds: number, signal?: AbortSignal) => Promise<void>;
  readonly #random: () => number;
  readonly #now: () => number;

  constructor(options: ModelRequestPolicyOptions = {}) {
    this.timeoutMs = wholeNumber(options.timeoutMs ?? defaults.timeoutMs, 'model.timeoutMs', 1, 3_600_000);
    this.maxRetries = wholeNumber(options.maxRetries ?? defaults.maxRetries, 'model.maxRetries', 0, 20);
    this.retryBaseDelayMs = wholeNumber(options.retryBaseDelayMs ?? defaults.retryBaseDelayMs, 'model.retryBaseDelayMs', 0, 3_600_000);
    this.retryMaxDelayMs = wholeNumber(options.retryMaxDelayMs ?? defaults.retryMaxDelayMs, 'model.retryMaxDelayMs', 0, 3_600_000);
    this.#sleep = options.sleep ?? abortableSleep;
    this.#random = options.random ?? Math.random;
    this.#now = options.now ?? Date.now;
  }

  /**
   * Runs `attempt` until it succeeds, fails for good, the budget (`timeoutMs`, else the policy's)
   * runs out or `signal` fires. `attempt` gets a signal to pass to the SDK and the time left.
   */
  async run<T>(
    attempt: (signal: AbortSignal, remainingMs: number) => Promise<T>,
    call: { signal?: AbortSignal | undefined; timeoutMs?: number | undefined },
    context: ModelCallContext,
  ): Promise<T> {
    const budget = call.timeoutMs ?? this.timeoutMs;
    const deadline = this.#now() + budget;
    for (let tries = 1; ; tries += 1) {
      if (call.signal?.aborted) throw aborted(call.signal);
      const remaining = deadline - this.#now();
      if (remaining <= 0) throw timedOut(context, budget);
      let failure: AttemptFailure;
      try {
        return await runOnce(attempt, remaining, call.signal);
      } catch (error) {
        if (error instanceof StoppedByCaller) throw aborted(call.signal);
        if (error instanceof StoppedByTimeout) throw timedOut(context, budget);
        if (error instanceof EngramError) throw error;
        failure = context.describe(error);
      }
      const mapped = toEngramError(failure, context, tries);
      const retryable = isRetryable(failure);
      if (!retryable || tries > this.maxRetries) throw mapped;
      const retryAfterMs = failure.kind === 'http' ? readRetryAfter(failure.headers, this.#now()) : undefined;
      if (retryAfterMs !== undefined && retryAfterMs > this.retryMaxDelayMs) {
        throw withNote(mapped, `The server asked to wait ${Math.ceil(retryAfterMs / 1000)} s, longer than model.retryMaxDelayMs (${this.retryMaxDelayMs} ms).`, { retryAfterMs });
      }
      const wait = retryAfterMs ?? this.#backoff(tries - 1);
      if (wait >= deadline - this.#now()) {
        throw withNote(mapped, `No time was left for another try within the ${budget} ms budget (model.timeoutMs).`, {});
      }
      try {
        await this.#sleep(wait, call.signal);
      } catch (error) {
        if (call.signal?.aborted) throw aborted(call.signal);
        throw error;
      }
    }
  }

  /** Exponential backoff with "equal jitter": half the delay fixed, half random, so clients spread out. */
  #backoff(retry: number): number {
    const delay = Math.min(this.retryMaxDelayMs, this.retryBaseDelayMs * 2 ** retry);
    return Math.round(delay / 2 + this.#random() * (delay / 2));
  }
}

async function runOnce<T>(attempt: (signal: AbortSignal, remainingMs: number) => Promise<T>, remaining: number, outer: AbortSignal | undefined): Promise<T> {
  const controller = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let onAbort: (() => void) | undefined;
  // Settles as soon as the caller aborts or the budget runs out, whatever the SDK does with its signal.
  const stopped = new Promise<never>((_, reject) => {
    onAbort = () => {
      controller.abort(outer?.reason);
      reject(new StoppedByCaller());
    };
    outer?.addEventListener('abort', onAbort, { once: true });
    timer = setTimeout(() => {
      controller.abort(new StoppedByTimeout());
      reject(new StoppedByTimeout());
    }, remaining);
  });
  try {
    const pending = attempt(controller.signal, remaining);
    pending.catch(() => undefined);
    return await Promise.race([pending, stopped]);
  } catch (error) {
    // The SDK may report our own abort as its error: say what really happened.
    if (outer?.aborted) throw new StoppedByCaller();
    if (controller.signal.reason instanceof StoppedByTimeout) throw new StoppedByTimeout();
    throw error;
  } finally {
    clearTimeout(timer);
    if (onAbort) outer?.removeEventListener('abort', onAbort);
  }
}

function isRetryable(failure: AttemptFailure): boolean {
  if (failure.kind === 'network') return true;
  if (failure.kind !== 'http') return false;
  return RETRYABLE_STATUS.has(failure.status) || failure.status >= 500;
}

/** The MODEL_* code of a failure that will not be retried (again). */
export function failureCode(failure: AttemptFailure): EngramErrorCode {
  switch (failure.kind) {
    case 'network':
      return 'MODEL_UNAVAILABLE';
    case 'output':
      return 'MODEL_OUTPUT_INVALID';
    case 'other':
      return 'MODEL_UNAVAILABLE';
    case 'http':
      if (failure.status === 401 || failure.status === 402 || failure.status === 403) return 'MODEL_AUTH';
      if (failure.status === 429) return 'MODEL_RATE_LIMITED';
      if (RETRYABLE_STATUS.has(failure.status) || failure.status >= 500) return 'MODEL_UNAVAILABLE';
      return 'MODEL_REQUEST_INVALID';
  }
}

function toEngramError(failure: AttemptFailure, context: ModelCallContext, tries: number): EngramError {
  const code = failureCode(failure);
  const clean = (text: string | undefined): string => redact(text ?? '', context.secrets);
  const attempts = tries > 1 ? ` (after ${tries} attempts)` : '';
  switch (failure.kind) {
    case 'network':
      return new EngramError('MODEL_UNAVAILABLE', `${context.service} could not be reached${attempts}: ${clean(failure.message)}. Check the base URL (${context.endpointHint}) and the network.`, {
        cause: failure.cause,
        details: { attempts: tries },
      });
    case 'output':
      return new EngramError('MODEL_OUTPUT_INVALID', `${context.service} answered something engram cannot read: ${clean(failure.message)}`, { details: { attempts: tries } });
    case 'other':
      return new EngramError('MODEL_UNAVAILABLE', `${context.service} failed: ${clean(failure.message)}`, { details: { attempts: tries } });
    case 'http': {
      const what = [failure.status, failure.errorType].filter(Boolean).join(' ');
      const said = clean(failure.message).replace(/[.!\s]+$/, '');
      const details = { status: failure.status, attempts: tries, ...(failure.errorType && { type: failure.errorType }), ...(failure.requestId && { requestId: failure.requestId }) };
      return new EngramError(code, `${context.service} answered ${what}${attempts}${said ? `: ${said}` : ''}. ${hintFor(failure.status, code, context)}`.trim(), { details });
    }
  }
}

function hintFor(status: number, code: EngramErrorCode, context: ModelCallContext): string {
  if (status === 401) return `Check the API key (${context.keyHint}).`;
  if (status === 402) return 'Check the billing of the account behind the API key.';
  if (status === 403) return `The API key may not use this model or endpoint (${context.keyHint}).`;
  if (status === 404) return `Check the base URL and the model id (${context.endpointHint}).`;
  if (status === 413) return 'The request is too large: send a shorter prompt.';
  if (code === 'MODEL_RATE_LIMITED') return 'The provider is rate limiting: try again later, or raise model.maxRetries / model.retryMaxDelayMs.';
  if (code === 'MODEL_UNAVAILABLE') return 'The provider is down or overloaded: try again later.';
  return '';
}

function withNote(error: EngramError, note: string, details: Record<string, unknown>): EngramError {
  return new EngramError(error.code, `${error.message} ${note}`, { details: { ...error.details, ...details } });
}

function aborted(signal: AbortSignal | undefined): EngramError {
  return new EngramError('MODEL_ABORTED', 'The model call was aborted by its caller; nothing was returned.', { cause: signal?.reason });
}

function timedOut(context: ModelCallContext, budget: number): EngramError {
  return new EngramError('MODEL_TIMEOUT', `${context.service} did not answer within ${budget} ms. Raise model.timeoutMs (or the request's timeoutMs), or try again later.`, {
    details: { timeoutMs: budget },
  });
}

/** Errors outside the SDK's tree: an unreadable body, a connection cut while the body was read. */
export function describeNonSdkError(error: unknown): AttemptFailure {
  if (error instanceof SyntaxError) return { kind: 'output', message: `a body that is not valid JSON (${error.message})` };
  if (error instanceof TypeError && /terminated|fetch failed|socket|ECONNRESET|other side closed/i.test(`${error.message} ${String((error.cause as Error | undefined)?.message ?? '')}`)) {
    return { kind: 'network', message: 'the connection broke while the answer was read', cause: error };
  }
  return { kind: 'other', message: error instanceof Error ? error.message : String(error), cause: error };
}

/** What a connection error came down to: the system error code (ECONNREFUSED …) when there is one. */
export function networkReason(error: Error): string {
  let cause: unknown = error.cause;
  for (let depth = 0; depth < 4 && cause; depth += 1) {
    const code = (cause as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    cause = (cause as { cause?: unknown }).cause;
  }
  return error.message;
}

/** Retry-After in milliseconds: `retry-after-ms`, else `retry-after` as seconds or an HTTP date; undefined when absent or unreadable. */
export function readRetryAfter(headers: Headers | undefined, now: number = Date.now()): number | undefined {
  if (!headers || typeof headers.get !== 'function') return undefined;
  const milliseconds = Number(headers.get('retry-after-ms') ?? Number.NaN);
  if (Number.isFinite(milliseconds) && milliseconds >= 0) return milliseconds;
  const raw = headers.get('retry-after');
  if (raw === null || raw.trim() === '') return undefined;
  const seconds = Number(raw);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1_000;
  const date = Date.parse(raw);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** Removes secrets (and any bearer token) from text shown to users, cut to a readable length, on one line. */
export function redact(text: string, secrets: readonly string[]): string {
  let clean = String(text);
  for (const secret of secrets) {
    if (typeof secret === 'string' && secret.length >= 4) clean = clean.split(secret).join('[redacted]');
  }
  clean = clean.replace(/(bearer\s+)[^\s"',]+/gi, '$1[redacted]').replace(/[\u0000-\u001F\u007F]+/g, ' ').replace(/\s+/g, ' ').trim();
  return clean.length > MESSAGE_LIMIT ? `${clean.slice(0, MESSAGE_LIMIT)}…` : clean;
}

function wholeNumber(value: unknown, name: string, minimum: number, maximum: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < minimum || value > maximum) {
    throw new EngramError('CONFIG_INVALID', `Invalid ${name} ${JSON.stringify(value)}: a whole number from ${minimum} to ${maximum}.`);
  }
  return value;
}
