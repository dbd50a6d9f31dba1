import { isEngramError } from '../kernel/errors.js';
import type { Memory } from '../memory/memory.js';
import type { Scope } from '../memory/scope.js';
import type { MemoryStore } from '../contracts/memory-store.js';
import { DREAM_ACTOR } from '../consolidation/change-sets.js';
import { parseLayoutPath } from './sync-layout.js';
import type { RemoteChange, RemoteEntry, SyncRemote } from './sync-remote.js';
import { routeAccepts, type SyncRoute } from './sync-routing.js';
import type { SyncRunInput } from './sync-run-input.js';
import type { RemoteSyncState } from './sync-state.js';

/**
 * What changed on each side since the base: this store by its change feed (every memory of the
 * route when there is no feed, no cursor or no base), the remote by a git diff of two commits (a
 * listing of both when comparing in full). A sync's cost follows these sets, not the store's size.
 */

const FEED_PAGE = 5_000;
const EXPORT_PAGE = 1_000;

export interface LocalChanges {
  ids: Set<string>;
  /** Memories a dream changed (their change sets travel too). */
  dream: Set<string>;
  cursor?: string;
  full: boolean;
  /** Memories already read (a full comparison reads them all at once). */
  known: Map<string, Memory>;
}

/** What changed on this machine since the last sync: by the change feed, else every memory of the route. */
export async function localChanges(
  input: SyncRunInput,
  state: RemoteSyncState,
  base: string | undefined,
): Promise<LocalChanges> {
  const { store, route } = input;
  const feed = store.changes;
  if (feed && state.cursor !== undefined && base !== undefined) {
    try {
      const ids = new Set<string>();
      const dream = new Set<string>();
      let cursor = state.cursor;
      for (;;) {
        const page = await feed.read(cursor, FEED_PAGE);
        for (const change of page.changes) {
          ids.add(change.memoryId);
          if (change.actor === DREAM_ACTOR) dream.add(change.memoryId);
        }
        cursor = page.cursor;
        if (!page.more) break;
      }
      return { ids, dream, cursor, full: false, known: new Map() };
    } catch (error) {
      // A stale cursor (a purge took the entry it named, a store copied in): compare in full once.
      if (!(isEngramError(error) && error.code === 'CONFLICT')) throw error;
    }
  }
  // The cursor first: a change made while the memories are read is read again next time.
  const cursor = feed ? await feed.head() : undefined;
  const known = new Map<string, Memory>();
  for (const memory of await everyMemory(store, route)) known.set(memory.id, memory);
  return { ids: new Set(known.keys()), dream: new Set(), ...(cursor !== undefined && { cursor }), full: true, known };
}

async function everyMemory(store: MemoryStore, route: SyncRoute): Promise<Memory[]> {
  const out: Memory[] = [];
  if (store.records) {
    let after: string | undefined;
    for (;;) {
      const page = await store.records.exportMemories({ ...(after !== undefined && { after }), limit: EXPORT_PAGE });
      for (const memory of page) if (routeAccepts(route, memory.scope)) out.push(memory);
      if (page.length < EXPORT_PAGE) return out;
      after = page.at(-1)!.id;
    }
  }
  for (const scope of Object.keys((await store.stats()).byScope)) {
    if (!routeAccepts(route, scope)) continue;
    for (let offset = 0; ; offset += EXPORT_PAGE) {
      const page = await store.list({
        scopes: [scope],
        archived: 'include',
        invalid: 'include',
        order: 'created-asc',
        limit: EXPORT_PAGE,
        offset,
      });
      out.push(...page);
      if (page.length < EXPORT_PAGE) break;
    }
  }
  return out;
}

/** The paths that changed on the remote since the base (everything, with no base or a full comparison). */
export async function remoteChanges(
  remote: SyncRemote,
  base: string | undefined,
  tip: string | undefined,
  full: boolean,
): Promise<{ changes: RemoteChange[]; listedTip?: Map<string, RemoteEntry>; listedBase?: Map<string, RemoteEntry> }> {
  if (tip !== undefined && base !== undefined && !full)
    return { changes: tip === base ? [] : await remote.diff(base, tip) };
  const listedTip = tip === undefined ? undefined : byPath(await remote.list(tip));
  const listedBase = base === undefined ? undefined : byPath(await remote.list(base));
  const changes: RemoteChange[] = [];
  for (const entry of listedTip?.values() ?? []) changes.push({ path: entry.path, entry, ...unreadable(entry) });
  // A full comparison also looks at what the base held: a memory deleted here since is in no other list.
  for (const entry of listedBase?.values() ?? [])
    if (!listedTip?.has(entry.path)) changes.push({ path: entry.path, ...unreadable(entry) });
  return { changes, ...(listedTip && { listedTip }), ...(listedBase && { listedBase }) };
}

function unreadable(entry: RemoteEntry): { unreadableName?: true } {
  return entry.unreadableName ? { unreadableName: true } : {};
}

function byPath(entries: readonly RemoteEntry[]): Map<string, RemoteEntry> {
  return new Map(entries.map((entry) => [entry.path, entry]));
}

export async function listing(
  remote: SyncRemote,
  commit: string,
  known: Map<string, RemoteEntry> | undefined,
): Promise<Map<string, RemoteEntry>> {
  return known ?? byPath(await remote.list(commit));
}

/** Memory id → scope, from the memory files and tombstones of some commits. */
export async function scopesOnRemote(
  remote: SyncRemote,
  commits: ReadonlyArray<string | undefined>,
): Promise<Map<string, Scope>> {
  const found = new Map<string, Scope>();
  for (const commit of commits) {
    if (commit === undefined) continue;
    for (const entry of await remote.list(commit)) {
      const parsed = parseLayoutPath(entry.path);
      if ('kind' in parsed && (parsed.kind === 'memory' || parsed.kind === 'tombstone'))
        found.set(parsed.id, parsed.scope);
    }
  }
  return found;
}
