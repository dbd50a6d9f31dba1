import { describe, expect, it } from 'vitest';
import { normalizeNewMemory, type Memory } from '../../src/memory/memory.js';
import {
  FIELD_GROUPS,
  fieldTimesFromHistory,
  uniformTimes,
  type FieldTimes,
  type SyncedMemory,
} from '../../src/sync/sync-fields.js';
import { mergeMemory, type MergeSide } from '../../src/sync/sync-merge.js';
import type { HistoryEntry } from '../../src/memory/memory-history.js';

const CREATED = '2025-01-01T00:00:00.000Z';
const base = normalizeNewMemory(
  { scope: 'project:demo', content: 'Deploys go out on Tuesdays.', name: 'deploy-day', description: 'Deploy day' },
  { now: CREATED, id: 'mem_merge' },
);

function at(minutes: number): string {
  return new Date(Date.parse(CREATED) + minutes * 60_000).toISOString();
}

/** A state of the memory edited at `minutes` in the fields given. */
function edited(from: SyncedMemory, minutes: number, patch: Partial<Memory>): SyncedMemory {
  const time = at(minutes);
  const fieldTimes = { ...from.fieldTimes } as FieldTimes;
  for (const key of Object.keys(patch)) {
    const group = key === 'invalidAt' || key === 'supersededBy' ? 'validity' : key;
    if ((FIELD_GROUPS as readonly string[]).includes(group)) fieldTimes[group as keyof FieldTimes] = time;
  }
  return { memory: { ...from.memory, ...patch, updatedAt: time }, fieldTimes };
}

const origin: SyncedMemory = { memory: base, fieldTimes: uniformTimes(CREATED) };
const side = (synced: SyncedMemory): MergeSide => ({ kind: 'memory', synced });

