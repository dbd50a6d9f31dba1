import type { Memory } from '../memory/memory.js';
import type { HistoryEntry } from '../memory/memory-history.js';
import { canonicalJson } from '../memory/record-canonical-form.js';

/**
 * What a three-way merge compares: a memory's fields in groups that change together. `validity`
 * is an invalidation (when it stopped being true and what replaced it); the rest are one field each.
 * Identity (id, scope, createdAt) never changes, and recall's bookkeeping (hit count, last access)
 * stays on each machine.
 */
export const FIELD_GROUPS = [
  'type',
  'name',
  'description',
  'content',
  'importance',
  'source',
  'validFrom',
  'validity',
  'archived',
] as const;
export type FieldGroup = (typeof FIELD_GROUPS)[number];

/** When each field group was last edited (ISO-8601): how "the later edit" of a conflict is told. */
export type FieldTimes = Record<FieldGroup, string>;

/** A memory as sync moves it: its state and when each of its fields was last edited. */
export interface SyncedMemory {
  memory: Memory;
  fieldTimes: FieldTimes;
}

/** A field group's value of a memory, as JSON-comparable data. */
export function groupValue(memory: Memory, group: FieldGroup): unknown {
  if (group === 'validity') return { invalidAt: memory.invalidAt, supersededBy: memory.supersededBy };
  return memory[group];
}

/** Whether two memories hold the same value in a group. */
export function sameGroup(a: Memory, b: Memory, group: FieldGroup): boolean {
  return canonicalJson(groupValue(a, group)) === canonicalJson(groupValue(b, group));
}

/** A memory with one group's value taken from another state of it. */
export function withGroup(target: Memory, from: Memory, group: FieldGroup): Memory {
  if (group === 'validity') return { ...target, invalidAt: from.invalidAt, supersededBy: from.supersededBy };
  return { ...target, [group]: from[group] };
}

/** Whether two states agree in every synced field (bookkeeping and updatedAt aside). */
export function sameSyncedState(a: Memory, b: Memory): boolean {
  return a.id === b.id && a.scope === b.scope && FIELD_GROUPS.every((group) => sameGroup(a, b, group));
}

/** Every group edited at one time. */
export function uniformTimes(at: string): FieldTimes {
  return Object.fromEntries(FIELD_GROUPS.map((group) => [group, at])) as FieldTimes;
}

/**
 * When each field of a memory was last edited, from its history on this machine: the time of the
 * last entry that changed the field's value (a memory never edited: its creation). A history cut
 * short (purged, or copied from elsewhere) leaves a field at the memory's last update, the latest
 * it can have been edited.
 */
export function fieldTimesFromHistory(memory: Memory, history: readonly HistoryEntry[]): FieldTimes {
  if (memory.updatedAt === memory.createdAt) return uniformTimes(memory.createdAt);
  const times: Partial<FieldTimes> = {};
  let sawCreation = false;
  for (const entry of history) {
    if (entry.after === null) continue;
    if (entry.before === null) {
      // A creation, or an undone delete: the fields are as old as the state it brought.
      sawCreation ||= entry.action === 'create' && entry.undoOf === null;
      for (const group of FIELD_GROUPS) times[group] = entry.undoOf === null ? entry.after.createdAt : entry.at;
      continue;
    }
    for (const group of FIELD_GROUPS) if (!sameGroup(entry.before, entry.after, group)) times[group] = entry.at;
  }
  const fallback = sawCreation ? memory.createdAt : memory.updatedAt;
  return Object.fromEntries(
    FIELD_GROUPS.map((group) => [group, clamp(times[group] ?? fallback, memory)]),
  ) as FieldTimes;
}

function clamp(at: string, memory: Memory): string {
  const time = Date.parse(at);
  return new Date(Math.min(Date.parse(memory.updatedAt), Math.max(Date.parse(memory.createdAt), time))).toISOString();
}
