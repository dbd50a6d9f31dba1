import type { Memory } from '../../memory/memory.js';
import { rowToHistory, rowToMemory, type StoredHistoryRow, type StoredMemoryRow } from '../sql/memory-rows.js';

/** A row of the `memories` table as the driver returns it (int8 parsed to numbers). */
export interface MemoryRow extends StoredMemoryRow {
  seq: number;
  archived: boolean;
}

export type HistoryRow = StoredHistoryRow;

/** The columns a Memory is read from (`seq` orders ties, as SQLite's rowid does). */
export const MEMORY_COLUMNS =
  'seq, id, scope, type, name, description, content, importance, source, created_at, updated_at, last_accessed_at, hit_count, valid_from, invalid_at, superseded_by, archived';

/** The columns written from a Memory, in the order of `memoryValues`; `search_document` comes last. */
export const WRITTEN_COLUMNS = MEMORY_COLUMNS.split(', ').filter((column) => column !== 'seq');

/** The same columns with a table alias, e.g. `m.id, m.scope, …`. */
export function memoryColumns(alias: string): string {
  return MEMORY_COLUMNS.split(', ')
    .map((column) => `${alias}.${column}`)
    .join(', ');
}

/** Parameter values for WRITTEN_COLUMNS, in order. */
export function memoryValues(memory: Memory): unknown[] {
  return [
    memory.id,
    memory.scope,
    memory.type,
    memory.name,
    memory.description,
    memory.content,
    memory.importance,
    memory.source === null ? null : JSON.stringify(memory.source),
    Date.parse(memory.createdAt),
    Date.parse(memory.updatedAt),
    memory.lastAccessedAt === null ? null : Date.parse(memory.lastAccessedAt),
    memory.hitCount,
    Date.parse(memory.validFrom),
    memory.invalidAt === null ? null : Date.parse(memory.invalidAt),
    memory.supersededBy,
    memory.archived,
  ];
}

/** `$start, $start+1, …` for `count` parameters. */
export function parameterList(count: number, start = 1): string {
  return Array.from({ length: count }, (_, index) => `$${start + index}`).join(', ');
}

export { rowToHistory, rowToMemory };
