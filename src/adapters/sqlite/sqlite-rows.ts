import type { Memory } from '../../memory/memory.js';
import { rowToHistory, rowToMemory, type StoredHistoryRow, type StoredMemoryRow } from '../sql/memory-rows.js';

/** A row of the `memories` table as the SQLite driver returns it (a null-prototype object). */
export interface MemoryRow extends StoredMemoryRow {
  archived: number;
}

export type HistoryRow = StoredHistoryRow;

const milliseconds = (value: string): number => Date.parse(value);

/** Named parameters for inserting or updating a memory row. */
export function memoryToParameters(memory: Memory): Record<string, unknown> {
  return {
    id: memory.id,
    scope: memory.scope,
    type: memory.type,
    name: memory.name,
    description: memory.description,
    content: memory.content,
    importance: memory.importance,
    source: memory.source === null ? null : JSON.stringify(memory.source),
    created_at: milliseconds(memory.createdAt),
    updated_at: milliseconds(memory.updatedAt),
    last_accessed_at: memory.lastAccessedAt === null ? null : milliseconds(memory.lastAccessedAt),
    hit_count: memory.hitCount,
    valid_from: milliseconds(memory.validFrom),
    invalid_at: memory.invalidAt === null ? null : milliseconds(memory.invalidAt),
    superseded_by: memory.supersededBy,
    archived: memory.archived ? 1 : 0,
  };
}

export const MEMORY_COLUMNS =
  'id, scope, type, name, description, content, importance, source, created_at, updated_at, last_accessed_at, hit_count, valid_from, invalid_at, superseded_by, archived';

const MEMORY_COLUMN_NAMES = MEMORY_COLUMNS.split(', ');

/**
 * The values of a memory row in MEMORY_COLUMNS order, for positional parameters: SQLite binds
 * `?` without looking up a name per column (named binding cost a sixth of a batched insert).
 */
export function memoryToValues(memory: Memory): unknown[] {
  const parameters = memoryToParameters(memory);
  return MEMORY_COLUMN_NAMES.map((column) => parameters[column]);
}

export { rowToHistory, rowToMemory };
