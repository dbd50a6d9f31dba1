import { describe, expect, it } from 'vitest';
import { addConversationContext } from '../../src/recall/conversation-context.js';
import type { Memory, MemorySource, NewMemory } from '../../src/memory/memory.js';
import { DEFAULT_SETTINGS, type Settings } from '../../src/kernel/settings.js';
import { recallHit } from '../support/memory-record.js';
import { useTemporaryStore } from '../support/temporary-store.js';
import { recallInStore, withRecallSettings } from '../support/recall-support.js';

const WEIGHTS = { neighbourWeight: 0.3, sessionWeight: 0.1 };
const NOW = '2026-03-01T12:00:00.000Z';

function hit(
  id: string,
  relevance: number,
  source: MemorySource | null,
  scope = 'project:a',
): { memory: Memory; relevance: number } {
  return recallHit(relevance, { id, scope: scope as Memory['scope'], source, createdAt: NOW });
}

describe('addConversationContext', () => {
  it('lends a hit a share of its best adjacent turn and of its best other same-session hit', () => {
    const hits = [
      hit('question', 10, { sessionId: 's1', turnId: 'D1:4' }),
      hit('answer', 2, { sessionId: 's1', turnId: 'D1:5' }),
      hit('same-session', 3, { sessionId: 's1', turnId: 'D1:9' }),
      hit('other-session', 4.5, { sessionId: 's2', turnId: 'D2:5' }),
    ];
    const result = addConversationContext(hits, WEIGHTS);
    const byId = new Map(result.map((entry) => [entry.memory.id, entry]));
    // answer: own 2 + 0.3 × 10 (adjacent question) + 0.1 × 10 (best other of its session).
    expect(byId.get('answer')!.relevance).toBeCloseTo(6, 12);
    expect(byId.get('answer')!.context).toEqual({
      own: 2,
      neighbour: { id: 'question', added: 3 },
      session: { id: 'question', added: 1 },
    });
    // question: its neighbour is the answer (2), its best other same-session hit is same-session (3).
    expect(byId.get('question')!.relevance).toBeCloseTo(10 + 0.6 + 0.3, 12);
    // D1:9 is no neighbour of anything here; it only gets the session share.
    expect(byId.get('same-session')!.context).toEqual({ own: 3, session: { id: 'question', added: 1 } });
    // Alone in its session, a hit keeps what it had.
    expect(byId.get('other-session')).toEqual(hits[3]);
    expect(result.map((entry) => entry.memory.id)).toEqual(['question', 'answer', 'other-session', 'same-session']);
  });

  it('counts the same turn and numbered turns one apart under the same prefix as adjacent, nothing else', () => {
    const neighbourOf = (
      a: MemorySource,
      b: MemorySource,
      scopes: [string, string] = ['project:a', 'project:a'],
    ): string | undefined => {
      const result = addConversationContext([hit('strong', 10, a, scopes[0]), hit('weak', 1, b, scopes[1])], {
        neighbourWeight: 0.5,
        sessionWeight: 0,
      });
      return result.find((entry) => entry.memory.id === 'weak')!.context?.neighbour?.id;
    };
    expect(neighbourOf({ sessionId: 's', turnId: '7' }, { sessionId: 's', turnId: '8' })).toBe('strong');
    expect(neighbourOf({ sessionId: 's', turnId: 'turn-12' }, { sessionId: 's', turnId: 'turn-11' })).toBe('strong');
    expect(neighbourOf({ sessionId: 's', turnId: 'D3:05' }, { sessionId: 's', turnId: 'D3:6' })).toBe('strong');
    expect(neighbourOf({ sessionId: 's', turnId: 'a1b2-c3' }, { sessionId: 's', turnId: 'a1b2-c3' })).toBe('strong');
    // Two turns apart, another prefix, another session, another scope, opaque ids, no turn at all.
    expect(neighbourOf({ sessionId: 's', turnId: '7' }, { sessionId: 's', turnId: '9' })).toBeUndefined();
    expect(neighbourOf({ sessionId: 's', turnId: 'D3:5' }, { sessionId: 's', turnId: 'D4:6' })).toBeUndefined();
    expect(neighbourOf({ sessionId: 's', turnId: '7' }, { sessionId: 't', turnId: '8' })).toBeUndefined();
    expect(
      neighbourOf({ sessionId: 's', turnId: '7' }, { sessionId: 's', turnId: '8' }, ['project:a', 'project:b']),
    ).toBeUndefined();
    expect(
      neighbourOf({ sessionId: 's', turnId: '0f3c9e1a-77' }, { sessionId: 's', turnId: '9b2d4c11-78' }),
    ).toBeUndefined();
    expect(neighbourOf({ sessionId: 's' }, { sessionId: 's' })).toBeUndefined();
  });

  it('leaves hits without a source session, zero weights and single hits exactly as they were, in their order', () => {
    const plain = [hit('a', 1, null), hit('b', 5, { turnId: '3' }), hit('c', 3, { sessionId: '', turnId: '4' })];
    expect(addConversationContext(plain, WEIGHTS)).toEqual(plain);
    const sourced = [hit('a', 1, { sessionId: 's', turnId: '1' }), hit('b', 5, { sessionId: 's', turnId: '2' })];
    expect(addConversationContext(sourced, { neighbourWeight: 0, sessionWeight: 0 })).toEqual(sourced);
    expect(addConversationContext([sourced[0]!], WEIGHTS)).toEqual([sourced[0]]);
    expect(addConversationContext([], WEIGHTS)).toEqual([]);
  });

  it('is deterministic: ties keep the order they came in, whatever the input order of the rest', () => {
    const hits = [
      hit('x', 2, { sessionId: 's', turnId: '1' }),
      hit('y', 2, { sessionId: 't', turnId: '1' }),
      hit('z', 2, null),
    ];
    expect(addConversationContext(hits, WEIGHTS).map((entry) => entry.memory.id)).toEqual(['x', 'y', 'z']);
    expect(addConversationContext([...hits].reverse(), WEIGHTS).map((entry) => entry.memory.id)).toEqual([
      'z',
      'y',
      'x',
    ]);
  });

  it('refuses weights outside 0..1 with CONFIG_INVALID', () => {
    const hits = [hit('a', 1, { sessionId: 's', turnId: '1' }), hit('b', 2, { sessionId: 's', turnId: '2' })];
    for (const bad of [
      -0.1,
      1.5,
      Number.NaN,
      Number.POSITIVE_INFINITY,
      '0.3' as unknown as number,
      undefined as unknown as number,
    ]) {
      expect(() => addConversationContext(hits, { neighbourWeight: bad, sessionWeight: 0.1 }), String(bad)).toThrow(
        expect.objectContaining({ code: 'CONFIG_INVALID' }),
      );
      expect(() => addConversationContext(hits, { neighbourWeight: 0.3, sessionWeight: bad }), String(bad)).toThrow(
        /sessionWeight/,
      );
    }
  });

  it('stays linear on a large candidate pool with hostile turn ids', () => {
    const hits = Array.from({ length: 5_000 }, (_, index) =>
      hit(`m${index}`, (index % 97) + 1, {
        sessionId: `s${index % 50}`,
        turnId: index % 3 === 0 ? `${'9'.repeat(200)}${index}` : `t-${index}`,
      }),
    );
    const result = addConversationContext(hits, WEIGHTS);
    expect(result).toHaveLength(5_000);
    expect(new Set(result.map((entry) => entry.memory.id)).size).toBe(5_000);
    for (let index = 1; index < result.length; index += 1)
      expect(result[index - 1]!.relevance).toBeGreaterThanOrEqual(result[index]!.relevance);
  });
});

