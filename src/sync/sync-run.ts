import { EngramError } from '../kernel/errors.js';
import type { Memory } from '../memory/memory.js';
import type { Scope } from '../memory/scope.js';
import { requireRole, type MemoryStore } from '../contracts/memory-store.js';
import { applyLocally, finishInterruptedConflicts, type LocalPlan } from './sync-apply.js';
import { listing, localChanges, remoteChanges, scopesOnRemote } from './sync-changes.js';
import type { ConflictRecord } from './sync-conflicts.js';
import {
  changeSetPath,
  checkFormat,
  FORMAT_FILE,
  MAX_SMALL_FILE_BYTES,
  memoryPath,
  parseChangeSet,
  parseLayoutPath,
  README_FILE,
  README_TEXT,
  renderChangeSet,
  renderFormat,
  renderSyncedMemory,
  renderTombstone,
  tombstonePath,
  type RemoteChangeSet,
} from './sync-layout.js';
import { mergeMemory, type MergeSide } from './sync-merge.js';
import { commitMessage, outgoingFiles, type MergedMemory, type PushedCounts } from './sync-outgoing.js';
import type { RemoteEntry, SyncRemote } from './sync-remote.js';
import { describeRoute, displayRemote, routeAccepts } from './sync-routing.js';
import type { SyncRunInput } from './sync-run-input.js';
import {
  LIST_THRESHOLD,
  lastSyncedState,
  localSynced,
  readLocalSide,
  readRemoteSides,
  remoteSideOf,
  type Candidate,
} from './sync-sides.js';
import { readSyncState, writeSyncState, type RemoteSyncState, type SyncProblem } from './sync-state.js';

/**
 * One sync of a store with one remote: pull, merge, push. Reads what changed on each side since
 * the base (the remote commit this store last agreed with): the store's change feed and a diff of
 * two commits, so its cost follows the changes, not the store's size (without a base or a feed it
 * compares everything, once). Merges each memory three ways (sync-merge.ts), commits the remote's
 * new files on top of the commit it read and pushes only if nobody pushed meanwhile (else it starts
 * over), then writes this store's side, each memory only if it was not edited here meanwhile, and
 * moves the base. A purge rewrites the remote's history to one commit so no earlier commit holds
 * the purged text, and clears the local cache of old copies.
 */

export interface RemoteSyncReport {
  key: string;
  remote: string;
  scopes: string;
  /** The remote's commit after the sync (none: the remote and this store hold nothing to sync). */
  commit?: string;
  /** `changes`: read through the change feed and a diff; `full`: every memory compared (first sync). */
  compared: 'changes' | 'full';
  pulled: { written: number; deleted: number; purged: number; changeSets: number };
  pushed: PushedCounts;
  conflicts: ConflictRecord[];
  /** Memories that stayed on this machine, and why (privacy check, a tombstone it cannot verify…). */
  heldBack: SyncProblem[];
  /** Files of the remote that were not applied, and why. */
  rejected: SyncProblem[];
  /** A purge rewrote the remote's history to one commit. */
  historyRewritten: boolean;
  attempts: number;
  /** False when a memory edited here during the sync kept part of it back: the next sync finishes it. */
  complete: boolean;
}

export async function runSync(input: SyncRunInput): Promise<RemoteSyncReport> {
  requireRole(input.store, 'checkpoints', 'sync');
  await finishInterruptedConflicts(input);
  const maxAttempts = input.maxAttempts ?? 6;
  for (let attempt = 1; attempt <= maxAttempts; attempt += 1) {
    const report = await attemptSync(input, attempt);
    if (report !== undefined) return report;
  }
  throw new EngramError(
    'REMOTE_UNAVAILABLE',
    `Others pushed to ${displayRemote(input.route.url)} during each of ${maxAttempts} attempts; nothing of this machine's was lost. Run engram sync again.`,
  );
}

