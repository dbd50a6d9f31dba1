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
  let caught: unknown;
  let threw = false;
  try {
    await (typeof action === 'function' ? action() : action);
  } catch (error) {
    caught = error;
    threw = true;
  }
  expect(threw, `expected EngramError ${code}, but it succeeded`).toBe(true);
  expect(caught, `expected EngramError ${code}`).toBeInstanceOf(EngramError);
  expect((caught as EngramError).code, (caught as Error).message).toBe(code);
  return caught as EngramError;
}
