import type { Memory, MemorySource, MemoryType } from '../../core/memory.js';
import type { ChangeAction, HistoryEntry } from '../../store/memory-store.js';

/** A row of the `memories` table as the driver returns it (int8 parsed to numbers). */
export interface MemoryRow {
  seq: number;
  id: string;
  scope: string;
  type: string;
  name: string;
  description: string;
  content: string;
  importance: number;
  source: string | null;
  created_at: number;
  updated_at: number;
  last_accessed_at: number | null;
  hit_count: number;
  valid_from: number;
  invalid_at: number | null;
  superseded_by: string | null;
  archived: boolean;
}

export interface HistoryRow {
  id: string;
  memory_id: string;
  action: string;
  actor: string;
  at: number;
  before: string | null;
  after: string | null;
  undo_of: string | null;
}

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

const iso = (milliseconds: number): string => new Date(milliseconds).toISOString();

export function rowToMemory(row: MemoryRow): Memory {
  return {
    id: row.id,
    scope: row.scope,
    type: row.type as MemoryType,
    name: row.name,
    description: row.description,
    content: row.content,
    importance: row.importance,
    source: row.source === null ? null : (JSON.parse(row.source) as MemorySource),
    createdAt: iso(row.created_at),
    updatedAt: iso(row.updated_at),
    lastAccessedAt: row.last_accessed_at === null ? null : iso(row.last_accessed_at),
    hitCount: row.hit_count,
    validFrom: iso(row.valid_from),
    invalidAt: row.invalid_at === null ? null : iso(row.invalid_at),
    supersededBy: row.superseded_by,
    archived: row.archived,
  };
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

export function rowToHistory(row: HistoryRow): HistoryEntry {
  return {
    id: row.id,
    memoryId: row.memory_id,
    action: row.action as ChangeAction,
    actor: row.actor,
    at: iso(row.at),
    before: row.before === null ? null : (JSON.parse(row.before) as Memory),
    after: row.after === null ? null : (JSON.parse(row.after) as Memory),
    undoOf: row.undo_of,
  };
}

/** `$start, $start+1, …` for `count` parameters. */
export function parameterList(count: number, start = 1): string {
  return Array.from({ length: count }, (_, index) => `$${start + index}`).join(', ');
}
