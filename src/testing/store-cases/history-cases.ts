import { expect } from 'vitest';
import type { Memory } from '../../memory/memory.js';
import type { MemoryStore } from '../../contracts/memory-store.js';
import { CHANGE_ACTIONS, type ChangeAction, type HistoryEntry } from '../../memory/memory-history.js';
import {
  everything,
  expectEngramError,
  fingerprint,
  sortedIds,
  SUITE_ACTOR,
  storeCaseGroup,
} from '../store-suite-support.js';

const EDITOR = { actor: 'suite-editor' };
const UNDOER = { actor: 'suite-undoer' };

async function lastChange(store: MemoryStore, memoryId: string, action: ChangeAction): Promise<HistoryEntry> {
  const entries = (await store.history(memoryId)).filter((entry) => entry.action === action && entry.undoOf === null);
  expect(entries.length, `a ${action} entry for ${memoryId}`).toBeGreaterThan(0);
  return entries.at(-1)!;
}

/** The undo entry: linked to the change it undid, by the undoing actor, and now the memory's latest entry. */
async function expectUndoEntry(store: MemoryStore, undo: HistoryEntry, undone: HistoryEntry): Promise<void> {
  expect(undo).toMatchObject({ memoryId: undone.memoryId, actor: UNDOER.actor, undoOf: undone.id });
  expect(CHANGE_ACTIONS).toContain(undo.action);
  expect(undo.id).not.toBe(undone.id);
  expect(await store.getChange(undo.id)).toEqual(undo);
  const history = await store.history(undone.memoryId);
  expect(history.at(-1)).toEqual(undo);
}

/** Equal apart from `updatedAt`, which an undo may set to the time of the undo. */
function sameFields(memory: Memory | undefined, expected: Memory): void {
  expect(memory).toEqual({ ...expected, updatedAt: expect.any(String) });
}

