import { describe, expect, it } from 'vitest';
import { addConversationContext } from '../../src/recall/conversation-context.js';
import type { Memory, MemorySource, NewMemory } from '../../src/memory/memory.js';
import { DEFAULT_SETTINGS, type Settings } from '../../src/kernel/settings.js';
import { recallHit } from '../support/memory-record.js';
import { useTemporaryStore } from '../support/temporary-store.js';
import { recallInStore, withRecallSettings } from '../support/recall-support.js';

const NOW = '2026-03-01T12:00:00.000Z';
const WEIGHTS = { neighbourWeight: 0, sessionWeight: 0, sittingWeight: 0.4, sittingMinutes: 60 };

function hit(
  id: string,
  relevance: number,
  createdAt: string,
  options: { scope?: string; source?: MemorySource | null } = {},
): { memory: Memory; relevance: number } {
  return recallHit(relevance, {
    id,
    scope: (options.scope ?? 'project:a') as Memory['scope'],
    source: options.source ?? null,
    createdAt,
  });
}

describe('sitting context (memories without a source session)', () => {
  it('lends a hit a share of the best other hit written within the window, in its scope only', () => {
    const hits = [
      hit('strong', 10, '2026-02-01T10:00:00.000Z'),
      hit('later-that-day', 3, '2026-02-01T10:40:00.000Z'),
      hit('next-week', 3.5, '2026-02-08T10:00:00.000Z'),
      hit('other-scope', 3.2, '2026-02-01T10:10:00.000Z', { scope: 'project:b' }),
    ];
    const result = addConversationContext(hits, WEIGHTS);
    expect(result.map((entry) => entry.memory.id)).toEqual(['strong', 'later-that-day', 'next-week', 'other-scope']);
    const later = result[1]!;
    expect(later.relevance).toBeCloseTo(3 + 0.4 * 10, 12);
    expect(later.context).toEqual({ own: 3, sitting: { id: 'strong', added: 0.4 * 10 } });
    // The strong hit borrows from the weaker one in its sitting too (the best other there).
    expect(result[0]!.context?.sitting).toEqual({ id: 'later-that-day', added: 0.4 * 3 });
    expect(result[2]!.context).toBeUndefined();
    expect(result[3]!.context).toBeUndefined();
  });

  it('leaves memories with a source session to session context, and does nothing when off', () => {
    const sourced = [
      hit('strong', 10, NOW, { source: { sessionId: 's1', turnId: '1' } }),
      hit('weak', 2, NOW, { source: { sessionId: 's2', turnId: '1' } }),
    ];
    expect(addConversationContext(sourced, WEIGHTS)).toEqual(sourced);
    const plain = [hit('a', 5, NOW), hit('b', 1, NOW)];
    expect(addConversationContext(plain, { ...WEIGHTS, sittingWeight: 0 })).toEqual(plain);
    expect(() => addConversationContext(plain, { ...WEIGHTS, sittingWeight: 2 })).toThrow(/sittingWeight/);
    expect(() => addConversationContext(plain, { ...WEIGHTS, sittingMinutes: -1 })).toThrow(/sittingMinutes/);
    expect(() => addConversationContext(plain, { ...WEIGHTS, sittingStrength: 3 })).toThrow(/sittingStrength/);
  });

  it('by strength: a sitting lends in proportion to how its lender compares with the best hit', () => {
    const hits = [
      hit('best', 10, '2026-02-01T10:00:00.000Z'),
      hit('best-sitting-mate', 1, '2026-02-01T10:20:00.000Z'),
      hit('weak', 4, '2026-02-03T10:00:00.000Z'),
      hit('weak-sitting-mate', 2, '2026-02-03T10:20:00.000Z'),
      hit('alone', 3.5, '2026-02-10T10:00:00.000Z'),
    ];
    const result = addConversationContext(hits, { ...WEIGHTS, sittingStrength: 1 });
    const added = (id: string) => result.find((entry) => entry.memory.id === id)!.context?.sitting?.added;
    // The best hit lends its full share; a lender at 0.4 of the best lends 0.4 of its share.
    expect(added('best-sitting-mate')).toBeCloseTo(0.4 * 10, 12);
    expect(added('weak-sitting-mate')).toBeCloseTo(0.4 * 4 * 0.4, 12);
    expect(result.map((entry) => entry.memory.id)).toEqual([
      'best',
      'best-sitting-mate',
      'weak',
      'alone',
      'weak-sitting-mate',
    ]);
    // A flat share (0) lets the weak sitting's mate pass a better match written alone.
    expect(addConversationContext(hits, WEIGHTS).map((entry) => entry.memory.id)).toEqual([
      'best',
      'best-sitting-mate',
      'weak',
      'weak-sitting-mate',
      'alone',
    ]);
  });

  it('keeps a dated block (hits sharing one creation time) to itself, however close another time is', () => {
    const block = '2026-02-01T10:00:00.000Z';
    const hits = [
      hit('block-best', 10, block),
      // Another scope's memory at the same time is not of the block, wherever it comes in the hits.
      hit('other-scope-same-time', 5, block, { scope: 'project:b' }),
      hit('block-mate', 1, block),
      hit('ten-minutes-later', 2, '2026-02-01T10:10:00.000Z'),
      hit('alone', 3, '2026-02-05T10:00:00.000Z'),
      hit('alone-twenty-minutes-later', 1, '2026-02-05T10:20:00.000Z'),
    ];
    const result = addConversationContext(hits, WEIGHTS);
    const sitting = (id: string) => result.find((entry) => entry.memory.id === id)!.context?.sitting?.id;
    expect(sitting('block-mate')).toBe('block-best');
    expect(sitting('block-best')).toBe('block-mate');
    expect(sitting('other-scope-same-time')).toBeUndefined();
    // The next memory, ten minutes on, is another conversation: it neither borrows nor lends.
    expect(sitting('ten-minutes-later')).toBeUndefined();
    // Memories each at their own time still share a sitting by the window.
    expect(sitting('alone-twenty-minutes-later')).toBe('alone');
  });
});

