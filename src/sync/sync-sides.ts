import { isEngramError } from '../kernel/errors.js';
import type { Memory, MemoryLimits } from '../memory/memory.js';
import type { Scope } from '../memory/scope.js';
import type { MemoryStore } from '../contracts/memory-store.js';
import {
  FIELD_GROUPS,
  fieldTimesFromHistory,
  sameGroup,
  sameSyncedState,
  uniformTimes,
  type SyncedMemory,
} from './sync-fields.js';
import { memoryPath, parseSyncedMemory, parseTombstone, tombstonePath } from './sync-layout.js';
import type { MergeSide } from './sync-merge.js';
import type { RemoteEntry, SyncRemote } from './sync-remote.js';
import type { SyncProblem } from './sync-state.js';

/** A memory sync looks at, in the scope it belongs to. */
export interface Candidate {
  id: string;
  scope: Scope;
}

/** One memory's state in a commit of the remote, with what the file held (to skip rewriting the same bytes). */
export interface RemoteSide {
  side: MergeSide;
  memoryText?: string;
  hasMemoryFile: boolean;
  tombstone?: 'delete' | 'purge';
}

const ABSENT: RemoteSide = { side: { kind: 'absent' }, hasMemoryFile: false };
const FILE_MODES = new Set(['100644', '100755']);
/** Paths asked of `git ls-tree` at once (a command line has a limit). */
const PATHS_PER_CALL = 400;
/** Past this many candidates, a whole listing of the commit is cheaper than asking for each path. */
export const LIST_THRESHOLD = 4_000;

/**
 * Reads the candidates' files in one commit of the remote: a memory file, a tombstone, or nothing.
 * A file that cannot be read (too large, not UTF-8, invalid, a symlink, naming another memory) is
 * a problem, and the memory counts as absent there. `listed` is the commit's whole listing when the
 * caller has it.
 */
export async function readRemoteSides(
  remote: SyncRemote,
  commit: string | undefined,
  candidates: readonly Candidate[],
  options: { maxFileBytes: number; limits?: MemoryLimits; listed?: ReadonlyMap<string, RemoteEntry> },
): Promise<{ sides: Map<string, RemoteSide>; problems: SyncProblem[] }> {
  const sides = new Map<string, RemoteSide>();
  const problems: SyncProblem[] = [];
  if (commit === undefined || candidates.length === 0) return { sides, problems };
  const paths = candidates.flatMap((candidate) => [
    memoryPath(candidate.scope, candidate.id),
    tombstonePath(candidate.scope, candidate.id),
  ]);
  let entries: ReadonlyMap<string, RemoteEntry>;
  if (options.listed) entries = options.listed;
  else {
    const found = new Map<string, RemoteEntry>();
    for (let start = 0; start < paths.length; start += PATHS_PER_CALL)
      for (const [path, entry] of await remote.entries(commit, paths.slice(start, start + PATHS_PER_CALL)))
        found.set(path, entry);
    entries = found;
  }
  const wanted: RemoteEntry[] = [];
  for (const path of paths) {
    const entry = entries.get(path);
    if (!entry) continue;
    if (!FILE_MODES.has(entry.mode)) {
      problems.push({ subject: path, reason: entry.mode === '120000' ? 'a symlink, not a file' : 'not a file' });
      continue;
    }
    wanted.push(entry);
  }
  const blobs = await remote.read([...new Set(wanted.map((entry) => entry.object))], options.maxFileBytes);
  const textOf = (path: string): string | undefined => {
    const entry = entries.get(path);
    if (!entry || !FILE_MODES.has(entry.mode)) return undefined;
    const blob = blobs.get(entry.object);
    if (blob === undefined) return undefined;
    if ('problem' in blob) {
      problems.push({ subject: path, reason: blob.problem });
      return undefined;
    }
    return blob.text;
  };
  for (const candidate of candidates) {
    const filePath = memoryPath(candidate.scope, candidate.id);
    const stonePath = tombstonePath(candidate.scope, candidate.id);
    const memoryText = textOf(filePath);
    const stoneText = textOf(stonePath);
    let synced: SyncedMemory | undefined;
    let tombstone: 'delete' | 'purge' | undefined;
    if (memoryText !== undefined) {
      try {
        synced = parseSyncedMemory(memoryText, candidate, options.limits);
      } catch (error) {
        problems.push({ subject: filePath, reason: describe(error) });
      }
    }
    if (stoneText !== undefined) {
      try {
        tombstone = parseTombstone(stoneText, candidate).kind;
      } catch (error) {
        problems.push({ subject: stonePath, reason: describe(error) });
      }
    }
    // Both at once only from a hand edit or a hostile remote: a purge still wins, else the memory does.
    const side: MergeSide =
      tombstone === 'purge'
        ? { kind: 'purged' }
        : synced
          ? { kind: 'memory', synced }
          : tombstone === 'delete'
            ? { kind: 'deleted' }
            : { kind: 'absent' };
    sides.set(candidate.id, {
      side,
      hasMemoryFile: entries.has(filePath),
      ...(memoryText !== undefined && { memoryText }),
      ...(tombstone !== undefined && { tombstone }),
    });
  }
  return { sides, problems };
}

