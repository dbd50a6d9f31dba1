import { EngramError } from '../kernel/errors.js';

/** Refusal of a sandboxed request: SANDBOX_DENIED with a message that says what is allowed. */
export function sandboxDenied(message: string): EngramError {
  return new EngramError('SANDBOX_DENIED', message);
}
