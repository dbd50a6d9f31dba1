/** Every error engram raises carries a stable string code that surfaces map to exit codes and wire codes. */
export type EngramErrorCode =
  | 'INVALID_INPUT'
  | 'INVALID_SCOPE'
  | 'NOT_FOUND'
  | 'CONFLICT'
  | 'UNDO_CONFLICT'
  | 'PAYLOAD_TOO_LARGE'
  | 'UNAUTHORIZED'
  | 'CONFIRMATION_REQUIRED'
  | 'CONFIG_INVALID'
  | 'STORE_CORRUPT'
  | 'STORE_SCHEMA_NEWER'
  | 'STORE_UNSUPPORTED'
  | 'STORE_ERROR'
  | 'STORE_CLOSED'
  | 'EMBEDDING_FAILED'
  | 'MODEL_ABORTED'
  | 'MODEL_TIMEOUT'
  | 'MODEL_RATE_LIMITED'
  | 'MODEL_UNAVAILABLE'
  | 'MODEL_AUTH'
  | 'MODEL_REQUEST_INVALID'
  | 'MODEL_OUTPUT_INVALID'
  | 'MODEL_NOT_CONFIGURED'
  | 'SANDBOX_DENIED'
  | 'LOCK_TIMEOUT'
  | 'JOB_LEASE_LOST'
  | 'COMPACTION_FAILED'
  | 'COMPACTION_DISABLED'
  | 'CONTEXT_WINDOW_EXCEEDED'
  | 'REMOTE_UNAVAILABLE'
  | 'REMOTE_INVALID'
  | 'INTERNAL';

/**
 * Marks engram's errors by a registry symbol, not by class identity: two installed copies of engram (a
 * library and a plugin each bringing its own) have two EngramError classes, and `instanceof` fails
 * across them while `Symbol.for` is the same key in every copy.
 */
const ENGRAM_ERROR_BRAND: unique symbol = Symbol.for('engram.error');

/** The one error base of engram: a code, a message that says what to do, and an optional cause. */
export class EngramError extends Error {
  readonly code: EngramErrorCode;
  readonly details?: Record<string, unknown>;

  constructor(
    code: EngramErrorCode,
    message: string,
    options?: { cause?: unknown; details?: Record<string, unknown> },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'EngramError';
    this.code = code;
    if (options?.details) this.details = options.details;
  }

  /** On the prototype, so it is neither an own property (equality checks, logs) nor lost by a subclass. */
  get [ENGRAM_ERROR_BRAND](): true {
    return true;
  }
}

/** True for an EngramError of this copy of engram or of any other installed copy (see ENGRAM_ERROR_BRAND). */
export function isEngramError(value: unknown): value is EngramError {
  if (value instanceof EngramError) return true;
  if (typeof value !== 'object' || value === null) return false;
  const branded = value as { [ENGRAM_ERROR_BRAND]?: unknown; code?: unknown };
  return branded[ENGRAM_ERROR_BRAND] === true && typeof branded.code === 'string';
}

/** Error kinds as the surfaces see them: bad input, missing thing, store trouble. */
export type ErrorKind = 'bad-input' | 'not-found' | 'store' | 'conflict' | 'unauthorized' | 'internal';

const kindByCode: Record<EngramErrorCode, ErrorKind> = {
  INVALID_INPUT: 'bad-input',
  INVALID_SCOPE: 'bad-input',
  PAYLOAD_TOO_LARGE: 'bad-input',
  CONFIRMATION_REQUIRED: 'bad-input',
  CONFIG_INVALID: 'bad-input',
  NOT_FOUND: 'not-found',
  CONFLICT: 'conflict',
  UNDO_CONFLICT: 'conflict',
  UNAUTHORIZED: 'unauthorized',
  STORE_CORRUPT: 'store',
  STORE_SCHEMA_NEWER: 'store',
  STORE_UNSUPPORTED: 'store',
  STORE_ERROR: 'store',
  STORE_CLOSED: 'store',
  // The embeddings service failed (down, refused the key, answered nonsense): not the caller's input.
  EMBEDDING_FAILED: 'internal',
  // A model provider failed or answered nonsense: not the caller's input, except a refused request
  // or a missing configuration, which the caller can fix.
  MODEL_ABORTED: 'internal',
  MODEL_TIMEOUT: 'internal',
  MODEL_RATE_LIMITED: 'internal',
  MODEL_UNAVAILABLE: 'internal',
  MODEL_AUTH: 'unauthorized',
  MODEL_REQUEST_INVALID: 'bad-input',
  MODEL_OUTPUT_INVALID: 'internal',
  MODEL_NOT_CONFIGURED: 'bad-input',
  // A sandboxed tool refused a path or command: the request was bad, nothing was changed.
  SANDBOX_DENIED: 'bad-input',
  // Another process held a store lock too long, or took over a job whose lease had run out.
  LOCK_TIMEOUT: 'store',
  JOB_LEASE_LOST: 'conflict',
  // A compaction could not produce a summary (the summarizer failed or answered nothing usable); the
  // messages are unchanged. After enough in a row the circuit breaker turns automatic compaction off.
  COMPACTION_FAILED: 'internal',
  COMPACTION_DISABLED: 'conflict',
  // A session's next request would not fit its context window and compaction could not make room:
  // nothing was sent; compact by hand, lower the output cap, or start a new session.
  CONTEXT_WINDOW_EXCEEDED: 'conflict',
  // A sync remote could not be reached (network, credentials, no such repository): nothing changed;
  // background sync backs off and tries again.
  REMOTE_UNAVAILABLE: 'store',
  // A sync remote holds something engram will not write over (a newer format, not an engram repository).
  REMOTE_INVALID: 'conflict',
  INTERNAL: 'internal',
};

/** The surface kind of an error; a code this copy does not know (an error from a newer copy) is internal. */
export function errorKind(error: unknown): ErrorKind {
  return isEngramError(error) ? (kindByCode[error.code] ?? 'internal') : 'internal';
}
