import { expect } from 'vitest';
import { openStore } from '../../node/open-store.js';
import { deriveDescription, deriveName, type Memory, type NewMemory } from '../../memory/memory.js';
import {
  everything,
  expectEngramError,
  fingerprint,
  sortedIds,
  SUITE_ACTOR,
  storeCaseGroup,
} from '../store-suite-support.js';
import { writeRefusalCases } from './write-refusal-cases.js';

export const writeCases = storeCaseGroup({
  title: 'writes',
  roles: [],
  cases: [
    {
      name: 'ifUpdatedAt applies a change only to the version it names; updatedAt strictly increases with every change',
      async run({ store }) {
        const memory = await store.create({ scope: 'project:cas', content: 'The CI runs on Buildkite.' }, SUITE_ACTOR);
        // Two changes in quick succession (often the same millisecond) still get distinct versions.
        const first = await store.update(
          memory.id,
          { importance: 0.7 },
          { ...SUITE_ACTOR, ifUpdatedAt: memory.updatedAt },
        );
        const second = await store.update(memory.id, { importance: 0.8 }, SUITE_ACTOR);
        expect(Date.parse(first.updatedAt)).toBeGreaterThan(Date.parse(memory.updatedAt));
        expect(Date.parse(second.updatedAt)).toBeGreaterThan(Date.parse(first.updatedAt));
        // An editor that read `first` and writes back after `second` is refused; nothing changes.
        const before = await fingerprint(store, ['project:cas']);
        const history = (await store.history(memory.id)).length;
        await expectEngramError(
          () =>
            store.update(
              memory.id,
              { content: 'The CI runs on GitHub Actions.' },
              { ...SUITE_ACTOR, ifUpdatedAt: first.updatedAt },
            ),
          'CONFLICT',
        );
        await expectEngramError(
          () => store.archive(memory.id, { ...SUITE_ACTOR, ifUpdatedAt: memory.updatedAt }),
          'CONFLICT',
        );
        await expectEngramError(
          () => store.update(memory.id, { importance: 0.1 }, { ...SUITE_ACTOR, ifUpdatedAt: 42 as never }),
          'INVALID_INPUT',
        );
        expect(await fingerprint(store, ['project:cas'])).toEqual(before);
        expect(await store.history(memory.id)).toHaveLength(history);
        const third = await store.update(
          memory.id,
          { content: 'The CI runs on GitHub Actions.' },
          { ...SUITE_ACTOR, ifUpdatedAt: second.updatedAt },
        );
        expect(third.content).toBe('The CI runs on GitHub Actions.');
      },
    },
    {
      name: 'create fills defaults: type project, importance 0.5, derived name and description, validFrom = createdAt, no hits',
      async run({ store }) {
        const content = '## Deploys\nThe user deploys with Docker Compose on a single VPS.\n\n**Why:** no Kubernetes.';
        const memory = await store.create({ scope: 'project:defaults', content }, SUITE_ACTOR);
        expect(memory).toEqual({
          id: expect.stringMatching(/\S/),
          scope: 'project:defaults',
          type: 'project',
          name: deriveName(content),
          description: deriveDescription(content),
          content,
          importance: 0.5,
          source: null,
          createdAt: expect.any(String),
          updatedAt: memory.createdAt,
          lastAccessedAt: null,
          hitCount: 0,
          validFrom: memory.createdAt,
          invalidAt: null,
          supersededBy: null,
          archived: false,
        });
        expect(new Date(memory.createdAt).toISOString()).toBe(memory.createdAt);
        expect(await store.get(memory.id)).toEqual(memory);
        const second = await store.create({ scope: 'project:defaults', content }, SUITE_ACTOR);
        expect(second.id).not.toBe(memory.id);
      },
    },
    {
      name: 'create keeps every field it is given and get returns it unchanged',
      async run({ store }) {
        const input: NewMemory = {
          id: 'suite-full-1',
          scope: 'user:alice',
          type: 'feedback',
          name: 'tabs-not-spaces',
          description: 'The user indents with tabs — “always”, even in YAML 🙂',
          content:
            "The user indents with tabs.\n\n**Why:** said so twice; ü, 日本語, emoji 🚀, tab\there.\n**How to apply:** '; DROP TABLE memories; --",
          importance: 0.9,
          source: { sessionId: 'session-1', turnId: 'turn-7', origin: 'cli' },
          createdAt: '2024-03-01T10:00:00.000Z',
          updatedAt: '2024-03-02T10:00:00.000Z',
          lastAccessedAt: '2024-03-03T10:00:00.000Z',
          hitCount: 4,
          validFrom: '2024-02-01T00:00:00.000Z',
          invalidAt: null,
          supersededBy: null,
          archived: false,
        };
        const created = await store.create(input, SUITE_ACTOR);
        expect(created).toEqual(input);
        expect(await store.get('suite-full-1')).toEqual(input);

        const shifted = await store.create(
          {
            scope: 'global',
            content: 'Times given with an offset are stored in UTC.',
            createdAt: '2024-03-01T12:00:00+02:00',
          },
          SUITE_ACTOR,
        );
        expect(shifted.createdAt).toBe('2024-03-01T10:00:00.000Z');
        expect((await store.get(shifted.id))?.createdAt).toBe('2024-03-01T10:00:00.000Z');
      },
    },
    {
      name: 'update changes only the patched fields and keeps identity',
      async run({ store }) {
        const original = await store.create(
          {
            scope: 'project:update',
            content: 'The API listens on port 8080.',
            importance: 0.4,
            source: { sessionId: 'session-1' },
            createdAt: '2024-01-01T00:00:00.000Z',
          },
          SUITE_ACTOR,
        );
        const updated = await store.update(
          original.id,
          { content: 'The API listens on port 9090.', importance: 0.8, type: 'reference' },
          SUITE_ACTOR,
        );
        expect(updated).toEqual({
          ...original,
          content: 'The API listens on port 9090.',
          importance: 0.8,
          type: 'reference',
          updatedAt: expect.any(String),
        });
        expect(Date.parse(updated.updatedAt)).toBeGreaterThan(Date.parse(original.updatedAt));
        expect(await store.get(original.id)).toEqual(updated);

        const renamed = await store.update(
          original.id,
          { name: 'api-port', description: 'Port of the API server.', source: null },
          SUITE_ACTOR,
        );
        expect(renamed).toEqual({
          ...updated,
          name: 'api-port',
          description: 'Port of the API server.',
          source: null,
          updatedAt: renamed.updatedAt,
        });
        expect(await store.get(original.id)).toEqual(renamed);
      },
    },
    {
      name: 'delete removes the memory and nothing else',
      async run({ store }) {
        const kept = await store.create({ scope: 'project:delete', content: 'This one stays.' }, SUITE_ACTOR);
        const gone = await store.create({ scope: 'project:delete', content: 'This one goes.' }, SUITE_ACTOR);
        await store.delete(gone.id, SUITE_ACTOR);
        expect(await store.get(gone.id)).toBeUndefined();
        expect(await store.get(kept.id)).toEqual(kept);
        expect(sortedIds(await store.list(everything(['project:delete'])))).toEqual([kept.id]);
        await expectEngramError(() => store.delete(gone.id, SUITE_ACTOR), 'NOT_FOUND');
      },
    },
    ...writeRefusalCases,
    {
      name: 'invalidate marks a memory no longer true, links what superseded it, and refuses a missing successor',
      async run({ store }) {
        const old = await store.create({ scope: 'project:db', content: 'The database is PostgreSQL 14.' }, SUITE_ACTOR);
        const replacement = await store.create(
          { scope: 'project:db', content: 'The database is PostgreSQL 15.' },
          SUITE_ACTOR,
        );
        const invalidated = await store.invalidate(old.id, { supersededBy: replacement.id }, SUITE_ACTOR);
        expect(invalidated).toEqual({
          ...old,
          invalidAt: expect.any(String),
          supersededBy: replacement.id,
          updatedAt: expect.any(String),
        });
        expect(Number.isNaN(Date.parse(invalidated.invalidAt!))).toBe(false);
        expect(await store.get(old.id)).toEqual(invalidated);
        expect(sortedIds(await store.list({ scopes: ['project:db'] }))).toEqual([replacement.id]);

        const other = await store.create({ scope: 'project:db', content: 'The replica is read-only.' }, SUITE_ACTOR);
        const before = await fingerprint(store, ['project:db']);
        await expectEngramError(
          () => store.invalidate(other.id, { supersededBy: 'suite-missing' }, SUITE_ACTOR),
          'INVALID_INPUT',
        );
        expect(await fingerprint(store, ['project:db'])).toEqual(before);
      },
    },
    {
      name: 'writes are visible to another connection opened from the url and survive its close',
      async run({ store, url }) {
        const first = await store.create(
          { scope: 'project:persist', content: 'Written by the first connection.' },
          SUITE_ACTOR,
        );
        const second = await openStore(url);
        let secondWrote: Memory;
        try {
          expect(await second.get(first.id)).toEqual(first);
          secondWrote = await second.create(
            { scope: 'project:persist', content: 'Written by the second connection.' },
            SUITE_ACTOR,
          );
        } finally {
          await second.close();
        }
        expect(await store.get(secondWrote.id)).toEqual(secondWrote);
        const third = await openStore(url);
        try {
          expect(sortedIds(await third.list(everything(['project:persist'])))).toEqual(sortedIds([first, secondWrote]));
        } finally {
          await third.close();
        }
      },
    },
    {
      name: 'a closed store refuses work with STORE_CLOSED',
      async run({ url }) {
        const other = await openStore(url);
        const memory = await other.create({ scope: 'global', content: 'Written before closing.' }, SUITE_ACTOR);
        await other.close();
        await expectEngramError(
          () => other.create({ scope: 'global', content: 'Written after closing.' }, SUITE_ACTOR),
          'STORE_CLOSED',
        );
        await expectEngramError(() => other.get(memory.id), 'STORE_CLOSED');
        await expectEngramError(() => other.list({ scopes: ['global'] }), 'STORE_CLOSED');
        await expectEngramError(
          () => other.searchText({ scopes: ['global'], terms: ['written'], limit: 5 }),
          'STORE_CLOSED',
        );
      },
    },
    {
      name: 'info names the backend and its schema version',
      async run({ store }) {
        const info = store.info();
        expect(info.backend).toMatch(/\S/);
        expect(Number.isInteger(info.schemaVersion) && info.schemaVersion >= 1).toBe(true);
      },
    },
  ],
});