export function remoteSideOf(sides: ReadonlyMap<string, RemoteSide>, id: string): RemoteSide {
  return sides.get(id) ?? ABSENT;
}

/** This machine's side of a memory: its state, else what its history says became of it. */
export async function readLocalSide(
  store: MemoryStore,
  id: string,
  known?: Memory,
): Promise<{ side: 'memory'; memory: Memory } | { side: 'deleted'; scope?: Scope } | { side: 'purged' | 'absent' }> {
  const memory = known ?? (await store.get(id));
  if (memory) return { side: 'memory', memory };
  const history = await store.history(id);
  const last = history.at(-1);
  if (last === undefined) return { side: 'absent' };
  if (last.action === 'purge') return { side: 'purged' };
  const scope = last.before?.scope ?? last.after?.scope;
  return scope === undefined ? { side: 'deleted' } : { side: 'deleted', scope };
}

/**
 * The last state of a memory that sync itself wrote here, as a base for that memory when the base
 * commit does not hold it: every state sync writes was on the remote (pulled from it, or pushed
 * before it was written here), so a sync stopped before it recorded its base still knows the
 * remote held the memory, and a tombstone for it is one the remote had reason for.
 */
export async function lastSyncedState(store: MemoryStore, id: string, actor: string): Promise<MergeSide> {
  const history = await store.history(id);
  for (let index = history.length - 1; index >= 0; index -= 1) {
    const entry = history[index]!;
    if (entry.actor !== actor) continue;
    if (entry.after === null) return { kind: 'absent' };
    return { kind: 'memory', synced: { memory: entry.after, fieldTimes: uniformTimes(entry.after.updatedAt) } };
  }
  return { kind: 'absent' };
}

/**
 * A local memory with when each field was last edited: a field as it was at the base keeps the
 * base's time; one changed here since has its time from this machine's history.
 */
export async function localSynced(store: MemoryStore, memory: Memory, base: MergeSide): Promise<SyncedMemory> {
  if (base.kind === 'memory' && sameSyncedState(memory, base.synced.memory))
    return { memory, fieldTimes: base.synced.fieldTimes };
  const times =
    memory.updatedAt === memory.createdAt
      ? uniformTimes(memory.createdAt)
      : fieldTimesFromHistory(memory, await store.history(memory.id));
  if (base.kind === 'memory')
    for (const group of FIELD_GROUPS)
      if (sameGroup(memory, base.synced.memory, group)) times[group] = base.synced.fieldTimes[group];
  return { memory, fieldTimes: times };
}

function describe(error: unknown): string {
  return isEngramError(error) ? error.message : error instanceof Error ? error.message : String(error);
}