export const historyCases = storeCaseGroup({
  title: 'history and undo',
  roles: [],
  cases: [
    {
      name: 'every kind of change records action, actor, time, before and after',
      async run({ store }) {
        const created = await store.create({ scope: 'project:audit', content: 'The queue is RabbitMQ.' }, SUITE_ACTOR);
        const successor = await store.create({ scope: 'project:audit', content: 'The queue is Kafka.' }, SUITE_ACTOR);
        const updated = await store.update(created.id, { importance: 0.8 }, EDITOR);
        const archived = await store.archive(created.id, EDITOR);
        const restored = await store.restore(created.id, EDITOR);
        const invalidated = await store.invalidate(created.id, { supersededBy: successor.id }, EDITOR);
        await store.delete(created.id, { actor: 'suite-deleter' });

        const history = await store.history(created.id);
        expect(
          history.map(({ action, actor, before, after, undoOf, memoryId }) => ({
            action,
            actor,
            before,
            after,
            undoOf,
            memoryId,
          })),
        ).toEqual([
          {
            action: 'create',
            actor: SUITE_ACTOR.actor,
            before: null,
            after: created,
            undoOf: null,
            memoryId: created.id,
          },
          {
            action: 'update',
            actor: EDITOR.actor,
            before: created,
            after: updated,
            undoOf: null,
            memoryId: created.id,
          },
          {
            action: 'archive',
            actor: EDITOR.actor,
            before: updated,
            after: archived,
            undoOf: null,
            memoryId: created.id,
          },
          {
            action: 'restore',
            actor: EDITOR.actor,
            before: archived,
            after: restored,
            undoOf: null,
            memoryId: created.id,
          },
          {
            action: 'invalidate',
            actor: EDITOR.actor,
            before: restored,
            after: invalidated,
            undoOf: null,
            memoryId: created.id,
          },
          {
            action: 'delete',
            actor: 'suite-deleter',
            before: invalidated,
            after: null,
            undoOf: null,
            memoryId: created.id,
          },
        ]);
        const times = history.map((entry) => Date.parse(entry.at));
        for (const time of times) expect(Number.isNaN(time)).toBe(false);
        expect(times).toEqual([...times].sort((a, b) => a - b));
        expect(new Set(history.map((entry) => entry.id)).size).toBe(history.length);
        for (const entry of history) expect(await store.getChange(entry.id)).toEqual(entry);
        expect(await store.history(successor.id)).toHaveLength(1);
      },
    },
    {
      name: 'undo of create removes the memory',
      async run({ store }) {
        const memory = await store.create({ scope: 'project:undo', content: 'Written by mistake.' }, SUITE_ACTOR);
        const creation = await lastChange(store, memory.id, 'create');
        const undo = await store.undo(creation.id, UNDOER);
        expect(await store.get(memory.id)).toBeUndefined();
        expect(await store.list(everything(['project:undo']))).toEqual([]);
        expect(undo).toMatchObject({ before: memory, after: null });
        await expectUndoEntry(store, undo, creation);
      },
    },
    {
      name: 'undo of delete brings the memory back with the same id and fields',
      async run({ store }) {
        const created = await store.create(
          {
            scope: 'project:undo',
            content: 'Deleted by mistake.',
            importance: 0.7,
            source: { sessionId: 'session-9' },
          },
          SUITE_ACTOR,
        );
        await store.recordAccess([created.id], '2030-01-01T00:00:00.000Z');
        const memory = (await store.get(created.id))!;
        await store.delete(memory.id, EDITOR);
        const deletion = await lastChange(store, memory.id, 'delete');
        const undo = await store.undo(deletion.id, UNDOER);
        expect(await store.get(memory.id)).toEqual(memory);
        expect(undo).toMatchObject({ before: null, after: memory });
        await expectUndoEntry(store, undo, deletion);
      },
    },
    {
      name: 'undo of update restores the old fields',
      async run({ store }) {
        const memory = await store.create(
          {
            scope: 'project:undo',
            type: 'project',
            content: 'The port is 8080.',
            importance: 0.3,
            source: { turnId: 'turn-1' },
          },
          SUITE_ACTOR,
        );
        await store.update(
          memory.id,
          {
            type: 'reference',
            name: 'port',
            description: 'Port.',
            content: 'The port is 9090.',
            importance: 0.9,
            source: null,
          },
          EDITOR,
        );
        const update = await lastChange(store, memory.id, 'update');
        const undo = await store.undo(update.id, UNDOER);
        sameFields(await store.get(memory.id), memory);
        await expectUndoEntry(store, undo, update);
        const hits = await store.searchText({ scopes: ['project:undo'], terms: ['8080'], limit: 5 });
        expect(hits.map((hit) => hit.memory.id)).toEqual([memory.id]);
      },
    },
    {
      name: 'undo of invalidate clears invalidAt and supersededBy',
      async run({ store }) {
        const memory = await store.create({ scope: 'project:undo', content: 'Wrongly overturned fact.' }, SUITE_ACTOR);
        const successor = await store.create(
          { scope: 'project:undo', content: 'The supposed replacement.' },
          SUITE_ACTOR,
        );
        await store.invalidate(memory.id, { supersededBy: successor.id }, EDITOR);
        const invalidation = await lastChange(store, memory.id, 'invalidate');
        const undo = await store.undo(invalidation.id, UNDOER);
        const restored = await store.get(memory.id);
        expect(restored).toMatchObject({ invalidAt: null, supersededBy: null });
        sameFields(restored, memory);
        expect(sortedIds(await store.list({ scopes: ['project:undo'] }))).toEqual(sortedIds([memory, successor]));
        await expectUndoEntry(store, undo, invalidation);
      },
    },
    {
      name: 'undo of archive un-archives and undo of restore re-archives',
      async run({ store }) {
        const memory = await store.create({ scope: 'project:undo', content: 'Archived by mistake.' }, SUITE_ACTOR);
        await store.archive(memory.id, EDITOR);
        const archiving = await lastChange(store, memory.id, 'archive');
        const undoArchive = await store.undo(archiving.id, UNDOER);
        sameFields(await store.get(memory.id), memory);
        expect(sortedIds(await store.list({ scopes: ['project:undo'] }))).toEqual([memory.id]);
        await expectUndoEntry(store, undoArchive, archiving);

        const other = await store.create({ scope: 'project:undo', content: 'Restored by mistake.' }, SUITE_ACTOR);
        const archivedState = await store.archive(other.id, EDITOR);
        await store.restore(other.id, EDITOR);
        const restoring = await lastChange(store, other.id, 'restore');
        const undoRestore = await store.undo(restoring.id, UNDOER);
        const rearchived = await store.get(other.id);
        expect(rearchived?.archived).toBe(true);
        sameFields(rearchived, archivedState);
        expect(sortedIds(await store.list({ scopes: ['project:undo'] }))).toEqual([memory.id]);
        await expectUndoEntry(store, undoRestore, restoring);
      },
    },
    {
      name: 'undo of a change the memory has moved on from fails with UNDO_CONFLICT and changes nothing',
      async run({ store }) {
        const scopes = ['project:conflict'];
        const memory = await store.create({ scope: 'project:conflict', content: 'Version one.' }, SUITE_ACTOR);
        await store.update(memory.id, { content: 'Version two.' }, EDITOR);
        const firstUpdate = await lastChange(store, memory.id, 'update');
        await store.update(memory.id, { content: 'Version three.' }, EDITOR);
        const creation = await lastChange(store, memory.id, 'create');

        let before = await fingerprint(store, scopes);
        await expectEngramError(() => store.undo(firstUpdate.id, UNDOER), 'UNDO_CONFLICT');
        await expectEngramError(() => store.undo(creation.id, UNDOER), 'UNDO_CONFLICT');
        expect(await fingerprint(store, scopes)).toEqual(before);
        expect((await store.get(memory.id))?.content).toBe('Version three.');

        const archivedOne = await store.create(
          { scope: 'project:conflict', content: 'Archived, then edited.' },
          SUITE_ACTOR,
        );
        await store.archive(archivedOne.id, EDITOR);
        const archiving = await lastChange(store, archivedOne.id, 'archive');
        await store.update(archivedOne.id, { importance: 0.1 }, EDITOR);
        before = await fingerprint(store, scopes);
        await expectEngramError(() => store.undo(archiving.id, UNDOER), 'UNDO_CONFLICT');
        expect(await fingerprint(store, scopes)).toEqual(before);

        // Undoing the same change twice: the second time the memory is no longer in the changed state.
        const twice = await store.create({ scope: 'project:conflict', content: 'Undone once.' }, SUITE_ACTOR);
        await store.update(twice.id, { content: 'Undone once, edited.' }, EDITOR);
        const edit = await lastChange(store, twice.id, 'update');
        await store.undo(edit.id, UNDOER);
        before = await fingerprint(store, scopes);
        await expectEngramError(() => store.undo(edit.id, UNDOER), 'UNDO_CONFLICT');
        expect(await fingerprint(store, scopes)).toEqual(before);

        // Undoing a delete whose id is taken again.
        const reborn = await store.create(
          { id: 'suite-reborn', scope: 'project:conflict', content: 'First life.' },
          SUITE_ACTOR,
        );
        await store.delete(reborn.id, EDITOR);
        const deletion = await lastChange(store, reborn.id, 'delete');
        await store.create({ id: 'suite-reborn', scope: 'project:conflict', content: 'Second life.' }, SUITE_ACTOR);
        before = await fingerprint(store, scopes);
        await expectEngramError(() => store.undo(deletion.id, UNDOER), 'UNDO_CONFLICT');
        expect(await fingerprint(store, scopes)).toEqual(before);
      },
    },
    {
      name: 'recorded access does not block undo',
      async run({ store }) {
        const memory = await store.create(
          { scope: 'project:undo', content: 'Recalled between edit and undo.' },
          SUITE_ACTOR,
        );
        await store.update(memory.id, { importance: 0.95 }, EDITOR);
        const update = await lastChange(store, memory.id, 'update');
        await store.recordAccess([memory.id], '2030-01-01T00:00:00.000Z');
        await store.undo(update.id, UNDOER);
        expect((await store.get(memory.id))?.importance).toBe(memory.importance);
      },
    },
    {
      name: 'an undo can itself be undone',
      async run({ store }) {
        const memory = await store.create({ scope: 'project:undo', content: 'Flip-flopping fact.' }, SUITE_ACTOR);
        const edited = await store.update(memory.id, { content: 'Flip-flopped fact.' }, EDITOR);
        const update = await lastChange(store, memory.id, 'update');
        const undo = await store.undo(update.id, UNDOER);
        const redo = await store.undo(undo.id, UNDOER);
        expect(redo.undoOf).toBe(undo.id);
        sameFields(await store.get(memory.id), edited);
      },
    },
    {
      name: 'undo of an unknown change fails with NOT_FOUND',
      async run({ store }) {
        await store.create({ scope: 'global', content: 'Bystander.' }, SUITE_ACTOR);
        const before = await fingerprint(store, ['global']);
        await expectEngramError(() => store.undo('suite-no-such-change', UNDOER), 'NOT_FOUND');
        expect(await fingerprint(store, ['global'])).toEqual(before);
      },
    },
  ],
});
