import { EngramError, isEngramError } from '../../kernel/errors.js';
import { changeTime, planUndo } from '../../memory/memory-changes.js';
import type { HistoryEntry } from '../../memory/memory-history.js';
import type { PostgresQueryable } from './postgres-database.js';
import { insertMemories, lockedMemory, readChange, recordChange, replaceMemory } from './postgres-writes.js';

/**
 * Undoes one change inside the caller's transaction, the memory's row locked: puts the memory back
 * as it was before the change (or takes it out again) and records the undo as a change of its own.
 */
export async function undoPostgresChange(
  transaction: PostgresQueryable,
  changeId: string,
  actor: string,
  clock: () => Date,
): Promise<HistoryEntry> {
  const entry = await readChange(transaction, changeId);
  if (!entry)
    throw new EngramError(
      'NOT_FOUND',
      `No change with id ${changeId}; "engram show <memory>" lists a memory's changes.`,
    );
  const current = await lockedMemory(transaction, entry.memoryId);
  const now = changeTime(current ?? { updatedAt: entry.at }, clock().toISOString());
  const plan = planUndo(entry, current, now);
  let entryId: string;
  if (plan.kind === 'remove') {
    await transaction.query('DELETE FROM memories WHERE id = $1', [entry.memoryId]);
    entryId = await recordChange(transaction, plan.action, entry.memoryId, plan.before, null, actor, now, entry.id);
  } else {
    if (current) {
      await replaceMemory(transaction, plan.after);
    } else {
      await insertMemories(transaction, [plan.after]).catch((error: unknown) => {
        // Another process brought the memory back first.
        throw isEngramError(error) && error.code === 'CONFLICT'
          ? new EngramError('UNDO_CONFLICT', `Cannot undo ${entry.id}: memory ${entry.memoryId} exists again.`, {
              cause: error,
            })
          : error;
      });
    }
    entryId = await recordChange(
      transaction,
      plan.action,
      entry.memoryId,
      plan.before,
      plan.after,
      actor,
      now,
      entry.id,
    );
  }
  return (await readChange(transaction, entryId))!;
}
