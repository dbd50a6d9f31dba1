import { EngramError } from '../../kernel/errors.js';
import { abortableSleep } from './abortable-sleep.js';

/** One failed attempt in client-neutral terms; each adapter describes its SDK's (or fetch's) errors this way. */
export type AttemptFailure =
  | {
      kind: 'http';
      status: number;
      /** The status line's text (`Too Many Requests`), when the client has it. */
      statusText?: string | undefined;
      headers?: Headers | undefined;
      /** The provider's error type, e.g. `overloaded_error`, `rate_limit_exceeded`. */
      errorType?: string | undefined;
      /** The provider's own message (shown redacted and cut). */
      message?: string | undefined;
      requestId?: string | undefined;
    }
  /** The server could not be reached or the connection broke: worth another try. */
  | { kind: 'network'; message: string; cause?: unknown }
  /** One try ran past the policy's `attemptTimeoutMs`: worth another try. */
  | { kind: 'timeout'; timeoutMs: number }
  /** The server answered something engram cannot read: another try would read the same. */
  | { kind: 'output'; message: string }
  /** Anything else (a bug or an SDK refusal): reported, not retried. */
  | { kind: 'other'; message: string; cause?: unknown };

/** Why the tries ended before `maxRetries` ran out. */
export type GaveUp =
  /** The server asked to wait longer than `retryMaxDelayMs` (and the policy fails rather than waiting less). */
  | { reason: 'retry-after-too-long'; retryAfterMs: number; retryMaxDelayMs: number }
  /** The wait before another try would not fit in what is left of the call's budget. */
  | { reason: 'no-time-left'; budgetMs: number };

/** How one client's failures read: in its error codes, naming its service and its settings. */
export interface HttpFailureReport {
  /** A thrown error (the SDK's, fetch's, an `HttpStatusError`) in the policy's terms. */
  describe(error: unknown): AttemptFailure;
  /** The error for a failure that is not tried again, after `attempts` tries. */
  failed(failure: AttemptFailure, outcome: { attempts: number; gaveUp?: GaveUp }): EngramError;
  /** What to throw when the caller's signal fires (at once, whatever the client does with it). */
  aborted(signal: AbortSignal | undefined): unknown;
  /** The error for a call whose whole budget ran out. */
  timedOut(budgetMs: number): EngramError;
}

/** Retries, backoff and time budgets; the adapters fill them from their settings (`model.*`, `embedding.*`). */
export interface HttpRequestPolicyOptions {
  /** Retries after 408, 409, 425, 429, 5xx (529 included), timed-out tries and network errors. */
  maxRetries: number;
  /** First backoff; doubles per retry. */
  retryBaseDelayMs: number;
  /** Longest wait between tries. */
  retryMaxDelayMs: number;
  /** Budget of one call, every try and wait included (a call may pass its own); none when absent. */
  callTimeoutMs?: number | undefined;
  /** Budget of each try; a try that runs out is a `timeout` failure, worth another. None when absent. */
  attemptTimeoutMs?: number | undefined;
  /** `equal` (default): half of each backoff is random, so clients spread out; `none`: the plain doubling. */
  jitter?: 'equal' | 'none';
  /** A Retry-After longer than `retryMaxDelayMs`: `fail` (default) ends the tries and says so; `wait-max` waits `retryMaxDelayMs`. */
  retryAfterBeyondMax?: 'fail' | 'wait-max';
  /** Replaces the wait between retries (tests record the waits instead of sleeping). */
  sleep?: ((milliseconds: number, signal?: AbortSignal) => Promise<void>) | undefined;
  /** Jitter source in [0, 1); default Math.random. */
  random?: (() => number) | undefined;
  /** Clock for the call budget and HTTP-date Retry-After; default Date.now. */
  now?: (() => number) | undefined;
}

/** What one call may bring: the caller's signal and its own budget. */
export interface HttpCallOptions {
  signal?: AbortSignal | undefined;
  /** Replaces the policy's `callTimeoutMs` for this call. */
  timeoutMs?: number | undefined;
}

/** Statuses worth another try besides 5xx: request timeout, conflict, too early, too many requests. */
const RETRYABLE_STATUS = new Set([408, 409, 425, 429]);
const MESSAGE_LIMIT = 300;

class StoppedByCaller extends Error {}
class StoppedByTimeout extends Error {}

/**
 * The one request policy of engram's HTTP clients, the model adapters (whose SDKs' own retries are
 * off) and the embedder alike: tries again on 408, 409, 425, 429, 5xx (Anthropic's 529 included),
 * timed-out tries and network errors, with exponential backoff and Retry-After (`retry-after-ms`,
 * seconds or an HTTP date); never on other 4xx. A call's budget covers every try and wait; a try's
 * budget covers one. An abort stops the call at once, even if the client ignores the signal. Each
 * client's `HttpFailureReport` turns what failed into its own EngramError codes.
 */
