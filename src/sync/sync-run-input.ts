import type { Memory, MemoryLimits } from '../memory/memory.js';
import type { Scope } from '../memory/scope.js';
import type { MemoryStore } from '../contracts/memory-store.js';
import type { SyncRemote } from './sync-remote.js';
import type { SyncRoute } from './sync-routing.js';

/** What one sync of a store with one remote needs (runSync); the parts of a round read it too. */
export interface SyncRunInput {
  store: MemoryStore;
  remote: SyncRemote;
  route: SyncRoute;
  /** Recorded in history for the changes sync writes. */
  actor: string;
  /** Names this machine in the remote's commits. */
  machine: string;
  now: () => Date;
  limits?: MemoryLimits;
  /** Largest memory file read from the remote. */
  maxFileBytes: number;
  /** Purges a memory with the library's purge (history, jobs and the files' freed pages too). */
  purge: (id: string, scope: Scope) => Promise<void>;
  /** Told the memories sync wrote here (their vectors are computed again). */
  onWritten?: (memories: readonly Memory[]) => Promise<void>;
  /** Pull-merge-push rounds before giving up on a remote others keep pushing to; default 6. */
  maxAttempts?: number;
}