describe('sitting context in recall (SQLite)', () => {
  const sqlite = useTemporaryStore(Date.parse(NOW));

  const write = (content: string, createdAt: string): NewMemory => ({
    scope: 'project:sit',
    content,
    createdAt,
    lastAccessedAt: NOW,
  });

  it('ranks the memory written in the same sitting as the best match above one that only shares a word', async () => {
    await sqlite.store.createMany(
      [
        // One sitting: the question's words are in the first memory, the answer in the next.
        write('Nate: the aquarium needs a bigger filter for the turtles.', '2026-01-05T18:00:00.000Z'),
        write('Nate: Bought one online, arrives Friday for the aquarium.', '2026-01-05T18:05:00.000Z'),
        // Weeks later, a shorter memory with one of the words.
        write('Nate: aquarium visit.', '2026-02-20T09:00:00.000Z'),
      ],
      { actor: 'test' },
    );
    const query = 'What did Nate get for the turtles aquarium filter?';
    const order = async (settings: Settings): Promise<string[]> => {
      const memories = await recallInStore(sqlite.store, query, { scope: 'project:sit', at: NOW, settings, topK: 3 });
      return memories.map((entry) => entry.memory.content);
    };
    const without = await order(withRecallSettings({ contextSittingWeight: 0 }));
    expect(without[1]).toMatch(/visit/);
    const withSitting = await order(DEFAULT_SETTINGS);
    expect(withSitting[1]).toMatch(/Bought one online/);
    const second = (await recallInStore(sqlite.store, query, { scope: 'project:sit', at: NOW }))[1]!;
    expect(second.parts.context?.sitting?.added).toBeGreaterThan(0);
  });
});
