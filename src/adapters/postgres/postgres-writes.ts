import { createSortableId } from '../../kernel/ids.js';
import type { Memory } from '../../memory/memory.js';
import type { ChangeAction, HistoryEntry } from '../../memory/memory-history.js';
import type { PostgresQueryable } from './postgres-database.js';
import { searchDocument } from './postgres-full-text-index.js';
import {
  MEMORY_COLUMNS,
  memoryValues,
  rowToHistory,
  rowToMemory,
  WRITTEN_COLUMNS,
  type HistoryRow,
  type MemoryRow,
} from './postgres-rows.js';

// The row writes every path shares (create, update, import, undo, restore). A memory always goes
// in with its full-text document, in the same statement; many rows go in one statement (arrays
// unnested), so a batch costs one round trip, not one per row. The reads a write transaction makes
// (a memory locked, a change by id) and the history entry of each change are here too.

/** The history columns a read selects. */
export const HISTORY_SELECT = 'id, memory_id, action, actor, at, before, after, undo_of';

export const PREPARED = { prepared: true } as const;

/** Postgres types of WRITTEN_COLUMNS, in order, for unnesting one array per column. */
const MEMORY_COLUMN_TYPES = [
  'text',
  'text',
  'text',
  'text',
  'text',
  'text',
  'float8',
  'text',
  'int8',
  'int8',
  'int8',
  'int8',
  'int8',
  'int8',
  'text',
  'bool',
];
const HISTORY_COLUMNS = ['id', 'memory_id', 'action', 'actor', 'at', 'before', 'after', 'undo_of'];
const HISTORY_COLUMN_TYPES = ['text', 'text', 'text', 'text', 'int8', 'text', 'text', 'text'];

const MEMORY_ROWS = (start: number): string =>
  `SELECT * FROM unnest(${[...MEMORY_COLUMN_TYPES, 'tsvector'].map((type, index) => `$${start + index}::${type}[]`).join(', ')})`;
const HISTORY_ROWS = (start: number): string =>
  `SELECT * FROM unnest(${HISTORY_COLUMN_TYPES.map((type, index) => `$${start + index}::${type}[]`).join(', ')})`;

const INSERT_MEMORIES = `INSERT INTO memories (${WRITTEN_COLUMNS.join(', ')}, search_document) ${MEMORY_ROWS(1)}`;
const INSERT_HISTORY = `INSERT INTO memory_history (${HISTORY_COLUMNS.join(', ')}) ${HISTORY_ROWS(1)}`;
// One statement, so atomic without a transaction: the memories and their `create` entries.
const INSERT_MEMORIES_WITH_HISTORY = `WITH written AS (INSERT INTO memories (${WRITTEN_COLUMNS.join(', ')}, search_document) ${MEMORY_ROWS(1)} RETURNING id)
  INSERT INTO memory_history (${HISTORY_COLUMNS.join(', ')}) ${HISTORY_ROWS(MEMORY_COLUMN_TYPES.length + 2)}`;

// The common write, one memory: plain parameters, which cost less to send and to parse than arrays.
const INSERT_MEMORY_WITH_HISTORY = `WITH written AS (INSERT INTO memories (${WRITTEN_COLUMNS.join(', ')}, search_document)
    VALUES (${WRITTEN_COLUMNS.map((_, index) => `$${index + 1}`).join(', ')}, $${WRITTEN_COLUMNS.length + 1}::tsvector) RETURNING id)
  INSERT INTO memory_history (${HISTORY_COLUMNS.join(', ')}) VALUES (${HISTORY_COLUMNS.map((_, index) => `$${WRITTEN_COLUMNS.length + 2 + index}`).join(', ')})`;

const REPLACE_MEMORY = `UPDATE memories SET ${WRITTEN_COLUMNS.slice(1)
  .map((column, index) => `${column} = $${index + 2}`)
  .join(', ')}, search_document = $${WRITTEN_COLUMNS.length + 1}::tsvector WHERE id = $1`;

