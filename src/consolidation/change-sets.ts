import type { WarningCode } from '../kernel/warnings.js';
import { EngramError } from '../kernel/errors.js';
import { createSortableId } from '../kernel/ids.js';
import type { Memory } from '../memory/memory.js';
import type { HistoryEntry } from '../memory/memory-history.js';
import type { Scope } from '../memory/scope.js';
import { sameMemoryState } from '../memory/memory-changes.js';
import { requireRole, type MemoryStore } from '../contracts/memory-store.js';
import type { Embedder } from '../contracts/embedder.js';
import { storeMemoryVectors } from '../remember/memory-vectors.js';

/**
 * Change sets: many changes written as one (one transaction) and reverted as one. The store's
 * history keeps each memory's change as usual (actor, before, after); the change set is a
 * checkpoint naming its memories and the one time their new states carry, written before the
 * changes so that even a process killed right after them leaves a set `engram undo` can find.
 */

/** The actor a consolidation's changes are recorded with. */
export const DREAM_ACTOR = 'dream';

const PREFIX = 'change-set:';
/** The ids of the latest change sets, oldest first: what the viewer's Activity lists (checkpoints cannot be listed). */
const INDEX = 'change-sets';
const INDEX_MAX = 500;
const IDS_PER_PART = 4_000;
const CHANGE_SET_ID = /^cs_[0-9a-z]{22}$/;

/** What a change set checkpoint holds. */
export interface ChangeSetRecord {
  id: string;
  actor: string;
  /** The `updatedAt` every memory of the set has after it: how its history entries are found. */
  stampedAt: string;
  scopes: Scope[];
  /** How many memories it changes, and in how many parts their ids are stored. */
  memoryCount: number;
  parts: number;
  /** What made it, in one line ("improved 12 memories"). */
  summary?: string;
  undoneAt?: string;
}

/** Whether a string has the shape of a change set id (`cs_…`). */
export function isChangeSetId(value: unknown): value is string {
  return typeof value === 'string' && CHANGE_SET_ID.test(value);
}

/**
 * Writes the new states of memories as one change set, in one transaction: every memory must be
 * in `scopes`, carry `stampedAt` as its `updatedAt`, and exist already (a change set changes, it
 * never creates or deletes). With `ifUpdatedAt`, only if every memory it names is still at that
 * version (checked in the transaction; else CONFLICT with `details.changed`, nothing written, and
 * the record says so until a retry with the same `id` writes it again). Returns the change set's id.
 */
export async function applyChangeSet(
  store: MemoryStore,
  input: {
    states: readonly Memory[];
    scopes: readonly Scope[];
    actor: string;
    stampedAt: string;
    now: number;
    summary?: string;
    /** The id to record it under: a change set made on another machine keeps its id (sync). */
    id?: string;
    /** Compare-and-set per memory, as `importMany` takes it: CONFLICT and nothing changed when one moved on. */
    ifUpdatedAt?: Readonly<Record<string, string | null>>;
  },
): Promise<string> {
  const checkpoints = requireRole(store, 'checkpoints', 'a change set');
  if (input.id !== undefined && !isChangeSetId(input.id))
    throw new EngramError('INVALID_INPUT', `${JSON.stringify(String(input.id).slice(0, 40))} is no change set id.`);
  const id = input.id ?? createSortableId('cs', input.now);
  const ids = input.states.map((state) => state.id);
  for (const state of input.states) {
    if (!input.scopes.includes(state.scope))
      throw new EngramError('INVALID_INPUT', `Memory ${state.id} is outside the change set's scopes.`);
    if (state.updatedAt !== input.stampedAt)
      throw new EngramError('INTERNAL', `Memory ${state.id} does not carry the change set's time.`);
  }
  const parts = Math.max(1, Math.ceil(ids.length / IDS_PER_PART));
  for (let part = 0; part < parts; part += 1)
    await checkpoints.set(
      `${PREFIX}${id}:${part}`,
      JSON.stringify(ids.slice(part * IDS_PER_PART, (part + 1) * IDS_PER_PART)),
    );
  const record: ChangeSetRecord = {
    id,
    actor: input.actor,
    stampedAt: input.stampedAt,
    scopes: [...input.scopes],
    memoryCount: ids.length,
    parts,
    ...(input.summary !== undefined && { summary: input.summary }),
  };
  await checkpoints.set(`${PREFIX}${id}`, JSON.stringify(record));
  await noteChangeSet(checkpoints, id);
  if (input.states.length > 0) {
    // Replace only: an id the store does not hold in that scope fails the whole set (CONFLICT), nothing written.
    for (const state of input.states) {
      const existing = await store.get(state.id, [state.scope]);
      if (!existing) throw new EngramError('CONFLICT', `Memory ${state.id} is gone; the change set was not applied.`);
    }
    try {
      await store.importMany(
        input.states,
        { onExisting: 'replace', ...(input.ifUpdatedAt && { ifUpdatedAt: input.ifUpdatedAt }) },
        { actor: input.actor },
      );
    } catch (error) {
      // Nothing of the set was written: its record must not claim otherwise.
      await checkpoints.set(
        `${PREFIX}${id}`,
        JSON.stringify({ ...record, memoryCount: 0, summary: `${input.summary ?? 'change set'}: not applied` }),
      );
      throw error;
    }
  }
  return id;
}

