import { describe, expect, it } from 'vitest';
import { DEFAULT_SETTINGS, type Settings } from '../../src/kernel/settings.js';
import type { Memory, NewMemory } from '../../src/memory/memory.js';
import { addSecondHop } from '../../src/recall/second-hop.js';
import { tokenNumbering, tokenNumbers } from '../../src/recall/token-numbers.js';
import { recallHit } from '../support/memory-record.js';
import { useTemporaryStore } from '../support/temporary-store.js';
import { recallInStore, withRecallSettings } from '../support/recall-support.js';

const NOW = '2026-03-01T12:00:00.000Z';

function hit(id: string, content: string, relevance: number): { memory: Memory; relevance: number } {
  return recallHit(relevance, { id, scope: 'project:hop', content, createdAt: NOW });
}

const filler = (count: number) =>
  Array.from({ length: count }, (_, index) => hit(`filler-${index}`, `Nate mentioned pets at lunch ${index}.`, 0.5));

describe('addSecondHop', () => {
  const options = { weight: 0.2, terms: 2, from: 5 };

  it('follows the words several of the best hits share that the question lacks, and lifts the candidates that hold them', () => {
    const hits = [
      hit('a', 'Nate: my pets are two turtles and they love their tank.', 3),
      hit('b', 'Nate: pets make me happy, the turtles most of all, the tank too.', 2.5),
      hit('c', 'Nate: pets at the office would be fun.', 2),
      ...filler(12),
      hit('lamp', 'Nate: the turtles got a new heat lamp.', 0.4),
    ];
    const result = addSecondHop(hits, ['pets', 'nate'], options);
    const byId = new Map(result.map((entry) => [entry.memory.id, entry]));
    // "turtles" and "tank" are in two of the best five and in few of the 16 candidates: both are
    // followed, each weighed log(1 + 16 ÷ holders); "nate" and "pets" are asked; "fun" is in one only.
    const turtles = Math.log(1 + 16 / 3);
    const tank = Math.log(1 + 16 / 2);
    expect(byId.get('a')).toMatchObject({ secondHop: { via: ['tank', 'turtles'] } });
    expect(byId.get('a')!.relevance).toBeCloseTo(3 + 0.2 * 3, 12);
    expect(byId.get('lamp')!.secondHop!.via).toEqual(['turtles']);
    expect(byId.get('lamp')!.relevance).toBeCloseTo(0.4 + (0.2 * 3 * turtles) / (turtles + tank), 12);
    expect(byId.get('c')).toEqual(hits[2]);
    // The lamp, which shares only the person with the question, now ranks above the twelve fillers.
    expect(result.map((entry) => entry.memory.id).indexOf('lamp')).toBe(3);
    expect(hits.map((entry) => entry.memory.id).indexOf('lamp')).toBe(15);
  });

  it('follows nothing most candidates share, nothing one hit alone says, and nothing when off', () => {
    // "lunch" is in twelve of fourteen candidates.
    const common = [hit('x', 'lunch plans lunch', 2), hit('y', 'lunch again', 1.5), ...filler(12)];
    expect(addSecondHop(common, ['pets'], options)).toEqual(common);
    const alone = [hit('a', 'Nate: turtles.', 2), hit('b', 'Nate: a dog.', 1)];
    expect(addSecondHop(alone, ['nate'], options)).toEqual(alone);
    const hits = [hit('a', 'turtles tank', 2), hit('b', 'turtles tank', 1), ...filler(12)];
    expect(addSecondHop(hits, ['pets'], { ...options, weight: 0 })).toEqual(hits);
    expect(() => addSecondHop(hits, ['pets'], { ...options, weight: 2 })).toThrow(/second-hop weight/);
    expect(() => addSecondHop(hits, ['pets'], { ...options, terms: 0 })).toThrow(/second-hop terms/);
  });
  it('follows the same words after the process-wide token numbering has started again', () => {
    // A memory of sixty words no other memory holds, and only a candidate: it lends the hop nothing.
    const unrelated = (prefix: string) =>
      hit(
        'extra',
        Array.from({ length: 60 }, (_, index) => `${prefix}${String.fromCharCode(97 + (index % 26))}${index}`).join(
          ' ',
        ),
        0.3,
      );
    const hits = [
      hit('a', 'Nate: my pets are two turtles and they love their tank.', 3),
      hit('b', 'Nate: pets make me happy, the turtles most of all, the tank too.', 2.5),
      ...filler(12),
      hit('lamp', 'Nate: the turtles got a new heat lamp.', 0.4),
    ];
    const outcome = (result: ReturnType<typeof addSecondHop>) =>
      result.map((entry) => [entry.memory.id, entry.relevance, entry.secondHop?.via]);
    const before = outcome(addSecondHop([...hits, unrelated('old')], ['pets', 'nate'], options));
    expect(before.find(([id]) => id === 'lamp')![2]).toEqual(['turtles']);
    // Past its limit the numbering starts again. The numbers kept beside the memories above are
    // stale: the new numbering gives the first numbers to a new memory's words, which the stale
    // numbers would take for "turtles" and "tank".
    const numbering = tokenNumbering();
    tokenNumbers(Array.from({ length: 200_000 }, (_, index) => `filling${index}`));
    expect(tokenNumbering()).toBe(numbering + 1);
    expect(outcome(addSecondHop([...hits, unrelated('new')], ['pets', 'nate'], options))).toEqual(before);
  });
});

describe('second hop in recall (SQLite)', () => {
  const sqlite = useTemporaryStore(Date.parse(NOW));

  const write = (content: string): NewMemory => ({ scope: 'project:hop', content, createdAt: NOW });

  it('finds the memory that names what the best hits name, though it shares only the person with the question', async () => {
    await sqlite.store.createMany(
      [
        write('Nate has pets: two turtles that live in a big tank.'),
        write('Nate says his pets, the turtles, calm him down after a tank clean.'),
        write('Nate bought a heat lamp for the turtles.'),
        ...Array.from({ length: 10 }, (_, index) => write(`Nate played a tournament game number ${index}.`)),
      ],
      { actor: 'test' },
    );
    const query = 'What pets does Nate have?';
    const lamp = async (settings: Settings): Promise<number> => {
      const memories = await recallInStore(sqlite.store, query, { scope: 'project:hop', at: NOW, settings, topK: 20 });
      return memories.findIndex((entry) => entry.memory.content.includes('heat lamp'));
    };
    // Without the hop the lamp ties with ten memories that only say "Nate"; with it, it comes third.
    expect(await lamp(withRecallSettings({ secondHopWeight: 0 }))).toBeGreaterThan(2);
    expect(await lamp(DEFAULT_SETTINGS)).toBe(2);
    const third = (await recallInStore(sqlite.store, query, { scope: 'project:hop', at: NOW }))[2]!;
    expect(third.parts.signals?.secondHop?.via).toContain('turtles');
    expect(third.parts.signals!.secondHop!.added).toBeGreaterThan(0);
  });
});
