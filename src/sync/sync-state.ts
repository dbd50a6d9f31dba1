import { requireRole, type MemoryStore } from '../contracts/memory-store.js';
import type { Scope } from '../memory/scope.js';

/**
 * What sync remembers in the store (its checkpoints), per remote: where the last sync left the store
 * (the change feed's cursor) and the remote (the base commit both sides agreed on), how the last
 * attempt went, and what was held back or refused. Kept in the store, so a store copied or migrated
 * carries it and a store replaced starts over with a full comparison.
 */

const STATE_PREFIX = 'sync:remote:';
const PROJECTS = 'sync:projects';
/** How many held-back memories and refused remote files are kept by name (the count is kept whole). */
export const MAX_LISTED = 100;

export interface SyncProblem {
  /** A memory id, or a path on the remote. */
  subject: string;
  reason: string;
}

export interface RemoteSyncState {
  url: string;
  /** The change feed's cursor after the last complete sync. */
  cursor?: string;
  /** The remote commit whose files this store holds (the three-way merge's base). */
  base?: string;
  lastSyncAt?: string;
  lastAttemptAt?: string;
  lastError?: { code: string; message: string; at: string };
  /** Failed attempts in a row: background sync waits longer after each. */
  failures: number;
  /** When background sync may try again (after a failure). */
  nextAttemptAt?: string;
  heldBack: SyncProblem[];
  heldBackCount: number;
  rejected: SyncProblem[];
  rejectedCount: number;
}

export function emptyState(url: string): RemoteSyncState {
  return { url, failures: 0, heldBack: [], heldBackCount: 0, rejected: [], rejectedCount: 0 };
}

export async function readSyncState(store: MemoryStore, key: string, url: string): Promise<RemoteSyncState> {
  const text = await requireRole(store, 'checkpoints', 'sync').get(`${STATE_PREFIX}${key}`);
  if (text === undefined) return emptyState(url);
  try {
    const value = JSON.parse(text) as RemoteSyncState;
    return { ...emptyState(url), ...value, url };
  } catch {
    return emptyState(url);
  }
}

export async function writeSyncState(store: MemoryStore, key: string, state: RemoteSyncState): Promise<void> {
  const kept: RemoteSyncState = {
    ...state,
    heldBack: state.heldBack.slice(0, MAX_LISTED),
    rejected: state.rejected.slice(0, MAX_LISTED),
  };
  await requireRole(store, 'checkpoints', 'sync').set(`${STATE_PREFIX}${key}`, JSON.stringify(kept));
}

/** Every remote this store has synced with, by key. */
export async function readSyncStates(
  store: MemoryStore,
  keys: readonly string[],
): Promise<Array<{ key: string; state: RemoteSyncState | undefined }>> {
  const checkpoints = requireRole(store, 'checkpoints', 'sync');
  const out: Array<{ key: string; state: RemoteSyncState | undefined }> = [];
  for (const key of keys) {
    const text = await checkpoints.get(`${STATE_PREFIX}${key}`);
    out.push({ key, state: text === undefined ? undefined : (JSON.parse(text) as RemoteSyncState) });
  }
  return out;
}

/** The team remotes this machine accepted, by project scope: what background sync may use. */
export async function readProjectRemotes(store: MemoryStore): Promise<Record<Scope, string>> {
  const text = await requireRole(store, 'checkpoints', 'sync').get(PROJECTS);
  if (text === undefined) return {};
  try {
    const value = JSON.parse(text) as Record<Scope, { url: string }>;
    return Object.fromEntries(Object.entries(value).map(([scope, entry]) => [scope, entry.url]));
  } catch {
    return {};
  }
}

/** Records that this machine syncs a project through `url` (its team's choice); returns the URL it replaced. */
export async function acceptProjectRemote(
  store: MemoryStore,
  scope: Scope,
  url: string,
  at: string,
): Promise<{ previous?: string }> {
  const checkpoints = requireRole(store, 'checkpoints', 'sync');
  for (let attempt = 0; attempt < 10; attempt += 1) {
    const text = await checkpoints.get(PROJECTS);
    const value = text === undefined ? {} : (JSON.parse(text) as Record<Scope, { url: string; acceptedAt: string }>);
    const previous = value[scope]?.url;
    if (previous === url) return { previous };
    value[scope] = { url, acceptedAt: at };
    if (await checkpoints.set(PROJECTS, JSON.stringify(value), { expected: text ?? null }))
      return previous === undefined ? {} : { previous };
  }
  return {};
}
