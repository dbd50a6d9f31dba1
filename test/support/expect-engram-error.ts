import { expect } from 'vitest';
import { EngramError, type EngramErrorCode } from '../../src/kernel/errors.js';

/**
 * Asserts that an action (a function, sync or async, or a promise) fails with an EngramError of
 * this code, and returns the error for further checks. Fails the test when it succeeds, or fails
 * with anything else; the assertion message carries the actual error's message.
 */
export async function expectEngramError(
  action: (() => unknown) | Promise<unknown>,
  code: EngramErrorCode,
): Promise<EngramError> {
  try {
    await (typeof action === 'function' ? action() : action);
  } catch (error) {
    return checkedEngramError(error, code);
  }
  return checkedEngramError(NO_ERROR, code);
}

/** {@link expectEngramError} for an action that throws synchronously: returns the error itself, not a promise. */
export function expectEngramErrorSync(action: () => unknown, code: EngramErrorCode): EngramError {
  try {
    action();
  } catch (error) {
    return checkedEngramError(error, code);
  }
  return checkedEngramError(NO_ERROR, code);
}

const NO_ERROR = Symbol('no error');

function checkedEngramError(caught: unknown, code: EngramErrorCode): EngramError {
  expect(caught !== NO_ERROR, `expected EngramError ${code}, but it succeeded`).toBe(true);
  expect(caught, `expected EngramError ${code}`).toBeInstanceOf(EngramError);
  expect((caught as EngramError).code, (caught as Error).message).toBe(code);
  return caught as EngramError;
}
