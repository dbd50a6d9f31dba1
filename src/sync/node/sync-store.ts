import { hostname } from 'node:os';
import { EngramError, isEngramError } from '../../kernel/errors.js';
import type { Memory } from '../../memory/memory.js';
import { changeTime } from '../../memory/memory-changes.js';
import type { OpenedEngram } from '../../node/open-engram.js';
import { storeMemoryVectors } from '../../remember/memory-vectors.js';
import { conflictsOf, openConflicts, saveConflict, type ConflictRecord } from '../sync-conflicts.js';
import { runSync, type RemoteSyncReport } from '../sync-run.js';
import { describeRoute, displayRemote, type SyncRoute } from '../sync-routing.js';
import { readSyncState, writeSyncState, type RemoteSyncState } from '../sync-state.js';
import { GitSyncRemote } from './git-sync-remote.js';
import { cacheDirectory, resolveRoutes } from './sync-routes.js';

/**
 * The library's sync: `syncStore` pulls, merges and pushes every remote this store syncs with;
 * `syncStatus` says how each stands and lists the conflicts to review; `resolveSyncConflict` keeps
 * one side of a conflict. The CLI, the service and the worker call these and print.
 */

/** Recorded in history as the actor of the changes sync writes. */
export const SYNC_ACTOR = 'sync';

export interface SyncOptions {
  opened: OpenedEngram;
  /** A person ran `engram sync` in this project: the team remote its .engram.json names is accepted. */
  acceptProjectRemote?: boolean;
  /** git may ask at the terminal (a person is waiting). */
  interactive?: boolean;
  /** Background: a remote still in its back-off is skipped, and a sync another process runs is not waited for. */
  background?: boolean;
  cwd?: string;
  now?: () => Date;
  signal?: AbortSignal;
  onWarning?: (warning: string) => void;
}

export type RemoteSyncOutcome =
  | { status: 'synced'; key: string; remote: string; scopes: string; report: RemoteSyncReport }
  | {
      status: 'failed';
      key: string;
      remote: string;
      scopes: string;
      error: { code: string; message: string };
      nextAttemptAt?: string;
    }
  | { status: 'busy' | 'waiting'; key: string; remote: string; scopes: string; until?: string };

export interface SyncReport {
  remotes: RemoteSyncOutcome[];
  notices: string[];
}

/**
 * Syncs the store with every remote it has: each under a store lock of its own (one sync per remote
 * at a time, across processes), each failure kept to its remote and recorded with a back-off.
 * CONFIG_INVALID when no remote is configured.
 */
export async function syncStore(options: SyncOptions): Promise<SyncReport> {
  const { opened } = options;
  const now = options.now ?? (() => new Date());
  const { routes, notices } = await resolveRoutes(opened, {
    acceptProjectRemote: options.acceptProjectRemote === true,
    cwd: options.cwd ?? process.cwd(),
    now,
  });
  if (routes.length === 0)
    throw new EngramError(
      'CONFIG_INVALID',
      'No sync remote: run "engram sync --remote <git url>" once (a private repository, a bare repository on a NAS, a folder), or name a team remote in the project\'s .engram.json (sync.projectRemote).',
    );
  const remotes: RemoteSyncOutcome[] = [];
  for (const route of routes) remotes.push(await syncRoute(options, route, now));
  return { remotes, notices };
}

