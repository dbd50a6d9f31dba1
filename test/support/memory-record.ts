import type { Memory } from '../../src/memory/memory.js';

/** The time a record is written at when the test names none. */
export const RECORD_TIME = '2026-03-01T12:00:00.000Z';

/**
 * A whole stored memory for tests of pure functions (ranking, formats, plans): what the test names,
 * the rest as a fresh write leaves it. `updatedAt` and `validFrom` follow `createdAt` unless named;
 * `name`, `description` and `content` default to the id.
 */
export function memoryRecord(fields: Partial<Memory> & Pick<Memory, 'id'>): Memory {
  const createdAt = fields.createdAt ?? RECORD_TIME;
  return {
    scope: 'project:a',
    type: 'project',
    name: fields.id,
    description: fields.id,
    content: fields.id,
    importance: 0.5,
    source: null,
    createdAt,
    updatedAt: createdAt,
    lastAccessedAt: null,
    hitCount: 0,
    validFrom: createdAt,
    invalidAt: null,
    supersededBy: null,
    archived: false,
    ...fields,
  };
}

/** A recall candidate: a memory record and its relevance. */
export function recallHit(
  relevance: number,
  fields: Partial<Memory> & Pick<Memory, 'id'>,
): { memory: Memory; relevance: number } {
  return { relevance, memory: memoryRecord(fields) };
}
