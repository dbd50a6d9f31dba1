import type { ChangeAction } from '../memory/memory-history.js';

/** One recorded change as the feed lists it: which memory, what happened, by whom and when (no content). */
export interface FeedChange {
  memoryId: string;
  /** The history entry's id (`store.getChange` reads it, until a purge removes it). */
  changeId: string;
  action: ChangeAction;
  actor: string;
  at: string;
}

/** One page of the feed and where the next read starts. */
export interface FeedPage {
  changes: FeedChange[];
  /** Pass it to the next `read`: the changes after this page. */
  cursor: string;
  /** True when more changes follow this page now (read again at once). */
  more: boolean;
}

/**
 * The change feed role (`store.changes`): the memories changed since a point, in the order their
 * changes were committed, so work that follows the store (sync) reads what changed instead of every
 * memory. Delivery is at least once: a change may be listed again on a later read, never skipped.
 * Optional: without it sync compares every memory of its scopes, and says so.
 */
export interface ChangeFeed {
  /** A cursor at the end of the feed now: a read from it lists only changes committed later. */
  head(): Promise<string>;
  /**
   * The changes after `cursor`, oldest first, at most `limit` (1-10,000). A cursor this store can no
   * longer serve (another store's, or one a purge of the latest entries made stale) is refused with
   * CONFLICT: start again from `head()` after comparing in full.
   */
  read(cursor: string, limit: number): Promise<FeedPage>;
}
