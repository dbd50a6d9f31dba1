import type { Memory } from '../memory/memory.js';
import { canonicalJson } from '../memory/record-canonical-form.js';
import {
  FIELD_GROUPS,
  groupValue,
  sameGroup,
  sameSyncedState,
  withGroup,
  type FieldGroup,
  type FieldTimes,
  type SyncedMemory,
} from './sync-fields.js';

/**
 * The three-way merge of one memory: its state at the last sync (base), on this machine (local) and
 * on the remote. Both sides' changes since the base apply; edits to different fields both stand; the
 * same field edited on both sides keeps the later edit and lists the other as a conflict; an edit
 * beats a delete; a purge beats everything, and a tombstone for a memory the remote never held
 * changes nothing here. Pure: the caller reads the three states and applies the outcome.
 */

/** One side of a merge. A local `deleted`/`purged` is what this machine's history says happened. */
export type MergeSide =
  { kind: 'memory'; synced: SyncedMemory } | { kind: 'deleted' } | { kind: 'purged' } | { kind: 'absent' };

/** A field edited differently on both sides: which edit recall keeps and which went to history. */
export interface FieldConflict {
  group: FieldGroup;
  kept: 'local' | 'remote';
  keptValue: unknown;
  keptAt: string;
  otherValue: unknown;
  otherAt: string;
}

export type LocalAction =
  | { kind: 'none' }
  | { kind: 'write'; synced: SyncedMemory; setAside?: SyncedMemory }
  | { kind: 'delete' }
  | { kind: 'purge' };

export type RemoteAction =
  { kind: 'none' } | { kind: 'write'; synced: SyncedMemory } | { kind: 'tombstone'; tombstone: 'delete' | 'purge' };

/** Why a memory was left alone on both sides, for the report. */
export type MergeNote = 'unverified-tombstone' | 'purged-on-remote' | 'restored-missing-file';

export interface MergeOutcome {
  local: LocalAction;
  remote: RemoteAction;
  conflicts: FieldConflict[];
  note?: MergeNote;
}

const NONE = { kind: 'none' } as const;

/** Merges one memory; `remote` tombstones arrive as `deleted`/`purged`. */
export function mergeMemory(input: { base: MergeSide; local: MergeSide; remote: MergeSide }): MergeOutcome {
  const { base, local, remote } = input;
  const seen = base.kind !== 'absent';
  if (local.kind === 'purged') {
    if (remote.kind === 'purged') return { local: NONE, remote: NONE, conflicts: [] };
    if (remote.kind !== 'absent' || seen)
      return { local: NONE, remote: { kind: 'tombstone', tombstone: 'purge' }, conflicts: [] };
    return { local: NONE, remote: NONE, conflicts: [] };
  }
  if (remote.kind === 'purged') {
    // A purge the remote cannot show it had reason for (it never held the memory, or it was purged
    // before and has been written here again since) is not applied, and the memory stays here.
    if (local.kind === 'memory' && (base.kind === 'absent' || base.kind === 'purged'))
      return {
        local: NONE,
        remote: NONE,
        conflicts: [],
        note: base.kind === 'absent' ? 'unverified-tombstone' : 'purged-on-remote',
      };
    if (local.kind === 'memory' || local.kind === 'deleted')
      return { local: { kind: 'purge' }, remote: NONE, conflicts: [] };
    return { local: NONE, remote: NONE, conflicts: [] };
  }
  if (local.kind === 'memory') {
    const mine = local.synced;
    if (remote.kind === 'memory') {
      if (base.kind === 'memory') return mergeFields(base.synced, mine, remote.synced);
      return mergeFields(undefined, mine, remote.synced);
    }
    if (remote.kind === 'deleted') {
      if (base.kind === 'memory' && sameSyncedState(mine.memory, base.synced.memory))
        return { local: { kind: 'delete' }, remote: NONE, conflicts: [] };
      // An edit made here since, a delete the remote never showed a reason for: the edit stands.
      return {
        local: NONE,
        remote: { kind: 'write', synced: mine },
        conflicts: [],
        ...(base.kind === 'absent' && { note: 'unverified-tombstone' as const }),
      };
    }
    // The remote has no file: a new memory, or a file someone removed without a tombstone (restored).
    return {
      local: NONE,
      remote: { kind: 'write', synced: mine },
      conflicts: [],
      ...(base.kind === 'memory' && { note: 'restored-missing-file' as const }),
    };
  }
  if (local.kind === 'deleted') {
    if (remote.kind === 'memory') {
      if (base.kind === 'memory' && sameSyncedState(remote.synced.memory, base.synced.memory))
        return { local: NONE, remote: { kind: 'tombstone', tombstone: 'delete' }, conflicts: [] };
      // Edited (or written again) on the remote since this machine deleted it: the edit stands.
      return { local: { kind: 'write', synced: remote.synced }, remote: NONE, conflicts: [] };
    }
    if (remote.kind === 'absent' && base.kind === 'memory')
      return { local: NONE, remote: { kind: 'tombstone', tombstone: 'delete' }, conflicts: [] };
    return { local: NONE, remote: NONE, conflicts: [] };
  }
  // Never on this machine.
  if (remote.kind === 'memory') return { local: { kind: 'write', synced: remote.synced }, remote: NONE, conflicts: [] };
  return { local: NONE, remote: NONE, conflicts: [] };
}

