import type { Memory } from '../../memory/memory.js';
import { planImport, replacementAction } from '../../memory/memory-changes.js';
import type { ChangeContext } from '../../memory/memory-history.js';
import type { ImportOptions, ImportReport } from '../../contracts/memory-store.js';
import { checkVersions } from '../../contracts/store-checks/store-input.js';
import type { SqliteStatement } from './sqlite-driver.js';
import { insertMemoryRow, memoryRow, recordChange, replaceMemoryRow } from './sqlite-memory-rows.js';
import { rowToMemory } from './sqlite-rows.js';

/**
 * Writes an import's memories, each created, replaced or skipped as `onExisting` says, with their
 * history entries. Runs inside the caller's write transaction: no other connection can change a
 * memory between the version check and the writes.
 */
export function writeSqliteImport(
  statement: (sql: string) => SqliteStatement,
  memories: readonly Memory[],
  options: { onExisting: ImportOptions['onExisting']; expected: ReadonlyArray<[string, string | null]> },
  change: ChangeContext,
  now: string,
): ImportReport {
  const report: ImportReport = { created: 0, replaced: 0, skipped: 0, written: [] };
  checkVersions(options.expected, (id) => {
    const row = memoryRow(statement, id);
    return row && rowToMemory(row);
  });
  for (const memory of memories) {
    const row = memoryRow(statement, memory.id);
    const existing = row && rowToMemory(row);
    const action = planImport(existing, memory, options.onExisting);
    if (action === 'create') {
      insertMemoryRow(statement, memory);
      recordChange(statement, 'create', memory.id, null, memory, change, now, null);
      report.created += 1;
      report.written.push(memory);
    } else if (action === 'replace') {
      replaceMemoryRow(statement, memory);
      recordChange(statement, replacementAction(existing!, memory), memory.id, existing!, memory, change, now, null);
      report.replaced += 1;
      report.written.push(memory);
    } else {
      report.skipped += 1;
    }
  }
  return report;
}
