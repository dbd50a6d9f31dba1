import { expect } from 'vitest';
import { MEMORY_TYPES, type Memory, type NewMemory } from '../../memory/memory.js';
import type { Scope } from '../../memory/scope.js';
import type { MemoryFilter, MemoryStore, TextSearch } from '../../contracts/memory-store.js';
import { createRandomSource, SUITE_ACTOR, type RandomSource, storeCaseGroup } from '../store-suite-support.js';

/**
 * Twenty scopes chosen to trip naive filters: prefixes of each other (`app`, `app2`, `app/sub`),
 * case variants, LIKE wildcards (`a_b` vs `axb`, `100%`), and ids that contain `:`.
 */
const SCOPES: readonly Scope[] = [
  'global',
  'user:alice',
  'user:alice2',
  'user:Alice',
  'user:bob',
  'project:app',
  'project:app2',
  'project:App',
  'project:app/sub',
  'project:github.com/acme/app',
  'project:a_b',
  'project:axb',
  'project:100%',
  'project:1000',
  'session:1',
  'session:10',
  'session:s-1',
  'session:s-1:x',
  'session:abc',
  'session:ABC',
];
/** A scope with no memories, asked for now and then. */
const EMPTY_SCOPE: Scope = 'project:nothing-here';

/** Shared vocabulary: distinct words that no stemmer folds together and no stop list drops. */
const VOCABULARY = [
  'kestrel',
  'basalt',
  'quinoa',
  'marimba',
  'tundra',
  'zephyr',
  'obsidian',
  'lantern',
  'walrus',
  'saffron',
  'glacier',
  'harbor',
  'meadow',
  'cobalt',
  'falcon',
  'juniper',
  'pepper',
  'violet',
  'canyon',
  'ember',
  'orchid',
  'pixel',
  'quartz',
  'raven',
  'summit',
  'thistle',
  'umber',
  'velvet',
  'willow',
  'yonder',
] as const;
const ABSENT_WORD = 'xylophonist';

const MEMORIES_PER_SCOPE = 30;
const QUERY_COUNT = 10_000;
const SEED = 20_240_601;
const BASE_TIME = Date.parse('2024-01-01T00:00:00.000Z');
const MINUTE = 60_000;
const ORDERS = ['updated-desc', 'created-asc', 'created-desc', 'importance-desc'] as const;
const MODES = ['exclude', 'include', 'only'] as const;

interface Seeded {
  memory: Memory;
  words: Set<string>;
}

function seedInputs(random: RandomSource): NewMemory[] {
  const inputs: NewMemory[] = [];
  let index = 0;
  for (const scope of SCOPES) {
    for (let count = 0; count < MEMORIES_PER_SCOPE; count += 1) {
      const words = Array.from({ length: random.integer(4, 10) }, () => random.pick(VOCABULARY));
      const createdAt = BASE_TIME + index * MINUTE;
      const accessed =
        random.next() < 0.4 ? new Date(createdAt + random.integer(1, 2_000) * MINUTE).toISOString() : null;
      inputs.push({
        scope,
        type: random.pick(MEMORY_TYPES),
        name: `seed-${index}`,
        content: `${words.join(' ')}.`,
        importance: random.integer(0, 10) / 10,
        createdAt: new Date(createdAt).toISOString(),
        lastAccessedAt: accessed,
        hitCount: accessed === null ? 0 : random.integer(1, 9),
        archived: random.next() < 0.15,
        invalidAt: random.next() < 0.15 ? new Date(createdAt + 30 * MINUTE).toISOString() : null,
      });
      index += 1;
    }
  }
  return inputs;
}

