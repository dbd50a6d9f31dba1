import { checkIdentifier, checkWholeNumber, invalid, MAX_COORDINATION_NAME_LENGTH } from './input-primitives.js';

// The checks every backend applies to lock names and locks.hold, once, so SQLite and Postgres
// refuse the same input with the same message.

/** Longest wait for a lock: an hour. */
export const MAX_LOCK_WAIT_MS = 60 * 60 * 1_000;

/** Checks a lock name (1-500 characters, no control characters). */
export function checkLockName(name: unknown): string {
  return checkIdentifier(name, 'A lock name', MAX_COORDINATION_NAME_LENGTH);
}

/** Checks the arguments of locks.hold; the wait defaults to `defaultWaitMs`. */
export function checkLockRequest(
  name: unknown,
  fn: unknown,
  options: unknown,
  defaultWaitMs: number,
): { name: string; waitMs: number } {
  const checkedName = checkLockName(name);
  if (typeof fn !== 'function') throw invalid('locks.hold runs a function: locks.hold(name, async () => …).');
  if (options !== undefined && (options === null || typeof options !== 'object' || Array.isArray(options))) {
    throw invalid('locks.hold options are an object: { waitMs? }.');
  }
  const waitMs = (options as { waitMs?: unknown } | undefined)?.waitMs ?? defaultWaitMs;
  checkWholeNumber(waitMs, 'waitMs', 0, MAX_LOCK_WAIT_MS);
  return { name: checkedName, waitMs: waitMs as number };
}
