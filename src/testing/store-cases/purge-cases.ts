import { expect } from 'vitest';
import type { MemoryStore } from '../../contracts/memory-store.js';
import { everything, expectEngramError, fingerprint, SUITE_ACTOR, storeCaseGroup } from '../store-suite-support.js';

const PURGER = { actor: 'suite-purger' };
const SECRET = 'The staging vault unseal key is purple-otter-7731-quartz.';

/** What a purged memory leaves: one `purge` entry by the purger, with no content, that cannot be undone. */
async function expectOnlyPurgeEntry(store: MemoryStore, id: string, changeId: string): Promise<void> {
  expect(await store.get(id)).toBeUndefined();
  const history = await store.history(id);
  expect(history).toEqual([
    {
      id: changeId,
      memoryId: id,
      action: 'purge',
      actor: PURGER.actor,
      at: expect.any(String),
      before: null,
      after: null,
      undoOf: null,
    },
  ]);
  expect(await store.getChange(changeId)).toEqual(history[0]);
  await expectEngramError(() => store.undo(changeId, PURGER), 'UNDO_CONFLICT');
  expect(await store.get(id)).toBeUndefined();
}

export const purgeCases = storeCaseGroup({
  title: 'purge',
  roles: [],
  cases: [
    {
      name: 'purge removes a memory with every history entry and leaves one purge entry with no content',
      async run({ store }) {
        const memory = await store.create({ scope: 'project:purge', content: SECRET }, SUITE_ACTOR);
        await store.update(memory.id, { content: `${SECRET} Rotated monthly.` }, SUITE_ACTOR);
        await store.archive(memory.id, SUITE_ACTOR);
        const other = await store.create(
          { scope: 'project:purge', content: 'The vault runs on three nodes.' },
          SUITE_ACTOR,
        );
        const report = await store.purge(memory.id, PURGER);
        expect(report).toEqual({
          changeId: expect.any(String),
          memoryRemoved: true,
          historyEntriesRemoved: 3,
          jobsRemoved: 0,
          copiesCleared: expect.any(Boolean),
          places: expect.any(Array),
        });
        // Each place it looked is named, cleared or not; "copiesCleared" is true only when all are.
        expect(report.places.slice(0, 2)).toEqual([
          { place: 'memory', removed: 1, cleared: true },
          { place: 'history', removed: 3, cleared: true },
        ]);
        for (const place of report.places) if (!place.cleared) expect(place.reason).toEqual(expect.any(String));
        expect(report.copiesCleared).toBe(report.places.every((place) => place.cleared));
        await expectOnlyPurgeEntry(store, memory.id, report.changeId);
        expect(await store.searchText({ scopes: ['project:purge'], terms: ['unseal', 'otter'], limit: 10 })).toEqual(
          [],
        );
        expect((await store.list(everything(['project:purge']))).map((kept) => kept.id)).toEqual([other.id]);
        expect((await store.history(other.id)).map((entry) => entry.action)).toEqual(['create']);
      },
    },
    {
      name: 'purge after a hard delete removes the history that still held the content',
      async run({ store }) {
        const memory = await store.create({ scope: 'project:purge', content: SECRET }, SUITE_ACTOR);
        await store.delete(memory.id, SUITE_ACTOR);
        expect(JSON.stringify(await store.history(memory.id))).toContain('purple-otter');
        const report = await store.purge(memory.id, PURGER);
        expect(report).toMatchObject({ memoryRemoved: false, historyEntriesRemoved: 2 });
        await expectOnlyPurgeEntry(store, memory.id, report.changeId);
        expect(JSON.stringify(await store.history(memory.id))).not.toContain('purple-otter');
      },
    },
    {
      name: 'purge of an unknown or already purged id, or with a stale ifUpdatedAt, is refused and changes nothing',
      async run({ store }) {
        const memory = await store.create({ scope: 'project:purge', content: SECRET }, SUITE_ACTOR);
        const before = await fingerprint(store, ['project:purge']);
        await expectEngramError(() => store.purge('mem_does_not_exist', PURGER), 'NOT_FOUND');
        await expectEngramError(
          () => store.purge(memory.id, { ...PURGER, ifUpdatedAt: '2001-01-01T00:00:00.000Z' }),
          'CONFLICT',
        );
        await expectEngramError(() => store.purge(memory.id, { actor: '' }), 'INVALID_INPUT');
        expect(await fingerprint(store, ['project:purge'])).toEqual(before);
        const report = await store.purge(memory.id, PURGER);
        const after = await fingerprint(store, ['project:purge']);
        await expectEngramError(() => store.purge(memory.id, PURGER), 'NOT_FOUND');
        expect(await fingerprint(store, ['project:purge'])).toEqual(after);
        await expectOnlyPurgeEntry(store, memory.id, report.changeId);
      },
    },
  ],
});

export const purgeJobCases = storeCaseGroup({
  title: 'purge and jobs',
  roles: ['jobs'],
  cases: [
    {
      name: 'purge removes the jobs whose payload quotes the memory or names its id, and no other',
      async run({ store }) {
        const memory = await store.create({ scope: 'project:purge', content: `${SECRET}\n"quoted" line` }, SUITE_ACTOR);
        const quoting = await store.jobs.enqueue({
          queue: 'extraction',
          key: 'quoting',
          payload: { messages: [{ role: 'user', content: `note: ${SECRET}\n"quoted" line` }] },
        });
        const naming = await store.jobs.enqueue({
          queue: 'extraction',
          key: 'naming',
          payload: { recalled: [memory.id] },
        });
        const unrelated = await store.jobs.enqueue({
          queue: 'extraction',
          key: 'unrelated',
          payload: { messages: [{ role: 'user', content: 'The vault runs on three nodes.' }] },
        });
        const report = await store.purge(memory.id, PURGER);
        expect(report.jobsRemoved).toBe(2);
        expect(await store.jobs.get(quoting.job.id)).toBeUndefined();
        expect(await store.jobs.get(naming.job.id)).toBeUndefined();
        expect(await store.jobs.get(unrelated.job.id)).toEqual(unrelated.job);
      },
    },
  ],
});
