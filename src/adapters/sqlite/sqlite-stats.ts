import type { StoreStats } from '../../contracts/memory-store.js';
import { checkScopes } from '../../contracts/store-checks/store-input.js';
import type { Scope } from '../../memory/scope.js';
import { guard } from './sqlite-database.js';
import type { SqliteStatement } from './sqlite-driver.js';
import { placeholders } from './sqlite-queries.js';

/** `SqliteMemoryStore.stats`: counts by state, type and scope, and history entries, of the given scopes or the whole store. */
export function sqliteStats(statement: (sql: string) => SqliteStatement, scopes?: readonly Scope[]): StoreStats {
  const scopeList = scopes === undefined ? undefined : checkScopes(scopes);
  const where =
    scopeList === undefined
      ? '1 = 1'
      : scopeList.length === 0
        ? '0 = 1'
        : `scope IN (${placeholders(scopeList.length)})`;
  const parameters = scopeList ?? [];
  return guard(() => {
    const totals = statement(
      `SELECT COUNT(*) AS total, COALESCE(SUM(archived), 0) AS archived,
         COALESCE(SUM(invalid_at IS NOT NULL), 0) AS invalid,
         COALESCE(SUM(archived = 0 AND invalid_at IS NULL), 0) AS active
       FROM memories WHERE ${where}`,
    ).get(...parameters) as { total: number; archived: number; invalid: number; active: number };
    const byType = { user: 0, feedback: 0, project: 0, reference: 0, procedure: 0 };
    for (const row of statement(`SELECT type, COUNT(*) AS n FROM memories WHERE ${where} GROUP BY type`).all(
      ...parameters,
    ) as Array<{ type: keyof typeof byType; n: number }>) {
      byType[row.type] = row.n;
    }
    const byScope: Record<string, number> = {};
    for (const row of statement(
      `SELECT scope, COUNT(*) AS n FROM memories WHERE ${where} GROUP BY scope ORDER BY scope`,
    ).all(...parameters) as Array<{ scope: string; n: number }>) {
      byScope[row.scope] = row.n;
    }
    const historyWhere = scopeList === undefined ? '' : ` WHERE memory_id IN (SELECT id FROM memories WHERE ${where})`;
    const history = (
      statement(`SELECT COUNT(*) AS n FROM memory_history${historyWhere}`).get(...parameters) as { n: number }
    ).n;
    return { ...totals, byType, byScope, historyEntries: history };
  });
}
