import { EngramError } from '../kernel/errors.js';
import { createSortableId } from '../kernel/ids.js';
import type { Memory } from '../memory/memory.js';
import type { Scope } from '../memory/scope.js';
import { requireRole, type MemoryStore } from '../contracts/memory-store.js';
import type { FieldConflict } from './sync-merge.js';

/**
 * Conflicts sync found: a field edited differently on two machines. Recall keeps the later edit;
 * the other stays in the memory's history and here, until a person keeps one or the other
 * (`engram sync resolve`). Kept per memory in the store's checkpoints (`sync-conflict:<memory id>/`,
 * a prefix purge can find), with an index of the memories that have open ones.
 */

const PREFIX = 'sync-conflict:';
const INDEX = 'sync-conflicts';
/** Records kept per memory: the open ones and the latest resolved. */
const MAX_RECORDS = 6;

export interface ConflictRecord {
  id: string;
  memoryId: string;
  scope: Scope;
  /** The remote's key (sync-routing.ts remoteKey). */
  remote: string;
  detectedAt: string;
  fields: FieldConflict[];
  /** `applying` while its two writes (the remote's state set aside, then the merge) are under way. */
  status: 'applying' | 'open' | 'resolved';
  /** For `applying`: the writes, so a sync interrupted between them finishes them. */
  pending?: { expectedUpdatedAt: string; setAside: Memory; merged: Memory };
  resolution?: { kept: 'kept' | 'other'; at: string; changeId?: string };
}

interface ConflictFile {
  memoryId: string;
  records: ConflictRecord[];
}

// Ends in "/", which no memory id holds: the name is a prefix of no other memory's.
function key(memoryId: string): string {
  return `${PREFIX}${memoryId}/`;
}

export function conflictId(now: number): string {
  return createSortableId('sc', now);
}

async function readFile(store: MemoryStore, memoryId: string): Promise<{ text?: string; file: ConflictFile }> {
  const text = await requireRole(store, 'checkpoints', 'sync').get(key(memoryId));
  if (text === undefined) return { file: { memoryId, records: [] } };
  try {
    return { text, file: JSON.parse(text) as ConflictFile };
  } catch {
    return { text, file: { memoryId, records: [] } };
  }
}

/** Adds or replaces a record (by id), keeping the file within bounds, and keeps the index in step. */
export async function saveConflict(store: MemoryStore, record: ConflictRecord): Promise<void> {
  const checkpoints = requireRole(store, 'checkpoints', 'sync');
  for (let attempt = 0; attempt < 10; attempt += 1) {
    const { text, file } = await readFile(store, record.memoryId);
    const records = [...file.records.filter((existing) => existing.id !== record.id), record];
    while (records.length > MAX_RECORDS) {
      const resolved = records.findIndex((existing) => existing.status === 'resolved');
      records.splice(resolved === -1 ? 0 : resolved, 1);
    }
    const next = JSON.stringify({ memoryId: record.memoryId, records } satisfies ConflictFile);
    if (await checkpoints.set(key(record.memoryId), next, { expected: text ?? null })) {
      await updateIndex(
        store,
        record.memoryId,
        records.some((existing) => existing.status !== 'resolved'),
      );
      return;
    }
  }
  throw new EngramError(
    'CONFLICT',
    `Could not record the sync conflict of ${record.memoryId}: written by others meanwhile.`,
  );
}

async function updateIndex(store: MemoryStore, memoryId: string, open: boolean): Promise<void> {
  const checkpoints = requireRole(store, 'checkpoints', 'sync');
  for (let attempt = 0; attempt < 10; attempt += 1) {
    const text = await checkpoints.get(INDEX);
    const ids = readIds(text);
    const has = ids.includes(memoryId);
    if (has === open) return;
    const next = open ? [...ids, memoryId] : ids.filter((id) => id !== memoryId);
    if (await checkpoints.set(INDEX, JSON.stringify(next), { expected: text ?? null })) return;
  }
}

function readIds(text: string | undefined): string[] {
  if (text === undefined) return [];
  try {
    const value: unknown = JSON.parse(text);
    return Array.isArray(value) ? value.filter((id): id is string => typeof id === 'string') : [];
  } catch {
    return [];
  }
}

/** The conflict records of a memory, oldest first. */
export async function conflictsOf(store: MemoryStore, memoryId: string): Promise<ConflictRecord[]> {
  return (await readFile(store, memoryId)).file.records;
}

/** Every record not yet resolved (open, or still being applied), in the scopes given, oldest first. */
export async function openConflicts(
  store: MemoryStore,
  options: { scopes?: readonly Scope[]; limit?: number } = {},
): Promise<ConflictRecord[]> {
  if (!store.checkpoints) return [];
  const out: ConflictRecord[] = [];
  for (const memoryId of readIds(await store.checkpoints.get(INDEX))) {
    for (const record of (await readFile(store, memoryId)).file.records) {
      if (record.status === 'resolved') continue;
      if (options.scopes !== undefined && !options.scopes.includes(record.scope)) continue;
      out.push(record);
    }
    if (options.limit !== undefined && out.length >= options.limit) break;
  }
  return out.sort((a, b) => (a.id < b.id ? -1 : 1)).slice(0, options.limit);
}

/** Removes every conflict record of a memory (it was purged: the records held its text). */
export async function dropConflicts(store: MemoryStore, memoryId: string): Promise<void> {
  const checkpoints = requireRole(store, 'checkpoints', 'sync');
  await checkpoints.delete({ prefix: key(memoryId), updatedBefore: '9999-12-31T23:59:59.999Z' });
  await updateIndex(store, memoryId, false);
}

/** Removes one record (a conflict whose writes never happened: the next merge finds it again). */
export async function removeConflict(store: MemoryStore, memoryId: string, recordId: string): Promise<void> {
  const checkpoints = requireRole(store, 'checkpoints', 'sync');
  for (let attempt = 0; attempt < 10; attempt += 1) {
    const { text, file } = await readFile(store, memoryId);
    const records = file.records.filter((record) => record.id !== recordId);
    if (records.length === file.records.length) return;
    if (
      await checkpoints.set(key(memoryId), JSON.stringify({ memoryId, records } satisfies ConflictFile), {
        expected: text ?? null,
      })
    ) {
      await updateIndex(
        store,
        memoryId,
        records.some((record) => record.status !== 'resolved'),
      );
      return;
    }
  }
}