/** One array per column (what `unnest` takes) from rows of values. */
function columns(rows: readonly unknown[][], width: number): unknown[][] {
  return Array.from({ length: width }, (_, column) => rows.map((row) => row[column]));
}

function memoryColumns(memories: readonly Memory[]): unknown[][] {
  return columns(
    memories.map((memory) => [...memoryValues(memory), searchDocument(memory)]),
    MEMORY_COLUMN_TYPES.length + 1,
  );
}

function historyValues(entry: HistoryEntry): unknown[] {
  return [
    entry.id,
    entry.memoryId,
    entry.action,
    entry.actor,
    Date.parse(entry.at),
    entry.before === null ? null : JSON.stringify(entry.before),
    entry.after === null ? null : JSON.stringify(entry.after),
    entry.undoOf,
  ];
}

function historyColumns(entries: readonly HistoryEntry[]): unknown[][] {
  return columns(entries.map(historyValues), HISTORY_COLUMNS.length);
}

/** Inserts memories as given, in one statement. */
export async function insertMemories(queryable: PostgresQueryable, memories: readonly Memory[]): Promise<void> {
  if (memories.length > 0) await queryable.query(INSERT_MEMORIES, memoryColumns(memories), { prepared: true });
}

/** Inserts memories and their history entries in one statement: all or nothing, even outside a transaction. */
export async function insertMemoriesWithHistory(
  queryable: PostgresQueryable,
  memories: readonly Memory[],
  entries: readonly HistoryEntry[],
): Promise<void> {
  if (memories.length === 1 && entries.length === 1) {
    await queryable.query(
      INSERT_MEMORY_WITH_HISTORY,
      [...memoryValues(memories[0]!), searchDocument(memories[0]!), ...historyValues(entries[0]!)],
      { prepared: true },
    );
    return;
  }
  await queryable.query(INSERT_MEMORIES_WITH_HISTORY, [...memoryColumns(memories), ...historyColumns(entries)], {
    prepared: true,
  });
}

/** Overwrites every field of an existing memory (its id stays). */
export async function replaceMemory(queryable: PostgresQueryable, memory: Memory): Promise<void> {
  await queryable.query(REPLACE_MEMORY, [...memoryValues(memory), searchDocument(memory)], { prepared: true });
}

/** Inserts history entries as given (their states as JSON text, verbatim), in one statement. */
export async function insertHistory(queryable: PostgresQueryable, entries: readonly HistoryEntry[]): Promise<void> {
  if (entries.length > 0) await queryable.query(INSERT_HISTORY, historyColumns(entries), { prepared: true });
}

/** Records one change in the history; returns its change id. */
export async function recordChange(
  transaction: PostgresQueryable,
  ...change: Parameters<typeof historyEntry>
): Promise<string> {
  const entry = historyEntry(...change);
  await insertHistory(transaction, [entry]);
  return entry.id;
}

/** A history entry with a new change id sorted by its time. */
export function historyEntry(
  action: ChangeAction,
  memoryId: string,
  before: Memory | null,
  after: Memory | null,
  actor: string,
  now: string,
  undoOf: string | null,
): HistoryEntry {
  return { id: createSortableId('chg', Date.parse(now)), memoryId, action, actor, at: now, before, after, undoOf };
}

/** A memory's row, locked for this transaction's writes. */
export async function lockedMemory(transaction: PostgresQueryable, id: string): Promise<Memory | undefined> {
  const [row] = (
    await transaction.query<MemoryRow>(
      `SELECT ${MEMORY_COLUMNS} FROM memories WHERE id = $1 FOR UPDATE`,
      [id],
      PREPARED,
    )
  ).rows;
  return row && rowToMemory(row);
}

/** One history entry by its change id. */
export async function readChange(queryable: PostgresQueryable, changeId: string): Promise<HistoryEntry | undefined> {
  const [row] = (
    await queryable.query<HistoryRow>(
      `SELECT ${HISTORY_SELECT} FROM memory_history WHERE id = $1`,
      [changeId],
      PREPARED,
    )
  ).rows;
  return row && rowToHistory(row);
}
