import { isEngramError } from '../kernel/errors.js';
import type { Memory } from '../memory/memory.js';
import type { Scope } from '../memory/scope.js';
import { applyChangeSet } from '../consolidation/change-sets.js';
import {
  conflictId,
  dropConflicts,
  openConflicts,
  removeConflict,
  saveConflict,
  type ConflictRecord,
} from './sync-conflicts.js';
import { sameSyncedState, type SyncedMemory } from './sync-fields.js';
import type { RemoteChangeSet } from './sync-layout.js';
import type { FieldConflict } from './sync-merge.js';
import type { SyncRunInput } from './sync-run-input.js';
import type { SyncProblem } from './sync-state.js';

/**
 * Writing a merge's outcome into this store. Every write is compare-and-set against the state the
 * merge read (`importMany`'s `ifUpdatedAt`, `delete`'s `ifUpdatedAt`): a memory edited here while
 * sync ran is left as the person left it, and the sync says it is incomplete so the next one merges
 * that edit too. A change set that came from another machine's dream is applied as one change set
 * under its own id (`engram undo cs_…` works here too).
 */

export interface LocalWrite {
  synced: SyncedMemory;
  /** The state the merge read here (none: the memory is not here). */
  local?: Memory;
  /** The remote's state, written first when one of its edits lost a conflict (it then stays in history). */
  setAside?: SyncedMemory;
  conflicts: FieldConflict[];
}

export interface LocalPlan {
  writes: LocalWrite[];
  deletes: Memory[];
  purges: Array<{ id: string; scope: Scope }>;
  /** Conflicts whose losing edit is already in this store's history (the local one lost). */
  conflicts: Array<{ memoryId: string; scope: Scope; fields: FieldConflict[] }>;
}

export interface LocalOutcome {
  pulled: { written: number; deleted: number; purged: number; changeSets: number };
  conflicts: ConflictRecord[];
  problems: SyncProblem[];
  complete: boolean;
}

const BATCH = 500;

/** The state to write here: the merged fields, this machine's own recall counts. */
function stateFor(synced: SyncedMemory, local: Memory | undefined): Memory {
  return { ...synced.memory, hitCount: local?.hitCount ?? 0, lastAccessedAt: local?.lastAccessedAt ?? null };
}