export class HttpRequestPolicy {
  readonly maxRetries: number;
  readonly retryBaseDelayMs: number;
  readonly retryMaxDelayMs: number;
  readonly callTimeoutMs: number | undefined;
  readonly attemptTimeoutMs: number | undefined;
  readonly #jitter: 'equal' | 'none';
  readonly #retryAfterBeyondMax: 'fail' | 'wait-max';
  readonly #sleep: (milliseconds: number, signal?: AbortSignal) => Promise<void>;
  readonly #random: () => number;
  readonly #now: () => number;

  constructor(options: HttpRequestPolicyOptions) {
    this.maxRetries = wholeNumber(options.maxRetries, 'maxRetries', 0);
    this.retryBaseDelayMs = wholeNumber(options.retryBaseDelayMs, 'retryBaseDelayMs', 0);
    this.retryMaxDelayMs = wholeNumber(options.retryMaxDelayMs, 'retryMaxDelayMs', 0);
    this.callTimeoutMs =
      options.callTimeoutMs === undefined ? undefined : wholeNumber(options.callTimeoutMs, 'callTimeoutMs', 1);
    this.attemptTimeoutMs =
      options.attemptTimeoutMs === undefined ? undefined : wholeNumber(options.attemptTimeoutMs, 'attemptTimeoutMs', 1);
    this.#jitter = options.jitter ?? 'equal';
    this.#retryAfterBeyondMax = options.retryAfterBeyondMax ?? 'fail';
    this.#sleep = options.sleep ?? abortableSleep;
    this.#random = options.random ?? Math.random;
    this.#now = options.now ?? Date.now;
  }

  /**
   * Runs `attempt` until it succeeds, fails for good, the call's budget runs out or `call.signal`
   * fires. `attempt` gets a signal to hand to its client and the time this try may take. An
   * EngramError thrown by `attempt` passes through untried-again.
   */
  async run<T>(
    attempt: (signal: AbortSignal, remainingMs: number) => Promise<T>,
    call: HttpCallOptions,
    report: HttpFailureReport,
  ): Promise<T> {
    const budget = call.timeoutMs ?? this.callTimeoutMs;
    const deadline = budget === undefined ? undefined : this.#now() + budget;
    for (let tries = 1; ; tries += 1) {
      if (call.signal?.aborted) throw report.aborted(call.signal);
      const remaining = deadline === undefined ? Number.POSITIVE_INFINITY : deadline - this.#now();
      if (remaining <= 0) throw report.timedOut(budget!);
      const tryLimit = Math.min(remaining, this.attemptTimeoutMs ?? Number.POSITIVE_INFINITY);
      let failure: AttemptFailure;
      try {
        return await runOnce(attempt, tryLimit, call.signal);
      } catch (error) {
        if (error instanceof StoppedByCaller) throw report.aborted(call.signal);
        if (error instanceof StoppedByTimeout) {
          // The call's budget ran out, or only this try's: the first ends the call, the second is worth another try.
          if (tryLimit === remaining) throw report.timedOut(budget!);
          failure = { kind: 'timeout', timeoutMs: tryLimit };
        } else if (error instanceof EngramError) {
          throw error;
        } else {
          failure = report.describe(error);
        }
      }
      if (!isRetryable(failure) || tries > this.maxRetries) throw report.failed(failure, { attempts: tries });
      const wait = this.#waitBefore(tries, failure);
      if (typeof wait !== 'number') throw report.failed(failure, { attempts: tries, gaveUp: wait });
      if (deadline !== undefined && wait >= deadline - this.#now()) {
        throw report.failed(failure, { attempts: tries, gaveUp: { reason: 'no-time-left', budgetMs: budget! } });
      }
      try {
        await this.#sleep(wait, call.signal);
      } catch (error) {
        if (call.signal?.aborted) throw report.aborted(call.signal);
        throw error;
      }
    }
  }

  /** The wait before try `tries + 1`: the server's Retry-After when it gave one, else the backoff. */
  #waitBefore(tries: number, failure: AttemptFailure): number | GaveUp {
    const retryAfterMs = failure.kind === 'http' ? readRetryAfter(failure.headers, this.#now()) : undefined;
    if (retryAfterMs === undefined) return this.#backoff(tries - 1);
    if (retryAfterMs <= this.retryMaxDelayMs) return retryAfterMs;
    if (this.#retryAfterBeyondMax === 'wait-max') return this.retryMaxDelayMs;
    return { reason: 'retry-after-too-long', retryAfterMs, retryMaxDelayMs: this.retryMaxDelayMs };
  }

  /** Exponential backoff, with "equal jitter" unless turned off: half the delay fixed, half random. */
  #backoff(retry: number): number {
    const delay = Math.min(this.retryMaxDelayMs, this.retryBaseDelayMs * 2 ** retry);
    return this.#jitter === 'none' ? delay : Math.round(delay / 2 + this.#random() * (delay / 2));
  }
}

