import type { Memory, MemorySource, MemoryType } from '../../core/memory.js';
import type { ChangeAction, HistoryEntry } from '../../store/memory-store.js';

/** A row of the `memories` table as better-sqlite3 returns it. */
export interface MemoryRow {
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
  archived: number;
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

const iso = (milliseconds: number): string => new Date(milliseconds).toISOString();
const milliseconds = (value: string): number => Date.parse(value);

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
    archived: row.archived === 1,
  };
}

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

export const MEMORY_COLUMNS =
  'id, scope, type, name, description, content, importance, source, created_at, updated_at, last_accessed_at, hit_count, valid_from, invalid_at, superseded_by, archived';
