import { EngramError, type EngramErrorCode } from '../../kernel/errors.js';
import { DEFAULT_SETTINGS } from '../../kernel/settings.js';
import { checkSetting } from '../../kernel/setting-checks.js';
import {
  HttpRequestPolicy,
  gaveUpNote,
  isRetryableStatus,
  redact,
  type AttemptFailure,
  type HttpFailureReport,
} from '../http/request-policy.js';

/** Retry, backoff and time budget of a model adapter's calls; defaults from the `model.*` settings. */
export interface ModelRetryOptions {
  /** Budget of one generate() call, retries and waits included. */
  timeoutMs?: number;
  /** Retries after 429, 408, 409, 425, 5xx, 529 and network errors. */
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

/**
 * The HTTP request policy of a model adapter: the `model.*` settings (checked against the settings
 * table), one budget for the whole call, equal jitter, and a Retry-After beyond `retryMaxDelayMs`
 * ends the retries. Also returns the budget, which the adapter gives its SDK as an outer bound.
 */
export function modelCallPolicy(options: ModelRetryOptions): { policy: HttpRequestPolicy; timeoutMs: number } {
  const timeoutMs = checkSetting('model.timeoutMs', options.timeoutMs ?? defaults.timeoutMs);
  const policy = new HttpRequestPolicy({
    callTimeoutMs: timeoutMs,
    maxRetries: checkSetting('model.maxRetries', options.maxRetries ?? defaults.maxRetries),
    retryBaseDelayMs: checkSetting('model.retryBaseDelayMs', options.retryBaseDelayMs ?? defaults.retryBaseDelayMs),
    retryMaxDelayMs: checkSetting('model.retryMaxDelayMs', options.retryMaxDelayMs ?? defaults.retryMaxDelayMs),
    jitter: 'equal',
    retryAfterBeyondMax: 'fail',
    sleep: options.sleep,
    random: options.random,
    now: options.now,
  });
  return { policy, timeoutMs };
}

/**
 * How a model call's failures read: an EngramError with a MODEL_* code, a hint naming the setting
 * to change, and no secret in its message. An abort is MODEL_ABORTED; a spent budget MODEL_TIMEOUT.
 */
export function modelFailureReport(context: ModelCallContext): HttpFailureReport {
  return {
    describe: (error) => context.describe(error),
    failed: (failure, { attempts, gaveUp }) => {
      const error = toEngramError(failure, context, attempts);
      if (!gaveUp) return error;
      const details = {
        ...error.details,
        ...(gaveUp.reason === 'retry-after-too-long' && { retryAfterMs: gaveUp.retryAfterMs }),
      };
      return new EngramError(error.code, `${error.message} ${gaveUpNote(gaveUp, 'model')}`, { details });
    },
    aborted: (signal) =>
      new EngramError('MODEL_ABORTED', 'The model call was aborted by its caller; nothing was returned.', {
        cause: signal?.reason,
      }),
    timedOut: (budget) => timedOut(context, budget),
  };
}

/** The MODEL_* code of a failure that will not be retried (again). */
function failureCode(failure: AttemptFailure): EngramErrorCode {
  switch (failure.kind) {
    case 'network':
    case 'other':
      return 'MODEL_UNAVAILABLE';
    case 'timeout':
      return 'MODEL_TIMEOUT';
    case 'output':
      return 'MODEL_OUTPUT_INVALID';
    case 'http':
      if (failure.status === 401 || failure.status === 402 || failure.status === 403) return 'MODEL_AUTH';
      if (failure.status === 429) return 'MODEL_RATE_LIMITED';
      if (isRetryableStatus(failure.status)) return 'MODEL_UNAVAILABLE';
      return 'MODEL_REQUEST_INVALID';
  }
}

function toEngramError(failure: AttemptFailure, context: ModelCallContext, tries: number): EngramError {
  const code = failureCode(failure);
  const clean = (text: string | undefined): string => redact(text ?? '', context.secrets);
  const attempts = tries > 1 ? ` (after ${tries} attempts)` : '';
  switch (failure.kind) {
    case 'network':
      return new EngramError(
        'MODEL_UNAVAILABLE',
        `${context.service} could not be reached${attempts}: ${clean(failure.message)}. Check the base URL (${context.endpointHint}) and the network.`,
        {
          cause: failure.cause,
          details: { attempts: tries },
        },
      );
    case 'timeout':
      // Model calls have one budget for the whole call, so a single try does not time out on its own; kept for completeness.
      return new EngramError(
        'MODEL_TIMEOUT',
        `${context.service} did not answer one try within ${failure.timeoutMs} ms${attempts}.`,
        { details: { timeoutMs: failure.timeoutMs, attempts: tries } },
      );
    case 'output':
      return new EngramError(
        'MODEL_OUTPUT_INVALID',
        `${context.service} answered something engram cannot read: ${clean(failure.message)}`,
        { details: { attempts: tries } },
      );
    case 'other':
      return new EngramError('MODEL_UNAVAILABLE', `${context.service} failed: ${clean(failure.message)}`, {
        details: { attempts: tries },
      });
    case 'http': {
      const what = [failure.status, failure.errorType].filter(Boolean).join(' ');
      const said = clean(failure.message).replace(/[.!\s]+$/, '');
      const details = {
        status: failure.status,
        attempts: tries,
        ...(failure.errorType && { type: failure.errorType }),
        ...(failure.requestId && { requestId: failure.requestId }),
      };
      return new EngramError(
        code,
        `${context.service} answered ${what}${attempts}${said ? `: ${said}` : ''}. ${hintFor(failure.status, code, context)}`.trim(),
        { details },
      );
    }
  }
}

function hintFor(status: number, code: EngramErrorCode, context: ModelCallContext): string {
  if (status === 401) return `Check the API key (${context.keyHint}).`;
  if (status === 402) return 'Check the billing of the account behind the API key.';
  if (status === 403) return `The API key may not use this model or endpoint (${context.keyHint}).`;
  if (status === 404) return `Check the base URL and the model id (${context.endpointHint}).`;
  if (status === 413) return 'The request is too large: send a shorter prompt.';
  if (code === 'MODEL_RATE_LIMITED')
    return 'The provider is rate limiting: try again later, or raise model.maxRetries / model.retryMaxDelayMs.';
  if (code === 'MODEL_UNAVAILABLE') return 'The provider is down or overloaded: try again later.';
  return '';
}

function timedOut(context: ModelCallContext, budget: number): EngramError {
  return new EngramError(
    'MODEL_TIMEOUT',
    `${context.service} did not answer within ${budget} ms. Raise model.timeoutMs (or the request's timeoutMs), or try again later.`,
    {
      details: { timeoutMs: budget },
    },
  );
}