function randomFilter(random: RandomSource, scopes: Scope[], total: number): MemoryFilter {
  const filter: MemoryFilter = { scopes };
  const instant = (): string => new Date(BASE_TIME + random.integer(0, total + 2_000) * MINUTE + 30_000).toISOString();
  if (random.next() < 0.3) filter.types = random.sample(MEMORY_TYPES, random.integer(1, 2));
  if (random.next() < 0.4) filter.archived = random.pick(MODES);
  if (random.next() < 0.4) filter.invalid = random.pick(MODES);
  if (random.next() < 0.2) filter.importanceBelow = random.pick([0.25, 0.55, 0.85]);
  if (random.next() < 0.15) filter.updatedBefore = instant();
  if (random.next() < 0.15) filter.accessedBefore = instant();
  if (random.next() < 0.4) filter.order = random.pick(ORDERS);
  if (random.next() < 0.3) filter.limit = random.integer(0, 25);
  if (random.next() < 0.15) filter.offset = random.integer(0, 25);
  return filter;
}

function keeps(mode: MemoryFilter['archived'], flagged: boolean): boolean {
  if (mode === 'include') return true;
  if (mode === 'only') return flagged;
  return !flagged;
}

function matchesFilter(memory: Memory, filter: MemoryFilter): boolean {
  if (!filter.scopes.includes(memory.scope)) return false;
  if (filter.types && !filter.types.includes(memory.type)) return false;
  if (!keeps(filter.archived, memory.archived)) return false;
  if (!keeps(filter.invalid, memory.invalidAt !== null)) return false;
  if (filter.importanceBelow !== undefined && !(memory.importance < filter.importanceBelow)) return false;
  if (filter.updatedBefore !== undefined && !(Date.parse(memory.updatedAt) < Date.parse(filter.updatedBefore)))
    return false;
  const accessed = memory.lastAccessedAt ?? memory.createdAt;
  if (filter.accessedBefore !== undefined && !(Date.parse(accessed) < Date.parse(filter.accessedBefore))) return false;
  return true;
}

function sortForOrder(memories: Memory[], order: MemoryFilter['order']): Memory[] {
  const byTime = (field: 'createdAt' | 'updatedAt', direction: 1 | -1) => (a: Memory, b: Memory) =>
    direction * (Date.parse(a[field]) - Date.parse(b[field]));
  switch (order ?? 'updated-desc') {
    case 'created-asc':
      return [...memories].sort(byTime('createdAt', 1));
    case 'created-desc':
      return [...memories].sort(byTime('createdAt', -1));
    case 'importance-desc':
      return [...memories].sort((a, b) => b.importance - a.importance);
    default:
      return [...memories].sort(byTime('updatedAt', -1));
  }
}

