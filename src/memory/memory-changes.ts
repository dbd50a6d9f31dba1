import { EngramError } from '../kernel/errors.js';
import type { Memory, MemoryPatch } from './memory.js';
import type { ChangeAction, HistoryEntry } from './memory-history.js';

/**
 * The time to stamp a change of `memory` with: `now`, or 1 ms after its last change when the
 * clock has not moved past it (same millisecond, a clock set back), so `updatedAt` strictly
 * increases with every change and serves as the memory's version (`ChangeContext.ifUpdatedAt`);
 * history times never go back either. For a memory that is gone (undo of a delete), pass the
 * change being undone's time as `updatedAt`.
 */
export function changeTime(memory: Pick<Memory, 'updatedAt'>, now: string): string {
  const last = Date.parse(memory.updatedAt);
  return Date.parse(now) > last ? now : new Date(last + 1).toISOString();
}

/** A memory's new state after a patch; `updatedAt` moves to `now` only if something changed. */
export function applyPatch(memory: Memory, patch: MemoryPatch, now: string): Memory {
  const next: Memory = { ...memory, ...definedFields(patch) };
  return sameMemoryState(memory, next) ? memory : { ...next, updatedAt: now };
}

/** Marks a memory as no longer true from `now`, linking what superseded it. */
export function invalidateMemory(memory: Memory, now: string, supersededBy?: string): Memory {
  if (memory.invalidAt !== null) {
    throw new EngramError('CONFLICT', `Memory ${memory.id} is already invalid since ${memory.invalidAt}.`);
  }
  if (supersededBy === memory.id) {
    throw new EngramError('INVALID_INPUT', 'A memory cannot supersede itself.');
  }
  return { ...memory, invalidAt: now, supersededBy: supersededBy ?? null, updatedAt: now };
}

export function archiveMemory(memory: Memory, now: string): Memory {
  if (memory.archived) throw new EngramError('CONFLICT', `Memory ${memory.id} is already archived.`);
  return { ...memory, archived: true, updatedAt: now };
}

export function restoreMemory(memory: Memory, now: string): Memory {
  if (!memory.archived) throw new EngramError('CONFLICT', `Memory ${memory.id} is not archived.`);
  return { ...memory, archived: false, updatedAt: now };
}

/**
 * Two states of a memory are the same if they differ at most in access bookkeeping (hit count,
 * last accessed), which recall updates without recording history.
 */
export function sameMemoryState(a: Memory, b: Memory): boolean {
  const keys = Object.keys(a) as Array<keyof Memory>;
  if (keys.length !== Object.keys(b).length) return false;
  for (const key of keys) {
    if (key === 'hitCount' || key === 'lastAccessedAt') continue;
    if (JSON.stringify(a[key]) !== JSON.stringify(b[key])) return false;
  }
  return true;
}

/**
 * The action history records when a memory's whole state is replaced (an import with replace, a
 * dream's change set): what actually changed — `invalidate` or `archive` when it was marked so,
 * `restore` when such a mark was lifted, else `update` — so history names a consolidation's
 * invalidations and archives as such.
 */
export function replacementAction(before: Memory, after: Memory): ChangeAction {
  if (before.invalidAt === null && after.invalidAt !== null) return 'invalidate';
  if (!before.archived && after.archived) return 'archive';
  if ((before.archived && !after.archived) || (before.invalidAt !== null && after.invalidAt === null)) return 'restore';
  return 'update';
}

/** What undoing a change does to the store: put a memory back in a given state, or remove it. */
export type UndoPlan =
  | { kind: 'put'; action: ChangeAction; before: Memory | null; after: Memory }
  | { kind: 'remove'; action: 'delete'; before: Memory };

const undoAction: Record<ChangeAction, ChangeAction> = {
  create: 'delete',
  delete: 'create',
  update: 'update',
  invalidate: 'update',
  archive: 'restore',
  restore: 'archive',
  purge: 'purge',
};

/**
 * Plans the undo of one change. The memory must still be in the state the change left it in
 * (later changes must be undone first), so an undo never silently discards newer work.
 */
export function planUndo(entry: HistoryEntry, current: Memory | undefined, now: string): UndoPlan {
  const action = undoAction[entry.action];
  if (entry.action === 'purge')
    throw new EngramError('UNDO_CONFLICT', `Cannot undo ${entry.id}: a purge keeps nothing to bring back.`);
  if (entry.after === null) {
    // The change deleted the memory: bring it back, unless something now holds its id.
    if (current !== undefined) {
      throw new EngramError('UNDO_CONFLICT', `Cannot undo ${entry.id}: memory ${entry.memoryId} exists again.`);
    }
    if (entry.before === null) throw new EngramError('INTERNAL', `History entry ${entry.id} has no state to restore.`);
    return { kind: 'put', action, before: null, after: entry.before };
  }
  if (current === undefined || !sameMemoryState(current, entry.after)) {
    throw new EngramError(
      'UNDO_CONFLICT',
      `Cannot undo ${entry.id}: memory ${entry.memoryId} has changed since. Undo its later changes first (see "engram show ${entry.memoryId}").`,
    );
  }
  if (entry.before === null) return { kind: 'remove', action: 'delete', before: current };
  const restored: Memory = {
    ...entry.before,
    hitCount: current.hitCount,
    lastAccessedAt: current.lastAccessedAt,
    updatedAt: now,
  };
  return { kind: 'put', action, before: current, after: restored };
}

function definedFields(patch: MemoryPatch): Partial<Memory> {
  const out: Partial<Memory> = {};
  for (const [key, value] of Object.entries(patch))
    if (value !== undefined) (out as Record<string, unknown>)[key] = value;
  return out;
}

/** What an import does with a memory whose id may already exist. */
export type ImportAction = 'create' | 'skip' | 'replace';
export type ExistingPolicy = 'skip' | 'replace' | 'fail';

/**
 * Decides one imported memory's fate. An id that exists in another scope is always refused: an
 * import must never reach into a scope it does not name.
 */
export function planImport(
  existing: Memory | undefined,
  incoming: Memory,
  onExisting: ExistingPolicy,
  expected?: Readonly<Record<string, string | null>>,
): ImportAction {
  if (expected !== undefined && Object.hasOwn(expected, incoming.id)) {
    const wanted = expected[incoming.id];
    const found = existing?.updatedAt ?? null;
    if (found !== (wanted ?? null))
      throw new EngramError(
        'CONFLICT',
        `Memory ${incoming.id} changed meanwhile (${found === null ? 'it is gone' : `updated ${found}`}); nothing was imported.`,
      );
  }
  if (existing === undefined) return 'create';
  if (existing.scope !== incoming.scope) {
    throw new EngramError(
      'CONFLICT',
      `Memory id ${incoming.id} already exists in scope ${existing.scope}, not ${incoming.scope}; nothing was imported.`,
    );
  }
  if (onExisting === 'fail')
    throw new EngramError('CONFLICT', `Memory ${incoming.id} already exists; nothing was imported.`);
  if (onExisting === 'skip' || sameMemoryState(existing, incoming)) return 'skip';
  return 'replace';
}
