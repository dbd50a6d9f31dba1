/**
 * The locks role (`store.locks`): named locks shared by every process that uses the store (every
 * machine, for a server store). Optional: without it dedupe on write checks and writes without the
 * cross-process lock (`write-lock-unavailable`), and extraction cannot queue turns.
 */
export interface StoreLocks {
  /**
   * Runs `fn` while holding the lock `name`. Writers that must check-then-write (dedupe on write)
   * hold `memory-write:<scope>`. Waits at most `waitMs` (default 10,000) for the lock, then rejects
   * with LOCK_TIMEOUT; a holder that died releases it (connection closed, or its lease ran out).
   */
  hold<T>(name: string, fn: () => Promise<T>, options?: { waitMs?: number }): Promise<T>;
}
