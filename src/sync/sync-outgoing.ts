import type { Memory } from '../memory/memory.js';
import type { MemoryStore } from '../contracts/memory-store.js';
import { isEmptyReport, sanitizeMemoryFields } from '../privacy/memory-privacy.js';
import { changeSetMemoryIds, recentChangeSets } from '../consolidation/change-sets.js';
import {
  changeSetPath,
  memoryPath,
  renderChangeSet,
  renderSyncedMemory,
  renderTombstone,
  tombstonePath,
  type RemoteChangeSet,
} from './sync-layout.js';
import type { MergeOutcome } from './sync-merge.js';
import { remoteSideOf, type Candidate, type RemoteSide } from './sync-sides.js';
import type { SyncProblem } from './sync-state.js';

/**
 * What one sync pushes: from each memory's merge outcome, the files the remote's next commit
 * writes and deletes, and what stays on this machine (the privacy check, a tombstone it cannot
 * verify). Nothing here touches the remote or the store's rows; sync-run.ts commits and pushes.
 */

/** One memory after the three-way merge, with this machine's copy when it has one. */
export interface MergedMemory {
  candidate: Candidate;
  outcome: MergeOutcome;
  local?: Memory;
}

export interface PushedCounts {
  written: number;
  tombstones: number;
  changeSets: number;
}

export interface OutgoingFiles {
  writes: Map<string, string>;
  deletes: string[];
  pushed: PushedCounts;
  heldBack: SyncProblem[];
  /** A purge is pushed: the commit replaces the remote's history. */
  rewrite: boolean;
}

const NOTE_REASONS = {
  'unverified-tombstone':
    'the remote holds a tombstone for it but never held the memory: the tombstone is not applied here',
  'purged-on-remote': 'the remote purged this id before; written here again since, it stays on this machine',
  'restored-missing-file': 'its file was missing on the remote without a tombstone: written back',
} as const;

export async function outgoingFiles(input: {
  store: MemoryStore;
  merged: ReadonlyMap<string, MergedMemory>;
  /** The remote tip's side of each candidate, to skip files it already holds as they are. */
  tipSides: ReadonlyMap<string, RemoteSide>;
  /** Memories this machine's dreams changed since the base: their change sets go along. */
  dream: ReadonlySet<string>;
  now: string;
}): Promise<OutgoingFiles> {
  const heldBack: SyncProblem[] = [];
  const writes = new Map<string, string>();
  const deletes: string[] = [];
  const pushed: PushedCounts = { written: 0, tombstones: 0, changeSets: 0 };
  const pushedStates = new Map<string, Memory>();
  let rewrite = false;
  for (const [id, { candidate, outcome }] of input.merged) {
    if (outcome.note !== undefined && outcome.note !== 'restored-missing-file')
      heldBack.push({ subject: id, reason: NOTE_REASONS[outcome.note] });
    const current = remoteSideOf(input.tipSides, id);
    const action = outcome.remote;
    if (action.kind === 'write') {
      if (!passesPrivacy(action.synced.memory)) {
        heldBack.push({
          subject: id,
          reason: 'the privacy check finds secrets or private text in it: it stays on this machine',
        });
        continue;
      }
      const text = renderSyncedMemory(action.synced);
      if (current.memoryText === text && current.tombstone === undefined) continue;
      writes.set(memoryPath(candidate.scope, id), text);
      if (current.tombstone !== undefined) deletes.push(tombstonePath(candidate.scope, id));
      pushedStates.set(id, action.synced.memory);
      pushed.written += 1;
    } else if (action.kind === 'tombstone') {
      if (current.tombstone === action.tombstone && !current.hasMemoryFile) continue;
      writes.set(
        tombstonePath(candidate.scope, id),
        renderTombstone({ id, scope: candidate.scope, kind: action.tombstone, at: input.now }),
      );
      if (current.hasMemoryFile) deletes.push(memoryPath(candidate.scope, id));
      if (action.tombstone === 'purge') rewrite = true;
      pushed.tombstones += 1;
    }
  }
  if (input.dream.size > 0 && pushedStates.size > 0) {
    for (const set of await outgoingChangeSets(input.store, input.dream, pushedStates)) {
      writes.set(changeSetPath(set.id), renderChangeSet(set));
      pushed.changeSets += 1;
    }
  }
  return { writes, deletes, pushed, heldBack, rewrite };
}

export function commitMessage(machine: string, pushed: PushedCounts, rewrite: boolean): string {
  const parts = [`${pushed.written} memories written`, `${pushed.tombstones} tombstones`];
  if (pushed.changeSets > 0) parts.push(`${pushed.changeSets} change sets`);
  // Ids and counts only: a commit message outlives a purge of the memory it would name.
  const lines = [`engram sync from ${machine.replace(/[^\w .@-]/g, '_').slice(0, 80)}: ${parts.join(', ')}`];
  if (rewrite)
    lines.push('', "History rewritten to this one commit: a purge removed a memory's text from every earlier commit.");
  return `${lines.join('\n')}\n`;
}

/** Whether the privacy layer passes a memory unchanged (no secret, no private or injected block). */
function passesPrivacy(memory: Memory): boolean {
  try {
    return isEmptyReport(sanitizeMemoryFields(memory).report);
  } catch {
    return false;
  }
}

/** The change sets this machine's dreams made, as far as their memories go to this remote now. */
async function outgoingChangeSets(
  store: MemoryStore,
  dream: ReadonlySet<string>,
  pushed: ReadonlyMap<string, Memory>,
): Promise<RemoteChangeSet[]> {
  const sets: RemoteChangeSet[] = [];
  for (const record of await recentChangeSets(store, 50)) {
    if (record.undoneAt !== undefined) continue;
    const ids = (await changeSetMemoryIds(store, record)).filter(
      (id) => dream.has(id) && pushed.get(id)?.updatedAt === record.stampedAt,
    );
    if (ids.length > 0) sets.push({ id: record.id, actor: record.actor, stampedAt: record.stampedAt, memories: ids });
  }
  return sets;
}