async function syncRoute(options: SyncOptions, route: SyncRoute, now: () => Date): Promise<RemoteSyncOutcome> {
  const { opened } = options;
  const { engram, loaded } = opened;
  const store = engram.store;
  const named = { key: route.key, remote: displayRemote(route.url), scopes: describeRoute(route) };
  const settings = loaded.settings.sync;
  const run = async (): Promise<RemoteSyncOutcome> => {
    const before = await readSyncState(store, route.key, route.url);
    if (options.background && before.nextAttemptAt !== undefined && Date.parse(before.nextAttemptAt) > now().getTime())
      return { status: 'waiting', ...named, until: before.nextAttemptAt };
    const remote = new GitSyncRemote({
      directory: cacheDirectory(loaded.home, loaded.settings.store.url, route),
      url: route.url,
      branch: settings.branch,
      timeoutMs: settings.timeoutMs,
      machine: settings.machineName || hostname(),
      now,
      ...(options.interactive && { interactive: true }),
      ...(options.signal && { signal: options.signal }),
    });
    try {
      await remote.open();
      const report = await runSync({
        store,
        remote,
        route,
        actor: SYNC_ACTOR,
        machine: settings.machineName || hostname(),
        now,
        limits: loaded.settings.memory,
        maxFileBytes: settings.maxFileBytes,
        purge: async (id, scope) => void (await engram.purge(id, { actor: SYNC_ACTOR, scopes: [scope] })),
        onWritten: (memories) => storeVectors(opened, memories, options.onWarning),
      });
      // Only a sync that brought or made commits adds objects to the cache.
      if (report.commit !== before.base) await remote.maintain().catch(() => undefined);
      return { status: 'synced', ...named, report };
    } catch (error) {
      const failed = await recordFailure(opened, route, error, now);
      if (
        !isEngramError(error) ||
        !['REMOTE_UNAVAILABLE', 'REMOTE_INVALID', 'CONFIG_INVALID', 'STORE_ERROR'].includes(error.code)
      )
        throw error;
      return {
        status: 'failed',
        ...named,
        error: { code: error.code, message: error.message },
        ...(failed.nextAttemptAt !== undefined && { nextAttemptAt: failed.nextAttemptAt }),
      };
    }
  };
  if (!store.locks) return run();
  try {
    return await store.locks.hold(`sync:${route.key}`, run, { waitMs: options.background ? 0 : 60_000 });
  } catch (error) {
    if (isEngramError(error) && error.code === 'LOCK_TIMEOUT') return { status: 'busy', ...named };
    throw error;
  }
}

/** Notes a failed attempt: the error, and when background sync may try again (doubling, capped). */
async function recordFailure(
  opened: OpenedEngram,
  route: SyncRoute,
  error: unknown,
  now: () => Date,
): Promise<RemoteSyncState> {
  const store = opened.engram.store;
  const settings = opened.loaded.settings.sync;
  const state = await readSyncState(store, route.key, route.url);
  const failures = state.failures + 1;
  const waitMs = Math.min(
    settings.retryMaxMinutes * 60_000,
    settings.retryMinSeconds * 1000 * 2 ** Math.min(failures - 1, 20),
  );
  const at = now();
  const next: RemoteSyncState = {
    ...state,
    failures,
    lastAttemptAt: at.toISOString(),
    nextAttemptAt: new Date(at.getTime() + waitMs).toISOString(),
    lastError: {
      code: isEngramError(error) ? error.code : 'INTERNAL',
      message: error instanceof Error ? error.message : String(error),
      at: at.toISOString(),
    },
  };
  await writeSyncState(store, route.key, next).catch(() => undefined);
  return next;
}

/** Vectors of the memories sync wrote (their text may have changed); a failure is a warning, reindex fills it. */
async function storeVectors(
  opened: OpenedEngram,
  memories: readonly Memory[],
  onWarning?: (warning: string) => void,
): Promise<void> {
  const { embedder, store } = opened.engram;
  if (!embedder || !store.vectors || memories.length === 0) return;
  try {
    const result = await storeMemoryVectors({ vectors: store.vectors, embedder }, memories);
    for (const warning of result.warnings) onWarning?.(`${warning}: run "engram reindex" later.`);
  } catch (error) {
    onWarning?.(`vectors-not-stored: ${(error as Error).message}; run "engram reindex" later.`);
  }
}

export interface RemoteStatus {
  key: string;
  remote: string;
  kind: 'personal' | 'team';
  scopes: string;
  lastSyncAt?: string;
  lastAttemptAt?: string;
  lastError?: RemoteSyncState['lastError'];
  failures: number;
  nextAttemptAt?: string;
  base?: string;
  /** Changes made here since the last sync (counted up to 10,000); undefined without a change feed or a first sync. */
  changesSinceSync?: number;
  heldBack: RemoteSyncState['heldBack'];
  heldBackCount: number;
  rejected: RemoteSyncState['rejected'];
  rejectedCount: number;
}

export interface SyncStatus {
  configured: boolean;
  remotes: RemoteStatus[];
  /** Conflicts to review, oldest first. */
  conflicts: ConflictRecord[];
  notices: string[];
}

const STATUS_COUNT_LIMIT = 10_000;