async function noteChangeSet(checkpoints: NonNullable<MemoryStore['checkpoints']>, id: string): Promise<void> {
  // Compare-and-set: two processes applying at once both get listed; after 10 lost races the set is still applied.
  for (let attempt = 0; attempt < 10; attempt += 1) {
    const text = await checkpoints.get(INDEX);
    const ids = readIds(text);
    if (ids.includes(id)) return;
    if (await checkpoints.set(INDEX, JSON.stringify([...ids, id].slice(-INDEX_MAX)), { expected: text ?? null }))
      return;
  }
}

function readIds(text: string | undefined): string[] {
  if (text === undefined) return [];
  try {
    const value: unknown = JSON.parse(text);
    return Array.isArray(value) ? value.filter(isChangeSetId) : [];
  } catch {
    return [];
  }
}

/** The latest change sets whose scopes are all in `scopes`, newest first (at most `limit`). */
export async function listChangeSets(
  store: MemoryStore,
  options: { scopes: readonly Scope[]; limit: number },
): Promise<ChangeSetRecord[]> {
  if (!store.checkpoints) return [];
  const ids = readIds(await store.checkpoints.get(INDEX)).reverse();
  const records: ChangeSetRecord[] = [];
  for (const id of ids) {
    if (records.length >= options.limit) break;
    const record = await readChangeSet(store, id);
    if (record && record.scopes.every((scope) => options.scopes.includes(scope))) records.push(record);
  }
  return records;
}

/** Reads a change set's record; undefined when there is none by that id. */
export async function readChangeSet(store: MemoryStore, id: string): Promise<ChangeSetRecord | undefined> {
  if (!isChangeSetId(id) || !store.checkpoints) return undefined;
  const text = await store.checkpoints.get(`${PREFIX}${id}`);
  if (text === undefined) return undefined;
  return JSON.parse(text) as ChangeSetRecord;
}

/** The latest change sets of any scopes, newest first (at most `limit`). */
export async function recentChangeSets(store: MemoryStore, limit: number): Promise<ChangeSetRecord[]> {
  if (!store.checkpoints) return [];
  const records: ChangeSetRecord[] = [];
  for (const id of readIds(await store.checkpoints.get(INDEX))
    .reverse()
    .slice(0, limit)) {
    const record = await readChangeSet(store, id);
    if (record) records.push(record);
  }
  return records;
}

/** The ids of the memories a change set changes. */
export async function changeSetMemoryIds(store: MemoryStore, record: ChangeSetRecord): Promise<string[]> {
  const checkpoints = requireRole(store, 'checkpoints', 'a change set');
  const ids: string[] = [];
  for (let part = 0; part < record.parts; part += 1) {
    const text = await checkpoints.get(`${PREFIX}${record.id}:${part}`);
    if (text !== undefined) ids.push(...(JSON.parse(text) as string[]));
  }
  return ids;
}

