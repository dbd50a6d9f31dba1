import { createSortableId } from '../../kernel/ids.js';
import type { Memory } from '../../memory/memory.js';
import type { ChangeAction, ChangeContext } from '../../memory/memory-history.js';
import { checkActor } from '../../contracts/store-checks/store-input.js';
import { guard } from './sqlite-database.js';
import type { SqliteStatement } from './sqlite-driver.js';
import { placeholders } from './sqlite-queries.js';
import { MEMORY_COLUMNS, memoryToValues, type MemoryRow } from './sqlite-rows.js';

// The ledger's row writes, inside the store's transactions: a memory's row in, replaced, read,
// and the history entry each change leaves.

type Statements = (sql: string) => SqliteStatement;

// Positional parameters in MEMORY_COLUMNS order (see memoryToValues).
const INSERT_MEMORY = `INSERT INTO memories (${MEMORY_COLUMNS}) VALUES (${placeholders(MEMORY_COLUMNS.split(', ').length)})`;
const REPLACE_MEMORY = `UPDATE memories SET ${MEMORY_COLUMNS.split(', ')
  .filter((column) => column !== 'id')
  .map((column) => `${column} = ?`)
  .join(', ')} WHERE id = ?`;

/** Writes a new memory's row. */
export function insertMemoryRow(statement: Statements, memory: Memory): void {
  statement(INSERT_MEMORY).run(...memoryToValues(memory));
}

/** Rewrites a memory's row in place. */
export function replaceMemoryRow(statement: Statements, memory: Memory): void {
  // The id is the first column: it goes last, for the WHERE clause.
  const [id, ...rest] = memoryToValues(memory);
  statement(REPLACE_MEMORY).run(...rest, id);
}

/** Records one change in the history; returns its change id. */
export function recordChange(
  statement: Statements,
  action: ChangeAction,
  memoryId: string,
  before: Memory | null,
  after: Memory | null,
  change: ChangeContext,
  now: string,
  undoOf: string | null,
): string {
  const id = createSortableId('chg', Date.parse(now));
  statement(
    'INSERT INTO memory_history (id, memory_id, action, actor, at, before, after, undo_of) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
  ).run(
    id,
    memoryId,
    action,
    checkActor(change),
    Date.parse(now),
    before && JSON.stringify(before),
    after && JSON.stringify(after),
    undoOf,
  );
  return id;
}

/** A memory's row by id, in any scope. */
export function memoryRow(statement: Statements, id: string): MemoryRow | undefined {
  return guard(() => statement(`SELECT ${MEMORY_COLUMNS} FROM memories WHERE id = ?`).get(id) as MemoryRow | undefined);
}