/** How each remote stands and the conflicts to review: the one call `engram sync status` and the service use. */
export async function syncStatus(options: {
  opened: OpenedEngram;
  cwd?: string;
  now?: () => Date;
}): Promise<SyncStatus> {
  const { opened } = options;
  const store = opened.engram.store;
  const { routes, notices } = await resolveRoutes(opened, {
    acceptProjectRemote: false,
    cwd: options.cwd ?? process.cwd(),
    now: options.now ?? (() => new Date()),
  });
  const remotes: RemoteStatus[] = [];
  for (const route of routes) {
    const state = await readSyncState(store, route.key, route.url);
    const status: RemoteStatus = {
      key: route.key,
      remote: displayRemote(route.url),
      kind: route.kind,
      scopes: describeRoute(route),
      failures: state.failures,
      heldBack: state.heldBack,
      heldBackCount: state.heldBackCount,
      rejected: state.rejected,
      rejectedCount: state.rejectedCount,
      ...(state.lastSyncAt !== undefined && { lastSyncAt: state.lastSyncAt }),
      ...(state.lastAttemptAt !== undefined && { lastAttemptAt: state.lastAttemptAt }),
      ...(state.lastError !== undefined && { lastError: state.lastError }),
      ...(state.nextAttemptAt !== undefined && { nextAttemptAt: state.nextAttemptAt }),
      ...(state.base !== undefined && { base: state.base }),
    };
    const changes = await changesSince(opened, state.cursor);
    if (changes !== undefined) status.changesSinceSync = changes;
    remotes.push(status);
  }
  const conflicts = (await openConflicts(store)).map(({ pending: _pending, ...record }) => record);
  return { configured: routes.length > 0, remotes, conflicts, notices };
}

async function changesSince(opened: OpenedEngram, cursor: string | undefined): Promise<number | undefined> {
  const feed = opened.engram.store.changes;
  if (!feed || cursor === undefined) return undefined;
  try {
    const ids = new Set<string>();
    let at = cursor;
    while (ids.size < STATUS_COUNT_LIMIT) {
      const page = await feed.read(at, 1_000);
      for (const change of page.changes) if (change.actor !== SYNC_ACTOR) ids.add(change.memoryId);
      at = page.cursor;
      if (!page.more) break;
    }
    return ids.size;
  } catch {
    return undefined;
  }
}

export interface ConflictResolution {
  memoryId: string;
  kept: 'kept' | 'other';
  /** The history entry of the write (`engram undo <changeId>` reverts it); none when the kept side stayed. */
  changeId?: string;
  resolved: string[];
}

/**
 * Resolves the open conflicts of a memory: `kept` leaves recall's value, `other` writes the value
 * that lost back (a change recorded in history, undoable, that the next sync sends everywhere).
 * NOT_FOUND when the memory has no open conflict; CONFLICT when it changes while being resolved.
 */
export async function resolveSyncConflict(options: {
  opened: OpenedEngram;
  memoryId: string;
  keep: 'kept' | 'other';
  actor?: string;
  now?: () => Date;
}): Promise<ConflictResolution> {
  const { opened, memoryId, keep } = options;
  const store = opened.engram.store;
  const now = options.now ?? (() => new Date());
  if (keep !== 'kept' && keep !== 'other')
    throw new EngramError('INVALID_INPUT', 'Keep "kept" (what recall has now) or "other" (the edit that lost).');
  const open = (await conflictsOf(store, memoryId)).filter((record) => record.status !== 'resolved');
  if (open.length === 0)
    throw new EngramError(
      'NOT_FOUND',
      `No open sync conflict for ${JSON.stringify(String(memoryId).slice(0, 140))}; "engram sync status" lists them.`,
    );
  const current = await store.get(memoryId);
  let changeId: string | undefined;
  if (keep === 'other' && current !== undefined) {
    let state: Memory = { ...current };
    for (const record of open)
      for (const field of record.fields) {
        if (field.group === 'validity') {
          const value = field.otherValue as { invalidAt: string | null; supersededBy: string | null };
          state = { ...state, invalidAt: value.invalidAt, supersededBy: value.supersededBy };
        } else state = { ...state, [field.group]: field.otherValue };
      }
    state.updatedAt = changeTime(current, now().toISOString());
    await store.importMany(
      [state],
      { onExisting: 'replace', ifUpdatedAt: { [memoryId]: current.updatedAt } },
      { actor: options.actor ?? 'sync-resolve' },
    );
    changeId = (await store.history(memoryId)).at(-1)?.id;
    await storeVectors(opened, [state]);
  }
  const at = now().toISOString();
  for (const record of open)
    await saveConflict(store, {
      ...record,
      status: 'resolved',
      resolution: { kept: keep, at, ...(changeId !== undefined && { changeId }) },
    });
  return {
    memoryId,
    kept: keep,
    ...(changeId !== undefined && { changeId }),
    resolved: open.map((record) => record.id),
  };
}