/** One round; undefined when the push was refused because the remote moved (the caller starts over). */
async function attemptSync(input: SyncRunInput, attempt: number): Promise<RemoteSyncReport | undefined> {
  const { store, remote, route } = input;
  const now = input.now().toISOString();
  const tip = await remote.fetch();
  const state = await readSyncState(store, route.key, route.url);
  // The tip was just fetched into the cache; an older base must still be there.
  const base =
    state.base !== undefined && (state.base === tip || (await remote.has(state.base))) ? state.base : undefined;
  // A tip that is the base was checked when it became the base: a sync where the remote did not move reads nothing of it.
  let tipFiles: Map<string, RemoteEntry> | undefined;
  if (tip !== undefined && tip !== base) {
    tipFiles = await remote.entries(tip, [FORMAT_FILE, README_FILE]);
    checkFormat(await readSmall(remote, tipFiles.get(FORMAT_FILE)));
  }

  const local = await localChanges(input, state, base);
  const remoteSide = await remoteChanges(remote, base, tip, local.full);
  const rejected: SyncProblem[] = [];
  const candidates = new Map<string, Scope>();
  const incomingSets: Array<{ id: string; entry: RemoteEntry }> = [];
  const examinedPaths = new Set<string>();
  for (const change of remoteSide.changes) {
    examinedPaths.add(change.path);
    if (change.unreadableName) {
      if (change.entry) rejected.push({ subject: change.path, reason: 'the file name is not UTF-8' });
      continue;
    }
    const parsed = parseLayoutPath(change.path);
    if ('rejected' in parsed) {
      if (change.entry) rejected.push({ subject: change.path, reason: parsed.rejected });
      continue;
    }
    if (parsed.kind === 'change-set') {
      if (change.entry) incomingSets.push({ id: parsed.id, entry: change.entry });
      continue;
    }
    if (parsed.kind !== 'memory' && parsed.kind !== 'tombstone') continue;
    if (!routeAccepts(route, parsed.scope)) continue;
    const known = candidates.get(parsed.id);
    if (known !== undefined && known !== parsed.scope) {
      if (change.entry) rejected.push({ subject: change.path, reason: `the id is also on the remote in ${known}` });
      continue;
    }
    candidates.set(parsed.id, parsed.scope);
  }

  // This machine's side: its state, or what became of it. A memory here decides its own scope.
  const localSides = new Map<string, Awaited<ReturnType<typeof readLocalSide>>>();
  const scopeless: string[] = [];
  for (const id of new Set([...local.ids, ...candidates.keys()])) {
    const side = await readLocalSide(store, id, local.known.get(id));
    localSides.set(id, side);
    const scope = side.side === 'memory' ? side.memory.scope : side.side === 'deleted' ? side.scope : undefined;
    if (scope !== undefined) {
      const remoteScope = candidates.get(id);
      if (remoteScope !== undefined && remoteScope !== scope)
        rejected.push({ subject: memoryPath(remoteScope, id), reason: `this machine holds the memory in ${scope}` });
      if (routeAccepts(route, scope)) candidates.set(id, scope);
      else candidates.delete(id);
    } else if (!candidates.has(id) && side.side === 'purged') scopeless.push(id);
  }
  // A purge leaves no scope in history: the remote's files name it.
  if (scopeless.length > 0) {
    const where = await scopesOnRemote(remote, [base, tip]);
    for (const id of scopeless) {
      const scope = where.get(id);
      if (scope !== undefined && routeAccepts(route, scope)) candidates.set(id, scope);
    }
  }

  const list: Candidate[] = [...candidates].map(([id, scope]) => ({ id, scope }));
  const listed = list.length > LIST_THRESHOLD;
  const fileOptions = { maxFileBytes: input.maxFileBytes, ...(input.limits && { limits: input.limits }) };
  const baseSides = await readRemoteSides(remote, base, list, {
    ...fileOptions,
    ...(listed && base !== undefined && { listed: await listing(remote, base, remoteSide.listedBase) }),
  });
  const tipSides = await readRemoteSides(remote, tip, list, {
    ...fileOptions,
    ...(listed && tip !== undefined && { listed: await listing(remote, tip, remoteSide.listedTip) }),
  });
  rejected.push(...tipSides.problems);

  const outcomes = new Map<string, MergedMemory>();
  // A purge the remote shows and the base did not: old copies may still be in the cache (a sync of
  // this machine that pushed the purge and died before it scrubbed, or a purge made elsewhere).
  let purgedSinceBase = false;
  for (const candidate of list) {
    let baseSide = remoteSideOf(baseSides.sides, candidate.id).side;
    const found = localSides.get(candidate.id)!;
    const remoteTip = remoteSideOf(tipSides.sides, candidate.id).side;
    // A tombstone for a memory the base commit lacks: this machine may still have had it from the remote.
    if (
      baseSide.kind === 'absent' &&
      found.side === 'memory' &&
      (remoteTip.kind === 'deleted' || remoteTip.kind === 'purged')
    )
      baseSide = await lastSyncedState(store, candidate.id, input.actor);
    const localSide: MergeSide =
      found.side === 'memory'
        ? { kind: 'memory', synced: await localSynced(store, found.memory, baseSide) }
        : { kind: found.side };
    if (remoteTip.kind === 'purged' && baseSide.kind !== 'purged') purgedSinceBase = true;
    const outcome = mergeMemory({
      base: baseSide,
      local: localSide,
      remote: remoteTip,
    });
    outcomes.set(candidate.id, { candidate, outcome, ...(found.side === 'memory' && { local: found.memory }) });
  }

  // The remote's new files.
  const { writes, deletes, pushed, heldBack, rewrite } = await outgoingFiles({
    store,
    merged: outcomes,
    tipSides: tipSides.sides,
    dream: local.dream,
    now,
  });
  if (writes.size + deletes.length > 0) {
    tipFiles ??= tip === undefined ? new Map() : await remote.entries(tip, [FORMAT_FILE, README_FILE]);
    if (!tipFiles.has(FORMAT_FILE)) writes.set(FORMAT_FILE, renderFormat());
    if (!tipFiles.has(README_FILE)) writes.set(README_FILE, README_TEXT);
  }

  let commit = tip;
  if (writes.size + deletes.length > 0) {
    commit = await remote.commit({
      ...(tip !== undefined && { parent: tip }),
      writes,
      deletes,
      message: commitMessage(input.machine, pushed, rewrite),
      root: rewrite,
    });
    if ((await remote.push(commit, tip)) === 'rejected') return undefined;
  }

  // This store's side, now that the remote holds the merge.
  const incoming = await readIncomingSets(remote, incomingSets, rejected);
  const plan: LocalPlan = { writes: [], deletes: [], purges: [], conflicts: [] };
  for (const [id, { candidate, outcome, local: mine }] of outcomes) {
    const action = outcome.local;
    if (action.kind === 'write')
      plan.writes.push({
        synced: action.synced,
        ...(mine && { local: mine }),
        ...(action.setAside && { setAside: action.setAside }),
        conflicts: outcome.conflicts,
      });
    else if (action.kind === 'delete' && mine) plan.deletes.push(mine);
    else if (action.kind === 'purge') plan.purges.push(candidate);
    if (outcome.conflicts.length > 0 && !(action.kind === 'write' && action.setAside))
      plan.conflicts.push({ memoryId: id, scope: candidate.scope, fields: outcome.conflicts });
  }
  const applied = await applyLocally(input, plan, incoming);
  rejected.push(...applied.problems);
  const remotePurged =
    purgedSinceBase ||
    [...outcomes.values()].some(
      ({ outcome }) =>
        outcome.local.kind === 'purge' || (outcome.remote.kind === 'tombstone' && outcome.remote.tombstone === 'purge'),
    );

  const next: RemoteSyncState = {
    ...state,
    lastAttemptAt: now,
    lastSyncAt: now,
    failures: 0,
    heldBack: [...heldBack, ...state.heldBack.filter((problem) => !candidates.has(problem.subject))],
    rejected: [
      ...rejected,
      ...(local.full ? [] : state.rejected.filter((problem) => !examinedPaths.has(problem.subject))),
    ],
  };
  delete next.lastError;
  delete next.nextAttemptAt;
  next.heldBackCount = next.heldBack.length;
  next.rejectedCount = next.rejected.length;
  if (applied.complete) {
    if (commit !== undefined) {
      if (commit !== state.base) await remote.keep(commit);
      next.base = commit;
    }
    if (local.cursor !== undefined) next.cursor = local.cursor;
  }
  await writeSyncState(store, route.key, next);
  if (rewrite || remotePurged) await remote.scrub();
  return {
    key: route.key,
    remote: displayRemote(route.url),
    scopes: describeRoute(route),
    ...(commit !== undefined && { commit }),
    compared: local.full ? 'full' : 'changes',
    pulled: applied.pulled,
    pushed,
    conflicts: applied.conflicts,
    heldBack,
    rejected,
    historyRewritten: rewrite,
    attempts: attempt,
    complete: applied.complete,
  };
}