export async function applyLocally(
  input: SyncRunInput,
  plan: LocalPlan,
  incomingSets: readonly RemoteChangeSet[],
): Promise<LocalOutcome> {
  const { store, actor } = input;
  const outcome: LocalOutcome = {
    pulled: { written: 0, deleted: 0, purged: 0, changeSets: 0 },
    conflicts: [],
    problems: [],
    complete: true,
  };
  const written: Memory[] = [];
  const nowMs = input.now().getTime();

  // Conflicts the remote's edit lost: its state first (so history keeps it), then the merge.
  for (const write of plan.writes.filter((candidate) => candidate.setAside !== undefined)) {
    const record: ConflictRecord = {
      id: conflictId(nowMs),
      memoryId: write.synced.memory.id,
      scope: write.synced.memory.scope,
      remote: input.route.key,
      detectedAt: input.now().toISOString(),
      fields: write.conflicts,
      status: 'applying',
      pending: {
        expectedUpdatedAt: write.local?.updatedAt ?? '',
        setAside: stateFor(write.setAside!, write.local),
        merged: stateFor(write.synced, write.local),
      },
    };
    await saveConflict(store, record);
    const first = await importOne(input, record.pending!.setAside, write.local?.updatedAt ?? null);
    const second =
      first === 'written' ? await importOne(input, record.pending!.merged, record.pending!.setAside.updatedAt) : first;
    if (second === 'written') {
      written.push(record.pending!.merged);
      outcome.pulled.written += 1;
      const open: ConflictRecord = { ...record, status: 'open' };
      delete open.pending;
      await saveConflict(store, open);
      outcome.conflicts.push(open);
    } else {
      // Edited here meanwhile: nothing written; the next sync merges that edit and finds this again.
      await removeConflict(store, record.memoryId, record.id);
      outcome.complete = false;
      if (second !== 'changed') outcome.problems.push({ subject: record.memoryId, reason: second.problem });
    }
  }

  // A dream's change set from another machine: its memories taken whole from the remote, as one set.
  const plain = plan.writes.filter((write) => write.setAside === undefined);
  const taken = new Set<string>();
  for (const set of incomingSets) {
    const members = plain.filter(
      (write) =>
        write.local !== undefined &&
        set.memories.includes(write.synced.memory.id) &&
        write.synced.memory.updatedAt === set.stampedAt &&
        !taken.has(write.synced.memory.id),
    );
    if (members.length === 0) continue;
    const states = members.map((write) => stateFor(write.synced, write.local));
    try {
      await applyChangeSet(store, {
        states,
        scopes: [...new Set(states.map((state) => state.scope))],
        actor: set.actor,
        stampedAt: set.stampedAt,
        now: nowMs,
        id: set.id,
        ifUpdatedAt: Object.fromEntries(members.map((write) => [write.local!.id, write.local!.updatedAt])),
      });
    } catch (error) {
      if (isEngramError(error) && error.code === 'CONFLICT') continue; // written one by one below
      throw error;
    }
    for (const state of states) taken.add(state.id);
    written.push(...states);
    outcome.pulled.written += states.length;
    outcome.pulled.changeSets += 1;
  }

  const rest = plain.filter((write) => !taken.has(write.synced.memory.id));
  for (let start = 0; start < rest.length; start += BATCH) {
    const batch = rest.slice(start, start + BATCH);
    const states = batch.map((write) => stateFor(write.synced, write.local));
    try {
      await store.importMany(
        states,
        {
          onExisting: 'replace',
          ifUpdatedAt: Object.fromEntries(
            batch.map((write) => [write.synced.memory.id, write.local?.updatedAt ?? null]),
          ),
        },
        { actor },
      );
      written.push(...states);
      outcome.pulled.written += states.length;
      continue;
    } catch (error) {
      if (!isEngramError(error)) throw error;
    }
    // One of the batch was edited here meanwhile, or cannot be stored here: one at a time.
    for (const [index, write] of batch.entries()) {
      const result = await importOne(input, states[index]!, write.local?.updatedAt ?? null);
      if (result === 'written') {
        written.push(states[index]!);
        outcome.pulled.written += 1;
      } else if (result === 'changed') outcome.complete = false;
      else outcome.problems.push({ subject: write.synced.memory.id, reason: result.problem });
    }
  }

  for (const memory of plan.deletes) {
    try {
      await store.delete(memory.id, { actor, ifUpdatedAt: memory.updatedAt });
      outcome.pulled.deleted += 1;
    } catch (error) {
      if (!isEngramError(error)) throw error;
      if (error.code === 'CONFLICT') outcome.complete = false;
      else if (error.code !== 'NOT_FOUND') throw error;
    }
  }

  for (const { id, scope } of plan.purges) {
    try {
      await input.purge(id, scope);
      outcome.pulled.purged += 1;
    } catch (error) {
      if (!(isEngramError(error) && error.code === 'NOT_FOUND')) throw error;
    }
    await dropConflicts(store, id);
  }

  for (const conflict of plan.conflicts) {
    const record: ConflictRecord = {
      id: conflictId(nowMs),
      memoryId: conflict.memoryId,
      scope: conflict.scope,
      remote: input.route.key,
      detectedAt: input.now().toISOString(),
      fields: conflict.fields,
      status: 'open',
    };
    await saveConflict(store, record);
    outcome.conflicts.push(record);
  }

  if (written.length > 0) await input.onWritten?.(written);
  return outcome;
}

/** Writes one memory if it is still as expected: `written`, `changed` (edited meanwhile), or why it cannot be stored here. */
async function importOne(
  input: SyncRunInput,
  state: Memory,
  expected: string | null,
): Promise<'written' | 'changed' | { problem: string }> {
  try {
    await input.store.importMany(
      [state],
      { onExisting: 'replace', ifUpdatedAt: { [state.id]: expected } },
      { actor: input.actor },
    );
    return 'written';
  } catch (error) {
    if (!isEngramError(error)) throw error;
    if (error.code === 'CONFLICT') return 'changed';
    if (error.code === 'INVALID_INPUT' || error.code === 'PAYLOAD_TOO_LARGE' || error.code === 'INVALID_SCOPE')
      return { problem: `cannot be stored here: ${error.message}` };
    throw error;
  }
}

/**
 * Finishes the conflict writes a sync was interrupted between: the remote's state set aside was
 * written but not the merge. A memory edited since is left as it is (the conflict stays listed).
 */
export async function finishInterruptedConflicts(input: SyncRunInput): Promise<void> {
  const { store } = input;
  for (const record of await openConflicts(store)) {
    if (record.status !== 'applying' || record.remote !== input.route.key) continue;
    const pending = record.pending;
    const current = await store.get(record.memoryId);
    if (pending !== undefined && current !== undefined && current.updatedAt === pending.expectedUpdatedAt) {
      // Stopped before either write: the next merge finds the conflict again.
      await removeConflict(store, record.memoryId, record.id);
      continue;
    }
    if (
      pending !== undefined &&
      current !== undefined &&
      current.updatedAt === pending.setAside.updatedAt &&
      sameSyncedState(current, pending.setAside)
    )
      await importOne(
        input,
        { ...pending.merged, hitCount: current.hitCount, lastAccessedAt: current.lastAccessedAt },
        current.updatedAt,
      );
    const open: ConflictRecord = { ...record, status: 'open' };
    delete open.pending;
    await saveConflict(store, open);
  }
}