describe('recall with conversation context (SQLite)', () => {
  const sqlite = useTemporaryStore(Date.parse(NOW));

  const turn = (sessionId: string, turnId: string, content: string): NewMemory => ({
    scope: 'project:talk',
    content,
    name: 'turn',
    description: 'a turn',
    createdAt: '2026-02-20T12:00:00.000Z',
    source: { sessionId, turnId },
  });

  const recallIds = async (settings: Settings, query: string): Promise<string[]> => {
    const memories = await recallInStore(sqlite.store, query, { scope: 'project:talk', at: NOW, settings, topK: 3 });
    return memories.map((entry) => entry.memory.id);
  };

  it('brings the answer that follows a matching question into the top results, and explains why', async () => {
    const written = await sqlite.store.createMany(
      [
        turn('evening', '4', 'Kim: Sam, what did you think of the lighthouse novel we both read?'),
        turn('evening', '5', 'Sam: Loved it. The ending made me cry on the train.'),
        turn('morning', '1', 'Kim: The novel club meets on Thursdays.'),
        turn('noon', '1', 'Kim: That lighthouse on the coast is closed for repairs.'),
        // Sam speaks a lot, so "Sam" alone says little.
        ...Array.from({ length: 6 }, (_, index) => turn(`day-${index}`, '1', `Sam: Good morning, day ${index}!`)),
      ],
      { actor: 'test' },
    );
    const [question, answer] = written;
    const query = 'What did Sam think of the lighthouse novel?';
    const off = await recallIds(withRecallSettings({ contextNeighbourWeight: 0, contextSessionWeight: 0 }), query);
    expect(off[0]).toBe(question!.id);
    expect(off).not.toContain(answer!.id);
    const memories = await recallInStore(sqlite.store, query, { scope: 'project:talk', at: NOW, topK: 3 });
    expect(memories.slice(0, 2).map((entry) => entry.memory.id)).toEqual([question!.id, answer!.id]);
    const parts = memories[1]!.parts;
    expect(parts.context?.neighbour?.id).toBe(question!.id);
    // Without an embedder the relevance shown is exactly what its parts add up to.
    expect(parts.relevance).toBeCloseTo(
      parts.context!.own + parts.context!.neighbour!.added + (parts.context!.session?.added ?? 0),
      12,
    );
  });

  it('changes nothing for memories written without a source', async () => {
    await sqlite.store.createMany(
      Array.from({ length: 12 }, (_, index) => ({
        scope: 'project:talk' as const,
        content: `Deploy note ${index}: the ${index % 3 === 0 ? 'staging' : 'production'} deploy runs ${index % 2 === 0 ? 'nightly' : 'weekly'}.`,
      })),
      { actor: 'test' },
    );
    const withContext = await recallIds(DEFAULT_SETTINGS, 'when does the production deploy run nightly?');
    const without = await recallIds(
      withRecallSettings({ contextNeighbourWeight: 0, contextSessionWeight: 0 }),
      'when does the production deploy run nightly?',
    );
    expect(withContext).toHaveLength(3);
    expect(withContext).toEqual(without);
  });
});