async function readSmall(remote: SyncRemote, entry: RemoteEntry | undefined): Promise<string | undefined> {
  if (entry === undefined) return undefined;
  const blob = (await remote.read([entry.object], MAX_SMALL_FILE_BYTES)).get(entry.object);
  if (blob === undefined || 'problem' in blob)
    throw new EngramError(
      'REMOTE_INVALID',
      `The remote's ${entry.path} cannot be read (${blob && 'problem' in blob ? blob.problem : 'missing'}).`,
    );
  return blob.text;
}

async function readIncomingSets(
  remote: SyncRemote,
  files: ReadonlyArray<{ id: string; entry: RemoteEntry }>,
  rejected: SyncProblem[],
): Promise<RemoteChangeSet[]> {
  if (files.length === 0) return [];
  const blobs = await remote.read(
    files.map((file) => file.entry.object),
    MAX_SMALL_FILE_BYTES,
  );
  const sets: RemoteChangeSet[] = [];
  for (const file of files) {
    const blob = blobs.get(file.entry.object);
    try {
      if (blob === undefined || 'problem' in blob)
        throw new Error(blob && 'problem' in blob ? blob.problem : 'missing');
      sets.push(parseChangeSet(blob.text, file.id));
    } catch (error) {
      rejected.push({ subject: changeSetPath(file.id), reason: (error as Error).message });
    }
  }
  return sets;
}
