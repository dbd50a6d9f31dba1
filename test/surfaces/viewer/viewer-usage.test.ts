import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteMemoryStore } from '../../../src/adapters/sqlite/sqlite-memory-store.js';
import { Engram } from '../../../src/engram.js';
import { inRecallByMonth, usageStats } from '../../../src/surfaces/viewer/viewer-usage.js';

describe("the viewer's counts over time", () => {
  const folders: string[] = [];
  afterEach(() => folders.splice(0).forEach((folder) => rmSync(folder, { recursive: true, force: true })));

  it('counts a memory in each month it was in recall: from its creation until invalidated or archived', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'engram-usage-'));
    folders.push(folder);
    const store = new SqliteMemoryStore({ path: join(folder, 'engram.db') });
    await store.open();
    const engram = new Engram({ store, defaultScope: 'project:a' });
    const memory = (id: string, fields: Record<string, unknown>) => ({
      id,
      scope: 'project:a',
      type: 'project' as const,
      content: `Fact ${id} about the build.`,
      ...fields,
    });
    await engram.importMemories(
      [
        memory('mem_kept', { createdAt: '2026-09-10T00:00:00.000Z', updatedAt: '2026-09-10T00:00:00.000Z' }),
        // Invalid from 5 November: counted at the end of September and October, not after.
        memory('mem_overturned', {
          createdAt: '2026-09-20T00:00:00.000Z',
          updatedAt: '2026-11-05T00:00:00.000Z',
          invalidAt: '2026-11-05T00:00:00.000Z',
        }),
        // Archived on 15 October (its last change): counted at the end of September only.
        memory('mem_archived', {
          type: 'feedback',
          createdAt: '2026-09-25T00:00:00.000Z',
          updatedAt: '2026-10-15T00:00:00.000Z',
          archived: true,
        }),
        {
          ...memory('mem_global', { createdAt: '2026-11-02T00:00:00.000Z', updatedAt: '2026-11-02T00:00:00.000Z' }),
          scope: 'global',
        },
      ],
      { onExisting: 'skip' },
    );
    const usage = await usageStats(engram, ['project:a', 'global'], () => new Date('2026-12-01T12:00:00.000Z'));
    const total = (month: (typeof usage.inRecallByMonth)[number]) =>
      Object.values(month.byType).reduce((sum, value) => sum + value, 0);
    expect(usage.inRecallByMonth.map((month) => [month.month, total(month)])).toEqual([
      ['2026-09', 3],
      ['2026-10', 2],
      ['2026-11', 2],
      ['2026-12', 2],
    ]);
    expect(usage.inRecallByMonth[0]!.byType.feedback).toBe(1);
    expect(usage.inRecallByMonth[2]!.byScope).toEqual({ 'project:a': 1, global: 1 });
    // Created per month is another question: every memory in the month it was made.
    expect(usage.createdByMonth.map((month) => month.month)).toEqual(['2026-09', '2026-11']);
    await store.close();
  });

  it('shows at most the last 24 months, and nothing for no memories', () => {
    const from = Date.parse('2020-01-15T00:00:00.000Z');
    const months = inRecallByMonth(
      [{ type: 'user', scope: 'global', from, until: Number.POSITIVE_INFINITY }],
      new Date('2026-12-01T00:00:00.000Z'),
    );
    expect(months).toHaveLength(24);
    expect(months[0]!.month).toBe('2025-01');
    expect(months.every((month) => month.byType.user === 1)).toBe(true);
    expect(inRecallByMonth([], new Date())).toEqual([]);
  });
});
