import type { Memory } from '../../memory/memory.js';
import { planImport, replacementAction } from '../../memory/memory-changes.js';
import type { ImportOptions, ImportReport } from '../../contracts/memory-store.js';
import { checkVersions } from '../../contracts/store-checks/store-input.js';
import type { PostgresQueryable } from './postgres-database.js';
import { insertMemories, lockedMemory, recordChange, replaceMemory } from './postgres-writes.js';

/**
 * Writes an import's memories, each created, replaced or skipped as `onExisting` says, with their
 * history entries, inside the caller's transaction. Row locks are taken in id order and held to the
 * commit: the versions checked are the versions written over.
 */
export async function writePostgresImport(
  transaction: PostgresQueryable,
  memories: readonly Memory[],
  options: { onExisting: ImportOptions['onExisting']; expected: ReadonlyArray<[string, string | null]> },
  actor: string,
  now: string,
): Promise<ImportReport> {
  const report: ImportReport = { created: 0, replaced: 0, skipped: 0, written: [] };
  const current = new Map<string, Memory | undefined>();
  for (const [id] of options.expected) current.set(id, await lockedMemory(transaction, id));
  checkVersions(options.expected, (id) => current.get(id));
  for (const memory of memories) {
    const existing = await lockedMemory(transaction, memory.id);
    const action = planImport(existing, memory, options.onExisting);
    if (action === 'create') {
      await insertMemories(transaction, [memory]);
      await recordChange(transaction, 'create', memory.id, null, memory, actor, now, null);
      report.created += 1;
      report.written.push(memory);
    } else if (action === 'replace') {
      await replaceMemory(transaction, memory);
      await recordChange(
        transaction,
        replacementAction(existing!, memory),
        memory.id,
        existing!,
        memory,
        actor,
        now,
        null,
      );
      report.replaced += 1;
      report.written.push(memory);
    } else {
      report.skipped += 1;
    }
  }
  return report;
}