describe('three-way merge of one memory', () => {
  it('edits to different fields on the two sides both stand, in a state newer than either', () => {
    const local = edited(origin, 5, { content: 'Deploys go out on Wednesdays.' });
    const remote = edited(origin, 3, { importance: 0.9 });
    const outcome = mergeMemory({ base: side(origin), local: side(local), remote: side(remote) });
    expect(outcome.conflicts).toEqual([]);
    expect(outcome.local.kind).toBe('write');
    expect(outcome.remote.kind).toBe('write');
    if (outcome.local.kind !== 'write' || outcome.remote.kind !== 'write') return;
    expect(outcome.local.synced).toEqual(outcome.remote.synced);
    expect(outcome.local.synced.memory).toMatchObject({ content: 'Deploys go out on Wednesdays.', importance: 0.9 });
    expect(Date.parse(outcome.local.synced.memory.updatedAt)).toBeGreaterThan(Date.parse(local.memory.updatedAt));
    expect(outcome.local.synced.fieldTimes).toMatchObject({ content: at(5), importance: at(3) });
    expect(outcome.local).not.toHaveProperty('setAside');
  });

  it('a change on one side only is taken whole, the other side is not written', () => {
    const remote = edited(origin, 3, { archived: true });
    expect(mergeMemory({ base: side(origin), local: side(origin), remote: side(remote) })).toEqual({
      local: { kind: 'write', synced: remote },
      remote: { kind: 'none' },
      conflicts: [],
    });
    expect(mergeMemory({ base: side(origin), local: side(remote), remote: side(origin) })).toMatchObject({
      local: { kind: 'none' },
      remote: { kind: 'write', synced: { memory: remote.memory } },
      conflicts: [],
    });
    expect(mergeMemory({ base: side(origin), local: side(remote), remote: side(remote) })).toEqual({
      local: { kind: 'none' },
      remote: { kind: 'none' },
      conflicts: [],
    });
  });

  it('the same field edited on both sides keeps the later edit and lists the other as a conflict', () => {
    const early = edited(origin, 2, { content: 'Deploys go out on Mondays.' });
    const late = edited(origin, 9, { content: 'Deploys go out on Fridays.' });
    // Later here: kept, and the remote's state is set aside in history first.
    const localWins = mergeMemory({ base: side(origin), local: side(late), remote: side(early) });
    expect(localWins.conflicts).toEqual([
      {
        group: 'content',
        kept: 'local',
        keptValue: 'Deploys go out on Fridays.',
        keptAt: at(9),
        otherValue: 'Deploys go out on Mondays.',
        otherAt: at(2),
      },
    ]);
    expect(localWins.local).toMatchObject({
      kind: 'write',
      setAside: early,
      synced: { memory: { content: late.memory.content } },
    });
    expect(localWins.remote).toMatchObject({ kind: 'write', synced: { memory: { content: late.memory.content } } });
    // Later on the remote: taken whole, this machine's state goes to history as the write's "before".
    const remoteWins = mergeMemory({ base: side(origin), local: side(early), remote: side(late) });
    expect(remoteWins.conflicts).toMatchObject([
      { group: 'content', kept: 'remote', otherValue: early.memory.content },
    ]);
    expect(remoteWins).toMatchObject({ local: { kind: 'write', synced: late }, remote: { kind: 'none' } });
    expect(remoteWins.local).not.toHaveProperty('setAside');
  });

  it('the later edit of the field decides, not the later update of the memory', () => {
    // Content: local edited it at 4, the remote at 6; local then touched importance at 10.
    const local = edited(edited(origin, 4, { content: 'Local content.' }), 10, { importance: 0.2 });
    const remote = edited(origin, 6, { content: 'Remote content.' });
    const outcome = mergeMemory({ base: side(origin), local: side(local), remote: side(remote) });
    expect(outcome.conflicts).toMatchObject([{ group: 'content', kept: 'remote' }]);
    expect(outcome.local).toMatchObject({
      kind: 'write',
      synced: { memory: { content: 'Remote content.', importance: 0.2 } },
    });
  });

  it('equal edit times pick the same side on every machine', () => {
    const a = edited(origin, 5, { content: 'Alpha.' });
    const b = edited(origin, 5, { content: 'Beta.' });
    const one = mergeMemory({ base: side(origin), local: side(a), remote: side(b) });
    const other = mergeMemory({ base: side(origin), local: side(b), remote: side(a) });
    const keptOne = one.conflicts[0]!.keptValue;
    const keptOther = other.conflicts[0]!.keptValue;
    expect(keptOne).toBe(keptOther);
  });

  it('an invalidation travels as one field (when and by what), and conflicts as one', () => {
    const invalidated = edited(origin, 3, { invalidAt: at(3), supersededBy: 'mem_newer' });
    const outcome = mergeMemory({ base: side(origin), local: side(origin), remote: side(invalidated) });
    expect(outcome.local).toMatchObject({
      kind: 'write',
      synced: { memory: { invalidAt: at(3), supersededBy: 'mem_newer' } },
    });
    const other = edited(origin, 4, { invalidAt: at(4), supersededBy: 'mem_other' });
    expect(mergeMemory({ base: side(origin), local: side(other), remote: side(invalidated) }).conflicts).toMatchObject([
      { group: 'validity', kept: 'local', otherValue: { invalidAt: at(3), supersededBy: 'mem_newer' } },
    ]);
  });

  it('an edit beats a delete on either side; an unchanged memory follows the delete', () => {
    const changed = edited(origin, 4, { content: 'Edited after all.' });
    expect(mergeMemory({ base: side(origin), local: side(changed), remote: { kind: 'deleted' } })).toMatchObject({
      local: { kind: 'none' },
      remote: { kind: 'write', synced: { memory: changed.memory } },
    });
    expect(mergeMemory({ base: side(origin), local: side(origin), remote: { kind: 'deleted' } })).toMatchObject({
      local: { kind: 'delete' },
      remote: { kind: 'none' },
    });
    expect(mergeMemory({ base: side(origin), local: { kind: 'deleted' }, remote: side(changed) })).toMatchObject({
      local: { kind: 'write', synced: changed },
      remote: { kind: 'none' },
    });
    expect(mergeMemory({ base: side(origin), local: { kind: 'deleted' }, remote: side(origin) })).toMatchObject({
      local: { kind: 'none' },
      remote: { kind: 'tombstone', tombstone: 'delete' },
    });
  });

  it('a purge beats an edit, travels as a tombstone, and is applied only to what the remote held', () => {
    const changed = edited(origin, 4, { content: 'Edited after all.' });
    expect(mergeMemory({ base: side(origin), local: side(changed), remote: { kind: 'purged' } })).toMatchObject({
      local: { kind: 'purge' },
    });
    expect(mergeMemory({ base: side(origin), local: { kind: 'purged' }, remote: side(changed) })).toMatchObject({
      remote: { kind: 'tombstone', tombstone: 'purge' },
    });
    // A memory never sent there: a purge tombstone for it is not applied, nor sent a tombstone.
    expect(mergeMemory({ base: { kind: 'absent' }, local: side(origin), remote: { kind: 'purged' } })).toMatchObject({
      local: { kind: 'none' },
      remote: { kind: 'none' },
      note: 'unverified-tombstone',
    });
    expect(
      mergeMemory({ base: { kind: 'absent' }, local: { kind: 'purged' }, remote: { kind: 'absent' } }),
    ).toMatchObject({
      local: { kind: 'none' },
      remote: { kind: 'none' },
    });
  });

  it('without a base, every differing field is a conflict and nothing is lost', () => {
    const a = edited(origin, 4, { content: 'From the laptop.' });
    const b = edited(origin, 6, { description: 'From the desktop' });
    const outcome = mergeMemory({ base: { kind: 'absent' }, local: side(a), remote: side(b) });
    expect(outcome.conflicts.map((conflict) => conflict.group).sort()).toEqual(['content', 'description']);
    // A delete tombstone the remote never showed a reason for: the memory is written back.
    expect(mergeMemory({ base: { kind: 'absent' }, local: side(a), remote: { kind: 'deleted' } })).toMatchObject({
      remote: { kind: 'write' },
      note: 'unverified-tombstone',
    });
    // A file gone without a tombstone: written back.
    expect(mergeMemory({ base: side(origin), local: side(origin), remote: { kind: 'absent' } })).toMatchObject({
      remote: { kind: 'write' },
      note: 'restored-missing-file',
    });
  });
});

