import type { Memory } from './memory.js';

// What a change to a memory is and how history records it (SPEC §3: every write is recorded and
// can be undone). The shapes live with the memory model, not with the store interface, so the
// memory layer never looks upward at the contracts that implement it.

/** Who or what made a change: recorded in history with every write. */
export interface ChangeContext {
  actor: string;
  /**
   * Applies the change only if the memory's `updatedAt` still equals this (compare-and-set, in
   * the change's own transaction); otherwise CONFLICT and nothing changes. For editors that
   * read a memory, let a person change it, and write it back.
   */
  ifUpdatedAt?: string;
}

// `purge` removes a memory with the content of its history; its own entry carries no content
// (before and after null) and cannot be undone.
export const CHANGE_ACTIONS = ['create', 'update', 'invalidate', 'archive', 'restore', 'delete', 'purge'] as const;
export type ChangeAction = (typeof CHANGE_ACTIONS)[number];

/** One row of the history table: a change to one memory, with its state before and after. */
export interface HistoryEntry {
  id: string;
  memoryId: string;
  action: ChangeAction;
  actor: string;
  at: string;
  before: Memory | null;
  after: Memory | null;
  /** The change this one undid, when it was made by `undo`. */
  undoOf: string | null;
}
