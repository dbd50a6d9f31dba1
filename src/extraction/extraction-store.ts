import { EngramError } from '../kernel/errors.js';
import type { WarningCode } from '../kernel/warnings.js';
import { hasRoles, missingRoles, type MemoryStore, type StoreWith } from '../contracts/memory-store.js';

/** The store roles extraction runs on besides the ledger: the durable queue, its cursors and progress, and the session lock. */
export const EXTRACTION_ROLES = ['jobs', 'checkpoints', 'locks'] as const;

/** A store with every role extraction runs on. */
export type ExtractionStore = StoreWith<(typeof EXTRACTION_ROLES)[number]>;

/** What extraction answers on a store that lacks one of those roles: no turn can be queued. */
export const EXTRACTION_UNAVAILABLE_WARNING = 'extraction-queue-unavailable' satisfies WarningCode;

/** The store as extraction needs it, or undefined when it lacks a role extraction runs on. */
export function extractionStore(store: MemoryStore): ExtractionStore | undefined {
  return hasRoles(store, EXTRACTION_ROLES) ? store : undefined;
}

/** The store as extraction needs it, or STORE_UNSUPPORTED naming the roles it lacks. */
export function requireExtractionStore(store: MemoryStore): ExtractionStore {
  const found = extractionStore(store);
  if (found) return found;
  throw new EngramError('STORE_UNSUPPORTED', describeUnavailable(store), {
    details: { missing: missingRoles(store, EXTRACTION_ROLES) },
  });
}

/** Says why extraction cannot run on a store: the roles it lacks. */
export function describeUnavailable(store: MemoryStore): string {
  const { backend, location } = store.info();
  const missing = missingRoles(store, EXTRACTION_ROLES).map((role) => `store.${role}`);
  return `The ${backend} store ${location} has no ${missing.join(', ')}: extraction needs a job queue, checkpoints and locks, so turns are not queued. Use a store with every role (SQLite or Postgres).`;
}