/**
 * Field by field: a field changed on one side only takes that side's value; changed on both to
 * different values, the later edit wins (equal times: the larger value, so every machine decides
 * alike) and the other is a conflict. Without a base every differing field is such a conflict.
 */
function mergeFields(base: SyncedMemory | undefined, local: SyncedMemory, remote: SyncedMemory): MergeOutcome {
  let merged: Memory = { ...local.memory };
  const times = { ...local.fieldTimes } as FieldTimes;
  const conflicts: FieldConflict[] = [];
  let fromRemote = 0;
  let fromLocal = 0;
  for (const group of FIELD_GROUPS) {
    const l = local.memory;
    const r = remote.memory;
    if (sameGroup(l, r, group)) {
      times[group] = later(local.fieldTimes[group], remote.fieldTimes[group]);
      continue;
    }
    const localChanged = base === undefined || !sameGroup(l, base.memory, group);
    const remoteChanged = base === undefined || !sameGroup(r, base.memory, group);
    let take: 'local' | 'remote';
    if (!localChanged) take = 'remote';
    else if (!remoteChanged) take = 'local';
    else {
      take = laterSide(local.fieldTimes[group], remote.fieldTimes[group], groupValue(l, group), groupValue(r, group));
      const kept = take === 'local' ? local : remote;
      const other = take === 'local' ? remote : local;
      conflicts.push({
        group,
        kept: take,
        keptValue: groupValue(kept.memory, group),
        keptAt: kept.fieldTimes[group],
        otherValue: groupValue(other.memory, group),
        otherAt: other.fieldTimes[group],
      });
    }
    if (take === 'remote') {
      merged = withGroup(merged, r, group);
      times[group] = remote.fieldTimes[group];
      fromRemote += 1;
    } else fromLocal += 1;
  }
  const remoteLost = conflicts.some((conflict) => conflict.kept === 'local');
  if (fromRemote === 0 && !remoteLost) {
    // Local holds everything: the remote learns it (unless it already has every field).
    const remoteSame = sameSyncedState(local.memory, remote.memory);
    return {
      local: NONE,
      remote: remoteSame ? NONE : { kind: 'write', synced: { memory: local.memory, fieldTimes: times } },
      conflicts,
    };
  }
  if (fromLocal === 0) {
    const localSame = sameSyncedState(local.memory, remote.memory);
    return { local: localSame ? NONE : { kind: 'write', synced: remote }, remote: NONE, conflicts };
  }
  // A state neither side had, newer than both. When an edit from the remote lost a conflict, the
  // remote's state goes into this memory's history first, so both edits are kept here.
  const updatedAt = new Date(
    Math.max(Date.parse(local.memory.updatedAt), Date.parse(remote.memory.updatedAt)) + 1,
  ).toISOString();
  const synced: SyncedMemory = { memory: { ...merged, updatedAt }, fieldTimes: times };
  return {
    local: { kind: 'write', synced, ...(remoteLost && { setAside: remote }) },
    remote: { kind: 'write', synced },
    conflicts,
  };
}

function later(a: string, b: string): string {
  return Date.parse(a) >= Date.parse(b) ? a : b;
}

function laterSide(localAt: string, remoteAt: string, localValue: unknown, remoteValue: unknown): 'local' | 'remote' {
  const difference = Date.parse(localAt) - Date.parse(remoteAt);
  if (difference !== 0) return difference > 0 ? 'local' : 'remote';
  return canonicalJson(localValue) > canonicalJson(remoteValue) ? 'local' : 'remote';
}
