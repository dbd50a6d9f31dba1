// Writes the store must refuse: invalid scopes and fields, oversized content, taken ids, unknown
// ids, transitions that make no sense, and a batch with one bad item. Each refusal has the right
// code and leaves the store exactly as it was.
import { expect } from 'vitest';
import type { NewMemory } from '../../memory/memory.js';
import { expectEngramError, fingerprint, SUITE_ACTOR, type StoreCaseDefinition } from '../store-suite-support.js';

const TEN_MEGABYTES = 10 * 1024 * 1024;

/** Refused writes; the writes group runs them after the writes that succeed on their own. */
export const writeRefusalCases: ReadonlyArray<StoreCaseDefinition<never>> = [
  {
    name: 'create refuses invalid scopes with INVALID_SCOPE and stores nothing',
    async run({ store }) {
      await store.create({ scope: 'project:valid', content: 'A memory that was there before.' }, SUITE_ACTOR);
      const before = await fingerprint(store, ['project:valid']);
      const scopes = ['team:x', 'project:', '', 'GLOBAL', 'project:has space', 'user:"quoted"', 'session', ':id'];
      for (const scope of scopes) {
        await expectEngramError(
          () => store.create({ scope, content: `Scope ${scope} is not valid.` }, SUITE_ACTOR),
          'INVALID_SCOPE',
        );
      }
      await expectEngramError(
        () => store.create({ content: 'No scope at all.' } as unknown as NewMemory, SUITE_ACTOR),
        'INVALID_SCOPE',
      );
      expect(await fingerprint(store, ['project:valid'])).toEqual(before);
    },
  },
  {
    name: 'create refuses invalid fields with INVALID_INPUT and stores nothing',
    async run({ store }) {
      await store.create({ scope: 'project:valid', content: 'A memory that was there before.' }, SUITE_ACTOR);
      const before = await fingerprint(store, ['project:valid']);
      const valid = { scope: 'project:valid', content: 'A perfectly fine fact.' };
      const invalidInputs: Array<Record<string, unknown>> = [
        { ...valid, importance: 7 },
        { ...valid, importance: -1 },
        { ...valid, importance: Number.NaN },
        { ...valid, importance: Number.POSITIVE_INFINITY },
        { ...valid, importance: '0.5' },
        { ...valid, type: 'opinion' },
        { ...valid, content: 'null byte \u0000 inside' },
        { ...valid, content: 'escape \u001b[31m red' },
        { ...valid, content: '' },
        { ...valid, content: '   \n  ' },
        { ...valid, content: 42 },
        { ...valid, name: 'Has Spaces' },
        { ...valid, description: 'two\nlines' },
        { ...valid, createdAt: 'yesterday' },
        { ...valid, id: 'bad id with spaces' },
      ];
      for (const input of invalidInputs) {
        await expectEngramError(() => store.create(input as unknown as NewMemory, SUITE_ACTOR), 'INVALID_INPUT');
      }
      expect(await fingerprint(store, ['project:valid'])).toEqual(before);
    },
  },
  {
    name: 'create refuses 10 MB content with PAYLOAD_TOO_LARGE and stores nothing',
    async run({ store }) {
      const existing = await store.create(
        { scope: 'project:valid', content: 'A memory that was there before.' },
        SUITE_ACTOR,
      );
      const before = await fingerprint(store, ['project:valid']);
      const huge = 'word '.repeat(TEN_MEGABYTES / 5);
      await expectEngramError(
        () => store.create({ scope: 'project:valid', content: huge }, SUITE_ACTOR),
        'PAYLOAD_TOO_LARGE',
      );
      await expectEngramError(
        () =>
          store.createMany(
            [
              { scope: 'project:valid', content: 'small' },
              { scope: 'project:valid', content: huge },
            ],
            SUITE_ACTOR,
          ),
        'PAYLOAD_TOO_LARGE',
      );
      await expectEngramError(() => store.update(existing.id, { content: huge }, SUITE_ACTOR), 'PAYLOAD_TOO_LARGE');
      expect(await fingerprint(store, ['project:valid'])).toEqual(before);
    },
  },
  {
    name: 'create refuses an id that already exists with CONFLICT and keeps the original',
    async run({ store }) {
      const original = await store.create(
        { id: 'suite-duplicate', scope: 'global', content: 'The original fact.' },
        SUITE_ACTOR,
      );
      const before = await fingerprint(store, ['global', 'project:other']);
      await expectEngramError(
        () => store.create({ id: 'suite-duplicate', scope: 'project:other', content: 'An impostor.' }, SUITE_ACTOR),
        'CONFLICT',
      );
      expect(await store.get('suite-duplicate')).toEqual(original);
      expect(await fingerprint(store, ['global', 'project:other'])).toEqual(before);
    },
  },
  {
    name: 'createMany writes all or none',
    async run({ store }) {
      const created = await store.createMany(
        [
          { scope: 'project:batch', content: 'First fact of the batch.' },
          { scope: 'user:batch', content: 'Second fact of the batch.', type: 'user' },
          { scope: 'global', content: 'Third fact of the batch.' },
        ],
        SUITE_ACTOR,
      );
      expect(created.map((memory) => memory.content)).toEqual([
        'First fact of the batch.',
        'Second fact of the batch.',
        'Third fact of the batch.',
      ]);
      expect(new Set(created.map((memory) => memory.id)).size).toBe(3);
      for (const memory of created) expect(await store.get(memory.id)).toEqual(memory);
      expect(await store.createMany([], SUITE_ACTOR)).toEqual([]);

      const scopes = ['project:batch', 'user:batch', 'global'];
      const before = await fingerprint(store, scopes);
      const good = (index: number): NewMemory => ({
        scope: 'project:batch',
        content: `Would-be fact number ${index}.`,
      });
      await expectEngramError(
        () => store.createMany([good(1), good(2), { ...good(3), importance: 7 }], SUITE_ACTOR),
        'INVALID_INPUT',
      );
      await expectEngramError(
        () => store.createMany([good(4), { ...good(5), scope: 'team:x' }], SUITE_ACTOR),
        'INVALID_SCOPE',
      );
      // The clash is only found in the database, after the first item was written: it must roll back.
      await expectEngramError(
        () => store.createMany([good(6), { ...good(7), id: created[0]!.id }], SUITE_ACTOR),
        'CONFLICT',
      );
      await expectEngramError(
        () =>
          store.createMany(
            [
              { ...good(8), id: 'suite-twice' },
              { ...good(9), id: 'suite-twice' },
            ],
            SUITE_ACTOR,
          ),
        'CONFLICT',
      );
      expect(await fingerprint(store, scopes)).toEqual(before);
    },
  },
  {
    name: 'update refuses unknown fields and invalid values and changes nothing',
    async run({ store }) {
      const memory = await store.create({ scope: 'project:update', content: 'The cache lives in Redis.' }, SUITE_ACTOR);
      const before = await fingerprint(store, ['project:update']);
      const invalidPatches: Array<Record<string, unknown>> = [
        { scope: 'global' },
        { id: 'another-id' },
        { archived: true },
        { hitCount: 9 },
        { invalidAt: '2024-01-01T00:00:00.000Z' },
        { bogus: 1 },
        { content: 'fine', colour: 'blue' },
        { importance: 7 },
        { importance: Number.NaN },
        { type: 'opinion' },
        { content: 'null \u0000 byte' },
        { content: '' },
      ];
      for (const patch of invalidPatches) {
        await expectEngramError(() => store.update(memory.id, patch as never, SUITE_ACTOR), 'INVALID_INPUT');
      }
      expect(await fingerprint(store, ['project:update'])).toEqual(before);
      expect(await store.history(memory.id)).toHaveLength(1);
    },
  },
  {
    name: 'changes to an unknown id fail with NOT_FOUND and record nothing',
    async run({ store }) {
      await store.create({ scope: 'global', content: 'Something that exists.' }, SUITE_ACTOR);
      const before = await fingerprint(store, ['global']);
      const missing = 'suite-missing';
      await expectEngramError(() => store.update(missing, { importance: 0.9 }, SUITE_ACTOR), 'NOT_FOUND');
      await expectEngramError(() => store.invalidate(missing, {}, SUITE_ACTOR), 'NOT_FOUND');
      await expectEngramError(() => store.archive(missing, SUITE_ACTOR), 'NOT_FOUND');
      await expectEngramError(() => store.restore(missing, SUITE_ACTOR), 'NOT_FOUND');
      await expectEngramError(() => store.delete(missing, SUITE_ACTOR), 'NOT_FOUND');
      expect(await store.get(missing)).toBeUndefined();
      expect(await store.history(missing)).toEqual([]);
      expect(await store.getChange('suite-missing-change')).toBeUndefined();
      expect(await fingerprint(store, ['global'])).toEqual(before);
    },
  },
  {
    name: 'transitions that make no sense are refused with CONFLICT and change nothing',
    async run({ store }) {
      const archived = await store.create({ scope: 'global', content: 'Archived once already.' }, SUITE_ACTOR);
      await store.archive(archived.id, SUITE_ACTOR);
      const active = await store.create({ scope: 'global', content: 'Never archived.' }, SUITE_ACTOR);
      const invalid = await store.create({ scope: 'global', content: 'Invalid once already.' }, SUITE_ACTOR);
      await store.invalidate(invalid.id, {}, SUITE_ACTOR);
      const before = await fingerprint(store, ['global']);
      await expectEngramError(() => store.archive(archived.id, SUITE_ACTOR), 'CONFLICT');
      await expectEngramError(() => store.restore(active.id, SUITE_ACTOR), 'CONFLICT');
      await expectEngramError(() => store.invalidate(invalid.id, {}, SUITE_ACTOR), 'CONFLICT');
      expect(await fingerprint(store, ['global'])).toEqual(before);
    },
  },
];
