import { EngramError } from '../../kernel/errors.js';
import { changeTime, planUndo } from '../../memory/memory-changes.js';
import type { ChangeContext } from '../../memory/memory-history.js';
import type { SqliteStatement } from './sqlite-driver.js';
import { insertMemoryRow, memoryRow, recordChange, replaceMemoryRow } from './sqlite-memory-rows.js';
import { rowToHistory, rowToMemory, type HistoryRow } from './sqlite-rows.js';

/**
 * Undoes one change: puts the memory back as it was before it (or takes it out again), and records
 * the undo as a change of its own. Runs inside the caller's write transaction; returns the new
 * change's id.
 */
export function undoSqliteChange(
  statement: (sql: string) => SqliteStatement,
  changeId: string,
  change: ChangeContext,
  clock: () => Date,
): string {
  const row = statement('SELECT * FROM memory_history WHERE id = ?').get(changeId) as HistoryRow | undefined;
  if (!row)
    throw new EngramError(
      'NOT_FOUND',
      `No change with id ${changeId}; "engram show <memory>" lists a memory's changes.`,
    );
  const entry = rowToHistory(row);
  const currentRow = memoryRow(statement, entry.memoryId);
  const current = currentRow ? rowToMemory(currentRow) : undefined;
  const now = changeTime(current ?? { updatedAt: entry.at }, clock().toISOString());
  const plan = planUndo(entry, current, now);
  if (plan.kind === 'remove') {
    statement('DELETE FROM memories WHERE id = ?').run(entry.memoryId);
    return recordChange(statement, plan.action, entry.memoryId, plan.before, null, change, now, entry.id);
  }
  if (currentRow) replaceMemoryRow(statement, plan.after);
  else insertMemoryRow(statement, plan.after);
  return recordChange(statement, plan.action, entry.memoryId, plan.before, plan.after, change, now, entry.id);
}