/** The history entries of a change set, one per memory it changed (none when it was never applied). */
export async function changeSetEntries(store: MemoryStore, record: ChangeSetRecord): Promise<HistoryEntry[]> {
  const checkpoints = requireRole(store, 'checkpoints', 'a change set');
  const entries: HistoryEntry[] = [];
  for (let part = 0; part < record.parts; part += 1) {
    const text = await checkpoints.get(`${PREFIX}${record.id}:${part}`);
    const ids = text === undefined ? [] : (JSON.parse(text) as string[]);
    for (const memoryId of ids) {
      const entry = (await store.history(memoryId)).find(
        (candidate) =>
          candidate.actor === record.actor &&
          candidate.undoOf === null &&
          candidate.after?.updatedAt === record.stampedAt,
      );
      if (entry) entries.push(entry);
    }
  }
  return entries;
}

export interface ChangeSetUndo {
  changeSetId: string;
  /** The undo entries written, one per memory. */
  undone: HistoryEntry[];
  /** How many memories got their vector recomputed (their text came back), and what failed. */
  vectors: { stored: number; warnings: WarningCode[] };
}

/**
 * Reverts a whole change set, or nothing: every memory must still be as the set left it (else
 * UNDO_CONFLICT naming the first that changed since), and in `scopes` (else NOT_FOUND).
 */
export async function undoChangeSet(
  store: MemoryStore,
  input: {
    id: string;
    scopes: readonly Scope[];
    actor: string;
    now: () => Date;
    /** With one, memories whose text the undo restored get their vector recomputed (the store keeps vectors). */
    embedder?: Embedder;
  },
): Promise<ChangeSetUndo> {
  const record = await readChangeSet(store, input.id);
  if (!record || !record.scopes.every((scope) => input.scopes.includes(scope)))
    throw new EngramError(
      'NOT_FOUND',
      `No change set ${JSON.stringify(String(input.id).slice(0, 80))} in ${input.scopes.join(', ')}.`,
    );
  if (record.undoneAt !== undefined)
    throw new EngramError('UNDO_CONFLICT', `Change set ${record.id} was already undone at ${record.undoneAt}.`);
  const entries = await changeSetEntries(store, record);
  for (const entry of entries) {
    const current = await store.get(entry.memoryId);
    if (!current || !entry.after || !sameMemoryState(current, entry.after))
      throw new EngramError(
        'UNDO_CONFLICT',
        `Cannot undo change set ${record.id}: memory ${entry.memoryId} has changed since. Undo its later changes first (see "engram show ${entry.memoryId}"); nothing was undone.`,
      );
  }
  const undone: HistoryEntry[] = [];
  for (const entry of [...entries].reverse()) undone.push(await store.undo(entry.id, { actor: input.actor }));
  await requireRole(store, 'checkpoints', 'a change set').set(
    `${PREFIX}${record.id}`,
    JSON.stringify({ ...record, undoneAt: input.now().toISOString() } satisfies ChangeSetRecord),
  );
  return { changeSetId: record.id, undone, vectors: await restoreVectors(store, undone, input.embedder) };
}

/** Vectors follow the text: a memory the undo gave its old words back gets their vector (recomputed, not kept). */
async function restoreVectors(
  store: MemoryStore,
  undone: readonly HistoryEntry[],
  embedder: Embedder | undefined,
): Promise<ChangeSetUndo['vectors']> {
  const { vectors } = store;
  const restored = undone
    .filter(
      (entry) =>
        entry.after !== null &&
        (entry.before === null ||
          entry.before.name !== entry.after.name ||
          entry.before.description !== entry.after.description ||
          entry.before.content !== entry.after.content),
    )
    .map((entry) => entry.after!);
  if (!embedder || !vectors || restored.length === 0) return { stored: 0, warnings: [] };
  try {
    const result = await storeMemoryVectors({ vectors, embedder }, restored);
    return { stored: result.stored, warnings: result.warnings };
  } catch {
    // The undo itself is done; the vectors wait for `engram reindex`.
    return { stored: 0, warnings: ['vectors-not-stored'] };
  }
}
