import type { Memory, MemorySource, MemoryType } from '../../memory/memory.js';
import type { ChangeAction, HistoryEntry } from '../../memory/memory-history.js';

/**
 * A memory as both backends store it: snake_case columns, times as epoch milliseconds, the source
 * as JSON text. `archived` is 0/1 in SQLite and a boolean in Postgres.
 */
export interface StoredMemoryRow {
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
  archived: number | boolean;
}

/** A history entry as both backends store it: states as JSON text, the time as epoch milliseconds. */
export interface StoredHistoryRow {
  id: string;
  memory_id: string;
  action: string;
  actor: string;
  at: number;
  before: string | null;
  after: string | null;
  undo_of: string | null;
}

const iso = (milliseconds: number): string => new Date(milliseconds).toISOString();

/** A stored memory row as the MemoryStore interface returns it. */
export function rowToMemory(row: StoredMemoryRow): Memory {
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
    archived: row.archived === true || row.archived === 1,
  };
}

/** A stored history row as the MemoryStore interface returns it. */
export function rowToHistory(row: StoredHistoryRow): HistoryEntry {
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
