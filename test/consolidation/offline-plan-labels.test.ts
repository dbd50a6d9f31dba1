import { describe, expect, it } from 'vitest';
import { planOffline } from '../../src/consolidation/offline-plan.js';
import { DEFAULT_SETTINGS } from '../../src/kernel/settings.js';
import type { Memory } from '../../src/memory/memory.js';
import { memoryRecord } from '../support/memory-record.js';

describe('numbers that label a thing (the offline "values differ" rule)', () => {
  it('invalidates a changed value but keeps two numbered things', () => {
    const at = (day: number) => new Date(Date.UTC(2026, 0, day)).toISOString();
    const memory = (id: string, content: string, day: number): Memory =>
      memoryRecord({
        id,
        scope: 'project:p',
        description: content,
        content,
        createdAt: at(day),
        lastAccessedAt: at(day),
      });
    const memories = [
      memory('note-3', 'Deploy note 3: the staging cluster restarts nightly.', 1),
      memory('note-4', 'Deploy note 4: the staging cluster restarts nightly.', 9),
      memory('pg-14', 'The staging database runs PostgreSQL 14 on a private server.', 1),
      memory('pg-16', 'The staging database runs PostgreSQL 16 on a private server.', 9),
    ];
    const { proposals } = planOffline({ memories, settings: DEFAULT_SETTINGS, now: at(10) });
    const invalidated = proposals.flatMap((proposal) => (proposal.kind === 'invalidate' ? [proposal.memoryId] : []));
    expect(invalidated).toEqual(['pg-14']);
  });
});
