import { expect } from 'vitest';
import type { NewMemory } from '../../memory/memory.js';
import type { TextHit, TextSearch } from '../../contracts/memory-store.js';
import { describeInput, outcomeOf, sortedIds, SUITE_ACTOR, storeCaseGroup } from '../store-suite-support.js';

const hitIds = (hits: TextHit[]): string[] => sortedIds(hits.map((hit) => hit.memory));

/** Terms that are query syntax in FTS5, tsquery or SQL; the store must treat them as plain words. */
const HOSTILE_TERMS = [
  '"foo AND (',
  'NEAR',
  'NEAR(foo bar)',
  'NEAR/2',
  '*',
  '^',
  '-',
  'foo*',
  '^foo',
  '-foo',
  'foo-bar',
  'AND',
  'OR',
  'NOT',
  'foo OR bar',
  '"',
  '""',
  "'",
  '(',
  ')',
  '()',
  '{name content}: foo',
  'content:secret',
  'foo:',
  ':',
  '+',
  '&',
  '|',
  '!',
  '<->',
  'foo:*',
  "'; DROP TABLE memories; --",
  '%',
  '_',
  '\\',
  '\u0000',
  'zero\u0000byte',
  '🙂',
  'Ünïcödé',
  'word '.repeat(2_000),
];