async function runOnce<T>(
  attempt: (signal: AbortSignal, remainingMs: number) => Promise<T>,
  limit: number,
  outer: AbortSignal | undefined,
): Promise<T> {
  const controller = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let onAbort: (() => void) | undefined;
  // Settles as soon as the caller aborts or the budget runs out, whatever the client does with its signal.
  const stopped = new Promise<never>((_, reject) => {
    onAbort = () => {
      controller.abort(outer?.reason);
      reject(new StoppedByCaller());
    };
    outer?.addEventListener('abort', onAbort, { once: true });
    if (Number.isFinite(limit)) {
      timer = setTimeout(() => {
        controller.abort(new StoppedByTimeout());
        reject(new StoppedByTimeout());
      }, limit);
    }
  });
  try {
    const pending = attempt(controller.signal, limit);
    pending.catch(() => undefined);
    return await Promise.race([pending, stopped]);
  } catch (error) {
    // The client may report our own abort as its error: say what really happened.
    if (outer?.aborted) throw new StoppedByCaller();
    if (controller.signal.reason instanceof StoppedByTimeout) throw new StoppedByTimeout();
    throw error;
  } finally {
    clearTimeout(timer);
    if (onAbort) outer?.removeEventListener('abort', onAbort);
  }
}

/** Whether another try of a request that answered `status` may succeed. */
export function isRetryableStatus(status: number): boolean {
  return RETRYABLE_STATUS.has(status) || status >= 500;
}

function isRetryable(failure: AttemptFailure): boolean {
  if (failure.kind === 'network' || failure.kind === 'timeout') return true;
  return failure.kind === 'http' && isRetryableStatus(failure.status);
}

/** A sentence saying why the tries ended early, naming the settings of `group` (`model`, `embedding`) to change. */
export function gaveUpNote(gaveUp: GaveUp, group: string): string {
  return gaveUp.reason === 'retry-after-too-long'
    ? `The server asked to wait ${Math.ceil(gaveUp.retryAfterMs / 1000)} s, longer than ${group}.retryMaxDelayMs (${gaveUp.retryMaxDelayMs} ms).`
    : `No time was left for another try within the ${gaveUp.budgetMs} ms budget (${group}.timeoutMs).`;
}

/**
 * A response outside 2xx, thrown by an attempt that calls fetch itself, so the policy sees its
 * status and Retry-After like an SDK's error.
 */
export class HttpStatusError extends Error {
  readonly status: number;
  readonly statusText: string;
  readonly headers: Headers;
  /** The response body as text. */
  readonly body: string;

  constructor(response: { status: number; statusText: string; headers: Headers }, body: string) {
    super(`HTTP ${response.status} ${response.statusText}`.trim());
    this.name = 'HttpStatusError';
    this.status = response.status;
    this.statusText = response.statusText;
    this.headers = response.headers;
    this.body = body;
  }
}

/** Errors outside an SDK's tree: an unreadable body, a connection cut while the body was read. */
export function describeNonSdkError(error: unknown): AttemptFailure {
  if (error instanceof SyntaxError)
    return { kind: 'output', message: `a body that is not valid JSON (${error.message})` };
  if (
    error instanceof TypeError &&
    /terminated|fetch failed|socket|ECONNRESET|other side closed/i.test(
      `${error.message} ${String((error.cause as Error | undefined)?.message ?? '')}`,
    )
  ) {
    return { kind: 'network', message: 'the connection broke while the answer was read', cause: error };
  }
  return { kind: 'other', message: error instanceof Error ? error.message : String(error), cause: error };
}

/** What a connection error came down to: the system error code (ECONNREFUSED …) when there is one. */
export function networkReason(error: unknown): string {
  let cause: unknown = (error as { cause?: unknown } | null)?.cause;
  for (let depth = 0; depth < 4 && cause; depth += 1) {
    const code = (cause as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    cause = (cause as { cause?: unknown }).cause;
  }
  return error instanceof Error ? error.message : String(error);
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
  clean = clean
    .replace(/(bearer\s+)[^\s"',]+/gi, '$1[redacted]')
    .replace(/[\u0000-\u001F\u007F]+/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
  return clean.length > MESSAGE_LIMIT ? `${clean.slice(0, MESSAGE_LIMIT)}…` : clean;
}

function wholeNumber(value: unknown, name: string, minimum: number): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < minimum) {
    throw new EngramError(
      'CONFIG_INVALID',
      `Invalid ${name} ${JSON.stringify(value)} of the HTTP request policy: a whole number of at least ${minimum}.`,
    );
  }
  return value;
}
