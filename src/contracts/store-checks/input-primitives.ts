import { EngramError } from '../../kernel/errors.js';

// The primitive checks that job, lock and checkpoint input share, with the same messages for each.

/** Longest lock or checkpoint name: room for `memory-write:` and the longest scope. */
export const MAX_COORDINATION_NAME_LENGTH = 500;

/** A non-empty name of at most `maxLength` characters, without control characters. */
export function checkIdentifier(value: unknown, what: string, maxLength: number): string {
  if (typeof value !== 'string' || value.length === 0) throw invalid(`${what} is a non-empty string.`);
  if (value.length > maxLength) throw invalid(`${what} is longer than ${maxLength} characters.`);
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(value)) throw invalid(`${what} may not contain control characters.`);
  return value;
}

/** An ISO-8601 instant as epoch milliseconds. */
export function parseInstant(value: unknown, field: string): number {
  const milliseconds = typeof value === 'string' ? Date.parse(value) : Number.NaN;
  if (Number.isNaN(milliseconds)) throw invalid(`${field} must be an ISO-8601 date-time.`);
  return milliseconds;
}

/** A whole number from `minimum` to `maximum`, inclusive. */
export function checkWholeNumber(value: unknown, field: string, minimum: number, maximum: number): void {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < minimum || value > maximum) {
    throw invalid(`${field} must be a whole number from ${minimum} to ${maximum}.`);
  }
}

/** The INVALID_INPUT error these checks throw. */
export function invalid(message: string): EngramError {
  return new EngramError('INVALID_INPUT', message);
}
