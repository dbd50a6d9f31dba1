import { EngramError } from '../../kernel/errors.js';

/** The most changes one `changes.read` returns. */
export const MAX_FEED_PAGE = 10_000;

/** Checks the limit of `changes.read`: a whole number from 1 to MAX_FEED_PAGE. */
export function checkFeedLimit(limit: unknown): number {
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > MAX_FEED_PAGE)
    throw new EngramError('INVALID_INPUT', `A change feed page is 1 to ${MAX_FEED_PAGE} changes.`);
  return limit;
}
