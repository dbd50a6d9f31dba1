import { describe, expect, it } from 'vitest';
import { DEFAULT_SETTINGS, type Settings } from '../../src/kernel/settings.js';
import type { Memory } from '../../src/memory/memory.js';
import { demoteNearDuplicates } from '../../src/recall/recall-diversity.js';
import { recallHit } from '../support/memory-record.js';
import { useTemporaryStore } from '../support/temporary-store.js';
import { recallInStore, withRecallSettings } from '../support/recall-support.js';

const NOW = '2026-03-01T12:00:00.000Z';

function hit(id: string, content: string, relevance: number): { memory: Memory; relevance: number } {
  return recallHit(relevance, {
    id,
    scope: 'project:dup',
    name: 'note',
    description: 'a note',
    content,
    createdAt: NOW,
  });
}

describe('demoteNearDuplicates', () => {
  it('lowers a hit that nearly repeats a better one by its overlap, and leaves distinct hits alone', () => {
    const hits = [
      hit('first', 'The staging database is refreshed every Sunday night.', 5),
      hit('repeat', 'The staging database is refreshed every Sunday night!', 4.9),
      hit('close', 'The staging database is refreshed every Sunday night by cron.', 4.8),
      hit('other', 'Staging deploys need a green build.', 2),
    ];
    const result = demoteNearDuplicates(hits, 0.8);
    expect(result.map((entry) => entry.memory.id)).toEqual(['first', 'other', 'close', 'repeat']);
    expect(result[3]).toMatchObject({ relevance: 0, duplicate: { of: 'first', similarity: 1 } });
    // note, a, the, staging, database, is, refreshed, every, sunday, night shared; by and cron added: 10 of 12 tokens.
    // (A word in place of another, "Sunday morning", is no near-copy: it says something else.)
    expect(result[2]!.duplicate).toEqual({ of: 'first', similarity: 10 / 12 });
    expect(result[2]!.relevance).toBeCloseTo(4.8 * (2 / 12), 12);
    expect(result[1]).toEqual(hits[3]);
    expect(demoteNearDuplicates(hits, 1)).toEqual(hits);
    expect(() => demoteNearDuplicates(hits, 1.5)).toThrow(/duplicate similarity/);
  });

  it('keeps the same one of two equal duplicates whatever order they come in', () => {
    const a = hit('mem-a', 'Backups run nightly.', 3);
    const b = hit('mem-b', 'Backups run nightly.', 3);
    expect(demoteNearDuplicates([a, b], 0.8)[0]!.memory.id).toBe('mem-a');
    expect(demoteNearDuplicates([b, a], 0.8)[0]!.memory.id).toBe('mem-a');
  });
});

describe('diversity in recall (SQLite)', () => {
  const sqlite = useTemporaryStore(Date.parse(NOW));

  it('gives the second slot to a different memory instead of a near-copy of the first', async () => {
    await sqlite.store.createMany(
      [
        { scope: 'project:dup', content: 'The user prefers tabs over spaces in every Python file.', createdAt: NOW },
        { scope: 'project:dup', content: 'The user prefers tabs over spaces in every Python file!', createdAt: NOW },
        { scope: 'project:dup', content: 'Python files are formatted with black.', createdAt: NOW },
      ],
      { actor: 'test' },
    );
    const second = async (settings: Settings): Promise<string> => {
      const memories = await recallInStore(sqlite.store, 'tabs or spaces in Python files?', {
        scope: 'project:dup',
        at: NOW,
        settings,
        topK: 2,
      });
      return memories[1]!.memory.content;
    };
    expect(await second(withRecallSettings({ duplicateSimilarity: 1 }))).toMatch(/tabs/);
    expect(await second(DEFAULT_SETTINGS)).toMatch(/black/);
  });
});
