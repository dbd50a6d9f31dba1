import { expect } from 'vitest';
import type { Memory } from '../../memory/memory.js';
import { runStoreWorker, unexpectedStderr } from '../store-write-worker-process.js';
import { expectEngramError, fingerprint, SUITE_ACTOR, storeCaseGroup } from '../store-suite-support.js';

const IMPORT_ACTOR = { actor: 'suite-import' };
const SCOPES = ['project:import', 'project:alpha', 'project:beta', 'global'];

export const importCases = storeCaseGroup({
  title: 'imports',
  roles: [],
  cases: [
    {
      name: 'importMany with ifUpdatedAt writes only while every memory it names is as expected, else nothing',
      async run({ store }) {
        const kept = await store.create(
          { id: 'mem_cas_kept', scope: 'project:import', content: 'Kept fact.' },
          SUITE_ACTOR,
        );
        const before = await fingerprint(store, SCOPES);
        const replacement = { ...kept, content: 'Replaced fact.', updatedAt: '2099-01-01T00:00:00.000Z' };
        const fresh = { id: 'mem_cas_fresh', scope: 'project:import', content: 'A new fact.' };
        // A stale expectation, a present memory expected absent: CONFLICT, and the whole import is left out.
        const stale: Array<Record<string, string | null>> = [
          { mem_cas_kept: '2000-01-01T00:00:00.000Z' },
          { mem_cas_kept: null },
          { mem_cas_kept: kept.updatedAt, mem_cas_fresh: '2000-01-01T00:00:00.000Z' },
        ];
        for (const ifUpdatedAt of stale)
          await expectEngramError(
            () => store.importMany([replacement, fresh], { onExisting: 'replace', ifUpdatedAt }, IMPORT_ACTOR),
            'CONFLICT',
          );
        expect(await fingerprint(store, SCOPES)).toEqual(before);
        await expectEngramError(
          () =>
            store.importMany(
              [fresh],
              { onExisting: 'skip', ifUpdatedAt: { mem_cas_fresh: 'yesterday' } },
              IMPORT_ACTOR,
            ),
          'INVALID_INPUT',
        );
        // Expectations met (the same instant in another spelling counts), the import is written.
        const sameInstant = kept.updatedAt.replace('Z', '+00:00');
        const report = await store.importMany(
          [replacement, fresh],
          { onExisting: 'replace', ifUpdatedAt: { mem_cas_kept: sameInstant, mem_cas_fresh: null } },
          IMPORT_ACTOR,
        );
        expect(report).toMatchObject({ created: 1, replaced: 1, skipped: 0 });
        expect((await store.get('mem_cas_kept'))!.content).toBe('Replaced fact.');
        expect((await store.get('mem_cas_fresh'))!.content).toBe('A new fact.');
      },
    },
    {
      name: 'importMany keeps ids and every field, and skips an id already in the same scope',
      async run({ store }) {
        const incoming = {
          id: 'mem_imported_1',
          scope: 'project:import',
          type: 'reference' as const,
          name: 'ingest-bugs',
          description: 'Pipeline bugs live in Linear INGEST',
          content: 'Pipeline bugs are tracked in Linear project INGEST.',
          importance: 0.7,
          source: { sessionId: 's1', turnId: 't9' },
          createdAt: '2025-01-02T03:04:05.000Z',
          updatedAt: '2025-02-02T03:04:05.000Z',
          lastAccessedAt: '2025-03-02T03:04:05.000Z',
          hitCount: 4,
          validFrom: '2025-01-02T03:04:05.000Z',
          invalidAt: null,
          supersededBy: null,
          archived: true,
        };
        const report = await store.importMany([incoming], { onExisting: 'skip' }, IMPORT_ACTOR);
        expect(report).toMatchObject({ created: 1, replaced: 0, skipped: 0 });
        expect(await store.get('mem_imported_1')).toEqual(incoming);
        expect((await store.history('mem_imported_1')).map((entry) => [entry.action, entry.actor])).toEqual([
          ['create', 'suite-import'],
        ]);
        const again = await store.importMany(
          [{ ...incoming, content: 'Changed.' }],
          { onExisting: 'skip' },
          IMPORT_ACTOR,
        );
        expect(again).toMatchObject({ created: 0, replaced: 0, skipped: 1 });
        expect((await store.get('mem_imported_1'))!.content).toBe(incoming.content);
      },
    },
    {
      name: 'importMany replace overwrites the whole memory and records an update; fail refuses',
      async run({ store }) {
        const original = await store.create(
          { id: 'mem_replace', scope: 'project:import', content: 'Old fact.', importance: 0.2 },
          SUITE_ACTOR,
        );
        const incoming = {
          id: 'mem_replace',
          scope: 'project:import',
          content: 'New fact.',
          importance: 0.9,
          archived: true,
          createdAt: '2024-05-05T00:00:00.000Z',
        };
        const before = await fingerprint(store, SCOPES);
        await expectEngramError(() => store.importMany([incoming], { onExisting: 'fail' }, IMPORT_ACTOR), 'CONFLICT');
        expect(await fingerprint(store, SCOPES)).toEqual(before);
        expect(await store.importMany([incoming], { onExisting: 'replace' }, IMPORT_ACTOR)).toMatchObject({
          replaced: 1,
        });
        const replaced = await store.get('mem_replace');
        expect(replaced).toMatchObject({
          content: 'New fact.',
          importance: 0.9,
          archived: true,
          createdAt: '2024-05-05T00:00:00.000Z',
        });
        const history = await store.history('mem_replace');
        // The replacement archived it: history names what changed, not a generic update.
        expect(history.at(-1)).toMatchObject({ action: 'archive', actor: 'suite-import', before: original });
        await store.undo(history.at(-1)!.id, SUITE_ACTOR);
        expect((await store.get('mem_replace'))!.content).toBe('Old fact.');
      },
    },
    {
      name: 'importMany never reaches into another scope: an id that exists there is refused and nothing is written',
      async run({ store }) {
        await store.create(
          { id: 'mem_alpha', scope: 'project:alpha', content: 'Alpha team deploys on Tuesdays.' },
          SUITE_ACTOR,
        );
        const before = await fingerprint(store, SCOPES);
        for (const onExisting of ['skip', 'replace', 'fail'] as const) {
          await expectEngramError(
            () =>
              store.importMany(
                [
                  { id: 'mem_fresh', scope: 'project:beta', content: 'A fresh fact.' },
                  { id: 'mem_alpha', scope: 'project:beta', content: 'Beta overwrote alpha.' },
                ],
                { onExisting },
                IMPORT_ACTOR,
              ),
            'CONFLICT',
          );
          expect(await fingerprint(store, SCOPES)).toEqual(before);
        }
      },
    },
    {
      name: 'importMany is all or nothing: one invalid memory and nothing is written',
      async run({ store }) {
        await store.create({ id: 'mem_existing', scope: 'project:import', content: 'Existing.' }, SUITE_ACTOR);
        const before = await fingerprint(store, SCOPES);
        await expectEngramError(
          () =>
            store.importMany(
              [
                { id: 'mem_ok', scope: 'project:import', content: 'Fine.' },
                { id: 'mem_existing', scope: 'project:import', content: 'Replacement.', name: 'Not A Slug' },
              ],
              { onExisting: 'replace' },
              IMPORT_ACTOR,
            ),
          'INVALID_INPUT',
        );
        await expectEngramError(
          () => store.importMany([null as never], { onExisting: 'skip' }, IMPORT_ACTOR),
          'INVALID_INPUT',
        );
        await expectEngramError(
          () =>
            store.importMany(
              [
                { id: 'mem_twice', scope: 'global', content: 'a' },
                { id: 'mem_twice', scope: 'global', content: 'b' },
              ],
              { onExisting: 'skip' },
              IMPORT_ACTOR,
            ),
          'CONFLICT',
        );
        await expectEngramError(
          () => store.importMany([], { onExisting: 'merge' as never }, IMPORT_ACTOR),
          'INVALID_INPUT',
        );
        expect(await fingerprint(store, SCOPES)).toEqual(before);
      },
    },
    {
      name: 'importMany with ifUpdatedAt writes only if every memory named is still at the version read, else CONFLICT naming the changed ones',
      timeoutMs: 60_000,
      async run({ store, url }) {
        const scope = 'project:import';
        const [a, b, c] = await store.createMany(
          ['Deploys go out on Fridays.', 'Staging runs PostgreSQL 15.', 'The wiki lives in Notion.'].map((content) => ({
            scope,
            content,
          })),
          SUITE_ACTOR,
        );
        const read = { [a!.id]: a!.updatedAt, [b!.id]: b!.updatedAt, [c!.id]: c!.updatedAt };
        // Another process edits b after our read, as a person would while a consolidation plans.
        const edit = await runStoreWorker({
          url,
          task: {
            mode: 'update',
            edits: [{ id: b!.id, patch: { content: 'Staging runs PostgreSQL 16.' } }],
            actor: 'person',
          },
        });
        expect({ exitCode: edit.exitCode, stderr: unexpectedStderr(edit.stderr) }).toEqual({ exitCode: 0, stderr: '' });
        const edited = JSON.parse(edit.ids[0]!) as Memory;
        const before = await fingerprint(store, SCOPES);
        const replacing = [a!, b!].map((memory) => ({ ...memory, content: `${memory.content} (rewritten)` }));
        const error = await expectEngramError(
          () => store.importMany(replacing, { onExisting: 'replace', ifUpdatedAt: read }, IMPORT_ACTOR),
          'CONFLICT',
        );
        expect((error as Error & { details?: { changed?: string[] } }).details?.changed).toEqual([b!.id]);
        expect(await fingerprint(store, SCOPES)).toEqual(before);
        expect((await store.get(b!.id))!.content).toBe('Staging runs PostgreSQL 16.');
        // A memory the import does not write counts too, and so does one that is gone.
        await store.delete(c!.id, SUITE_ACTOR);
        const gone = await expectEngramError(
          () =>
            store.importMany(
              [replacing[0]!],
              { onExisting: 'replace', ifUpdatedAt: { ...read, [b!.id]: edited.updatedAt } },
              IMPORT_ACTOR,
            ),
          'CONFLICT',
        );
        expect((gone as Error & { details?: { changed?: string[] } }).details?.changed).toEqual([c!.id]);
        // At the versions as they are now, it is written.
        const report = await store.importMany(
          [replacing[0]!],
          { onExisting: 'replace', ifUpdatedAt: { [a!.id]: a!.updatedAt, [b!.id]: edited.updatedAt } },
          IMPORT_ACTOR,
        );
        expect(report).toMatchObject({ replaced: 1 });
        expect((await store.get(a!.id))!.content).toBe('Deploys go out on Fridays. (rewritten)');
        for (const bad of ['2026-01-01', { [a!.id]: 'not a time' }, { [a!.id]: 7 }, ['x']])
          await expectEngramError(
            () => store.importMany([], { onExisting: 'replace', ifUpdatedAt: bad as never }, IMPORT_ACTOR),
            'INVALID_INPUT',
          );
      },
    },
  ],
});