/** Checks one query against the oracle; returns a description of what went wrong, if anything. */
async function checkQuery(store: MemoryStore, random: RandomSource, seeded: Seeded[]): Promise<string | undefined> {
  const scopes = random.sample([...SCOPES, EMPTY_SCOPE], random.integer(1, 3));
  const inScopes = (memory: Memory): boolean => scopes.includes(memory.scope);
  const outside = (memories: Memory[]): Memory | undefined => memories.find((memory) => !inScopes(memory));
  const roll = random.next();

  if (roll < 0.3) {
    const filter = randomFilter(random, scopes, seeded.length);
    const found = await store.list(filter);
    const leak = outside(found);
    if (leak) return `list ${JSON.stringify(filter)} returned ${leak.id} of ${leak.scope}`;
    const expected = sortForOrder(
      seeded.map((entry) => entry.memory).filter((memory) => matchesFilter(memory, filter)),
      filter.order,
    );
    const offset = filter.offset ?? 0;
    const window = expected.slice(offset, filter.limit === undefined ? undefined : offset + filter.limit);
    if (filter.order === 'importance-desc') {
      // Ties in importance may be broken differently per backend: compare the importance sequence only.
      const want = window.map((memory) => memory.importance).join(',');
      const got = found.map((memory) => memory.importance).join(',');
      const allowed = new Set(expected.map((memory) => memory.id));
      if (want !== got || found.some((memory) => !allowed.has(memory.id)))
        return `list ${JSON.stringify(filter)} gave importances ${got}, wanted ${want}`;
    } else if (found.map((memory) => memory.id).join(',') !== window.map((memory) => memory.id).join(',')) {
      return `list ${JSON.stringify(filter)} returned ${found.length} memories, wanted ${window.length} in order`;
    }
    return undefined;
  }

  if (roll < 0.5) {
    const { limit: _limit, offset: _offset, order: _order, ...filter } = randomFilter(random, scopes, seeded.length);
    const expected = seeded.filter((entry) => matchesFilter(entry.memory, filter)).length;
    const counted = await store.count(filter);
    return counted === expected ? undefined : `count ${JSON.stringify(filter)} = ${counted}, wanted ${expected}`;
  }

  if (roll < 0.85) {
    const terms: string[] = random.sample<string>(VOCABULARY, random.integer(1, 3));
    if (random.next() < 0.1) terms.push(ABSENT_WORD);
    const query: TextSearch = { scopes, terms, limit: random.pick([1, 3, 10, 1_000]) };
    const match = random.pick(['any', 'all', undefined] as const);
    if (match !== undefined) query.match = match;
    if (random.next() < 0.25) query.types = random.sample(MEMORY_TYPES, random.integer(1, 3));
    const hits = await store.searchText(query);
    const leak = outside(hits.map((hit) => hit.memory));
    if (leak) return `searchText ${JSON.stringify(query)} returned ${leak.id} of ${leak.scope}`;
    const expected = new Set(
      seeded
        .filter(({ memory, words }) => {
          if (!inScopes(memory) || memory.archived || memory.invalidAt !== null) return false;
          if (query.types && !query.types.includes(memory.type)) return false;
          return query.match === 'all' ? terms.every((term) => words.has(term)) : terms.some((term) => words.has(term));
        })
        .map(({ memory }) => memory.id),
    );
    const unexpected = hits.find((hit) => !expected.has(hit.memory.id));
    if (unexpected) return `searchText ${JSON.stringify(query)} returned ${unexpected.memory.id}, which does not match`;
    if (hits.length !== Math.min(query.limit, expected.size)) {
      return `searchText ${JSON.stringify(query)} returned ${hits.length} hits, wanted ${Math.min(query.limit, expected.size)}`;
    }
    return undefined;
  }

  if (roll < 0.95) {
    const target = random.pick(seeded).memory;
    const found = await store.get(target.id, scopes);
    const shouldFind = inScopes(target);
    if (shouldFind && found?.id !== target.id) return `get ${target.id} in ${JSON.stringify(scopes)} found nothing`;
    if (!shouldFind && found !== undefined)
      return `get ${target.id} of ${target.scope} found it in ${JSON.stringify(scopes)}`;
    return undefined;
  }

  const stats = await store.stats(scopes);
  const foreign = Object.keys(stats.byScope).find((scope) => !scopes.includes(scope));
  if (foreign) return `stats ${JSON.stringify(scopes)} counted scope ${foreign}`;
  const expected = seeded.filter((entry) => inScopes(entry.memory)).length;
  return stats.total === expected
    ? undefined
    : `stats ${JSON.stringify(scopes)} total ${stats.total}, wanted ${expected}`;
}

export const scopeIsolationCases = storeCaseGroup({
  title: 'scope isolation',
  roles: [],
  cases: [
    {
      name: `no read returns a memory outside the scopes it names (${QUERY_COUNT.toLocaleString('en')} random queries over ${SCOPES.length} scopes)`,
      timeoutMs: 120_000,
      async run({ store }) {
        const random = createRandomSource(SEED);
        const memories = await store.createMany(seedInputs(random), SUITE_ACTOR);
        const seeded: Seeded[] = memories.map((memory) => ({
          memory,
          words: new Set(memory.content.toLowerCase().match(/[a-z]+/g) ?? []),
        }));
        const problems: string[] = [];
        for (let query = 0; query < QUERY_COUNT && problems.length < 10; query += 1) {
          const problem = await checkQuery(store, random, seeded);
          if (problem) problems.push(`query ${query} (seed ${SEED}): ${problem}`);
        }
        expect(problems).toEqual([]);
      },
    },
  ],
});