describe('field edit times from history', () => {
  it('each field is as old as the last entry that changed it; a memory never edited is as old as itself', () => {
    const created = base;
    const first = { ...created, content: 'Changed once.', updatedAt: at(3) };
    const second = { ...first, importance: 0.9, updatedAt: at(7) };
    const history: HistoryEntry[] = [
      {
        id: 'chg_1',
        memoryId: base.id,
        action: 'create',
        actor: 'cli',
        at: CREATED,
        before: null,
        after: created,
        undoOf: null,
      },
      {
        id: 'chg_2',
        memoryId: base.id,
        action: 'update',
        actor: 'cli',
        at: at(3),
        before: created,
        after: first,
        undoOf: null,
      },
      {
        id: 'chg_3',
        memoryId: base.id,
        action: 'update',
        actor: 'cli',
        at: at(7),
        before: first,
        after: second,
        undoOf: null,
      },
    ];
    const times = fieldTimesFromHistory(second, history);
    expect(times).toMatchObject({ content: at(3), importance: at(7), name: CREATED, archived: CREATED });
    expect(fieldTimesFromHistory(created, [])).toEqual(uniformTimes(CREATED));
    // A history cut short: fields it says nothing about are as late as they can be.
    expect(fieldTimesFromHistory(second, history.slice(2))).toMatchObject({ importance: at(7), content: at(7) });
  });
});