export const searchCases = storeCaseGroup({
  title: 'full-text search',
  roles: [],
  cases: [
    {
      name: 'searchText stems words: running finds run and runs',
      async run({ store }) {
        const scope = 'project:stems';
        const [runs, run, manual] = await store.createMany(
          [
            { scope, content: 'The nightly build runs at two in the morning.' },
            { scope, content: 'She went for a run along the river.' },
            { scope, content: 'Deployments are manual and happen on Fridays.' },
          ],
          SUITE_ACTOR,
        );
        expect(hitIds(await store.searchText({ scopes: [scope], terms: ['running'], limit: 10 }))).toEqual(
          sortedIds([runs!, run!]),
        );
        expect(hitIds(await store.searchText({ scopes: [scope], terms: ['run'], limit: 10 }))).toEqual(
          sortedIds([runs!, run!]),
        );
        expect(hitIds(await store.searchText({ scopes: [scope], terms: ['deployment'], limit: 10 }))).toEqual([
          manual!.id,
        ]);
      },
    },
    {
      name: 'searchText searches name, description and content',
      async run({ store }) {
        const scope = 'project:fields';
        const memory = await store.create(
          {
            scope,
            name: 'deploy-checklist',
            description: 'How we ship releases.',
            content: 'Tag, build, sign, upload.',
          },
          SUITE_ACTOR,
        );
        await store.create({ scope, content: 'Unrelated: the coffee machine is on floor three.' }, SUITE_ACTOR);
        for (const term of ['checklist', 'releases', 'upload']) {
          expect(hitIds(await store.searchText({ scopes: [scope], terms: [term], limit: 10 })), term).toEqual([
            memory.id,
          ]);
        }
      },
    },
    {
      name: "searchText match 'any' ranks memories matching more and rarer terms higher",
      async run({ store }) {
        const scope = 'project:ranking';
        const fact = (content: string, index: number): NewMemory => ({
          scope,
          name: `fact-${index}`,
          description: 'A stored fact.',
          content,
        });
        const [both, rare, common] = await store.createMany(
          [
            'Postgres replication uses two standby servers in the west region.',
            'Logical replication feeds two standby servers in the west region.',
            'Postgres backups run from two standby servers in the west region.',
            'Postgres tuning notes for the reporting servers in the east region.',
            'Postgres vacuum settings for the billing servers in the east region.',
            'Postgres connection limits for the search servers in the east region.',
            ...Array.from(
              { length: 10 },
              (_, index) => `Unrelated note ${index} about the office kitchen and its kettle.`,
            ),
          ].map(fact),
          SUITE_ACTOR,
        );
        const hits = await store.searchText({
          scopes: [scope],
          terms: ['postgres', 'replication'],
          match: 'any',
          limit: 20,
        });
        expect(hits).toHaveLength(6);
        expect(hits[0]!.memory.id).toBe(both!.id);
        const position = (id: string): number => hits.findIndex((hit) => hit.memory.id === id);
        expect(position(rare!.id)).toBe(1);
        expect(position(rare!.id)).toBeLessThan(position(common!.id));
        for (const hit of hits) expect(Number.isFinite(hit.relevance)).toBe(true);
        const relevances = hits.map((hit) => hit.relevance);
        expect(relevances).toEqual([...relevances].sort((a, b) => b - a));
        expect(hits[0]!.relevance).toBeGreaterThan(hits[1]!.relevance);
        expect(hits[1]!.relevance).toBeGreaterThan(hits[hits.length - 1]!.relevance);

        const defaultMatch = await store.searchText({ scopes: [scope], terms: ['postgres', 'replication'], limit: 20 });
        expect(hitIds(defaultMatch)).toEqual(hitIds(hits));
      },
    },
    {
      name: "searchText match 'all' requires every term",
      async run({ store }) {
        const scope = 'project:all-terms';
        const [both, , , stemmed] = await store.createMany(
          [
            { scope, content: 'Postgres replication lag is alerted at ten seconds.' },
            { scope, content: 'Postgres backups are kept for thirty days.' },
            { scope, content: 'Replication between regions is asynchronous.' },
            { scope, content: 'The postgres replicas are read-only.' },
          ],
          SUITE_ACTOR,
        );
        const all = await store.searchText({
          scopes: [scope],
          terms: ['postgres', 'replication'],
          match: 'all',
          limit: 10,
        });
        expect(hitIds(all)).toEqual([both!.id]);
        const stems = await store.searchText({
          scopes: [scope],
          terms: ['postgres', 'replica'],
          match: 'all',
          limit: 10,
        });
        expect(hitIds(stems)).toEqual([stemmed!.id]);
        expect(
          await store.searchText({ scopes: [scope], terms: ['postgres', 'kubernetes'], match: 'all', limit: 10 }),
        ).toEqual([]);
      },
    },
    {
      name: 'searchText treats query syntax as plain words and never throws',
      async run({ store }) {
        const scope = 'project:syntax';
        const [near, foo, football] = await store.createMany(
          [
            { scope, content: 'Meet near the station at noon.' },
            { scope, content: 'foo bar baz are placeholder words.' },
            { scope, content: 'Football practice is on Tuesday.' },
            { scope, content: 'The secret handshake is two taps.' },
          ],
          SUITE_ACTOR,
        );
        for (const term of HOSTILE_TERMS) {
          for (const match of ['any', 'all'] as const) {
            const hits = await store.searchText({ scopes: [scope], terms: [term], match, limit: 10 });
            expect(Array.isArray(hits), `${JSON.stringify(term.slice(0, 40))} ${match}`).toBe(true);
            for (const hit of hits) expect(hit.memory.scope).toBe(scope);
          }
        }
        const all = await store.searchText({ scopes: [scope], terms: HOSTILE_TERMS, match: 'any', limit: 10 });
        expect(Array.isArray(all)).toBe(true);

        expect(hitIds(await store.searchText({ scopes: [scope], terms: ['NEAR'], limit: 10 }))).toEqual([near!.id]);
        const prefix = hitIds(await store.searchText({ scopes: [scope], terms: ['foo*'], limit: 10 }));
        expect(prefix).not.toContain(football!.id);
        expect(prefix).toEqual([foo!.id]);
        expect(hitIds(await store.searchText({ scopes: [scope], terms: ['-foo'], limit: 10 }))).toEqual([foo!.id]);
        expect(
          hitIds(await store.searchText({ scopes: [scope], terms: ['(', 'foo', ')'], match: 'any', limit: 10 })),
        ).toEqual([foo!.id]);
      },
    },
    {
      name: 'searchText with no words returns nothing',
      async run({ store }) {
        const scope = 'project:empty-query';
        await store.create({ scope, content: 'Anything at all could match an empty query.' }, SUITE_ACTOR);
        expect(await store.searchText({ scopes: [scope], terms: [], limit: 10 })).toEqual([]);
        expect(await store.searchText({ scopes: [scope], terms: ['', '   '], limit: 10 })).toEqual([]);
        expect(await store.searchText({ scopes: [scope], terms: ['***', '()', '-'], match: 'any', limit: 10 })).toEqual(
          [],
        );
        expect(await store.searchText({ scopes: [scope], terms: [], match: 'all', limit: 10 })).toEqual([]);
        expect(await store.searchText({ scopes: [scope], terms: ['anything'], limit: 0 })).toEqual([]);
      },
    },
    {
      name: 'searchText refuses malformed queries with INVALID_INPUT',
      async run({ store }) {
        const scope = 'project:malformed-query';
        await store.create({ scope, content: 'Something worth finding.' }, SUITE_ACTOR);
        const valid: TextSearch = { scopes: [scope], terms: ['something'], limit: 5 };
        const malformed: Array<Record<string, unknown>> = [
          { terms: 'something' },
          { terms: [42] },
          { terms: [null] },
          { limit: Number.NaN },
          { limit: -1 },
          { match: 'sometimes' },
          { types: ['opinion'] },
        ];
        const outcomes: Record<string, string> = {};
        for (const extra of malformed) {
          outcomes[describeInput(extra)] = await outcomeOf(() =>
            store.searchText({ ...valid, ...extra } as unknown as TextSearch),
          );
        }
        expect(outcomes).toEqual(Object.fromEntries(Object.keys(outcomes).map((key) => [key, 'INVALID_INPUT'])));
      },
    },
    {
      name: 'searchText never returns archived or invalidated memories',
      async run({ store }) {
        const scope = 'project:search-states';
        const active = await store.create(
          { scope, content: 'Active: the zebra crossing is on Main Street.' },
          SUITE_ACTOR,
        );
        const archived = await store.create(
          { scope, content: 'Archived: the zebra enclosure closes at five.' },
          SUITE_ACTOR,
        );
        const invalid = await store.create({ scope, content: 'Invalid: the zebra print shirt is blue.' }, SUITE_ACTOR);
        const both = await store.create({ scope, content: 'Both: the zebra mascot retired.' }, SUITE_ACTOR);
        const seeded = await store.create(
          {
            scope,
            content: 'Seeded archived and invalid: the zebra herd migrated.',
            archived: true,
            invalidAt: '2024-01-01T00:00:00.000Z',
          },
          SUITE_ACTOR,
        );
        await store.archive(archived.id, SUITE_ACTOR);
        await store.invalidate(invalid.id, {}, SUITE_ACTOR);
        await store.invalidate(both.id, {}, SUITE_ACTOR);
        await store.archive(both.id, SUITE_ACTOR);
        for (const match of ['any', 'all'] as const) {
          const hits = await store.searchText({ scopes: [scope], terms: ['zebra'], match, limit: 10 });
          expect(hitIds(hits)).toEqual([active.id]);
        }
        await store.restore(archived.id, SUITE_ACTOR);
        expect(hitIds(await store.searchText({ scopes: [scope], terms: ['zebra'], limit: 10 }))).toEqual(
          sortedIds([active, archived]),
        );
        await store.restore(both.id, SUITE_ACTOR);
        await store.restore(seeded.id, SUITE_ACTOR);
        expect(hitIds(await store.searchText({ scopes: [scope], terms: ['zebra'], limit: 10 }))).toEqual(
          sortedIds([active, archived]),
        );
      },
    },
    {
      name: 'searchText follows updates, deletes and undo of a delete',
      async run({ store }) {
        const scope = 'project:search-index';
        const search = async (term: string): Promise<string[]> =>
          hitIds(await store.searchText({ scopes: [scope], terms: [term], limit: 10 }));
        // Name and description are set so that only the content mentions the plant.
        const memory = await store.create(
          {
            scope,
            name: 'office-greenery',
            description: 'What grows in the office.',
            content: 'The office plant is a fern.',
          },
          SUITE_ACTOR,
        );
        expect(await search('fern')).toEqual([memory.id]);
        await store.update(memory.id, { content: 'The office plant is a cactus.' }, SUITE_ACTOR);
        expect(await search('fern')).toEqual([]);
        expect(await search('cactus')).toEqual([memory.id]);
        await store.recordAccess([memory.id], '2030-01-01T00:00:00.000Z');
        const [hit] = await store.searchText({ scopes: [scope], terms: ['cactus'], limit: 10 });
        expect(hit?.memory.hitCount).toBe(1);
        await store.update(memory.id, { name: 'office-succulent' }, SUITE_ACTOR);
        expect(await search('cactus')).toEqual([memory.id]);
        expect(await search('succulent')).toEqual([memory.id]);
        await store.delete(memory.id, SUITE_ACTOR);
        expect(await search('cactus')).toEqual([]);
        const deletion = (await store.history(memory.id)).find((entry) => entry.action === 'delete')!;
        await store.undo(deletion.id, SUITE_ACTOR);
        expect(await search('cactus')).toEqual([memory.id]);
      },
    },
    {
      name: 'searchText respects limit, types and scopes',
      async run({ store }) {
        const inputs: NewMemory[] = [
          { scope: 'project:a', type: 'user', content: 'The user loves orchid gardens.' },
          { scope: 'project:a', type: 'user', content: 'An orchid was gifted on Monday.' },
          { scope: 'project:a', type: 'project', content: 'The orchid nursery ships on Fridays.' },
          { scope: 'project:a', type: 'reference', content: 'Orchid care guides live in the wiki.' },
          { scope: 'project:b', type: 'user', content: 'Project B also mentions an orchid.' },
        ];
        const [firstUser, secondUser, , , otherScope] = await store.createMany(inputs, SUITE_ACTOR);
        expect(await store.searchText({ scopes: ['project:a'], terms: ['orchid'], limit: 2 })).toHaveLength(2);
        expect(await store.searchText({ scopes: ['project:a'], terms: ['orchid'], limit: 10 })).toHaveLength(4);
        const users = await store.searchText({ scopes: ['project:a'], terms: ['orchid'], types: ['user'], limit: 10 });
        expect(hitIds(users)).toEqual(sortedIds([firstUser!, secondUser!]));
        const both = await store.searchText({
          scopes: ['project:a', 'project:b'],
          terms: ['orchid'],
          types: ['user'],
          limit: 10,
        });
        expect(hitIds(both)).toEqual(sortedIds([firstUser!, secondUser!, otherScope!]));
        expect(await store.searchText({ scopes: ['project:c'], terms: ['orchid'], limit: 10 })).toEqual([]);
      },
    },
  ],
});
