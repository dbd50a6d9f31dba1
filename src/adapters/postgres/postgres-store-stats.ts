import type { Scope } from '../../memory/scope.js';
import type { StoreStats } from '../../contracts/memory-store.js';
import type { PostgresQueryable } from './postgres-database.js';
import { SqlParameters } from './postgres-queries.js';

/** Counts by state, type and scope, and history entries, of the given scopes (all when undefined). */
export async function readStoreStats(
  database: PostgresQueryable,
  scopes: readonly Scope[] | undefined,
): Promise<StoreStats> {
  const parameters = new SqlParameters();
  const where =
    scopes === undefined ? 'true' : scopes.length === 0 ? 'false' : `scope = ANY(${parameters.add(scopes)}::text[])`;
  const values = parameters.values;
  const [totals] = (
    await database.query<{ total: number; archived: number; invalid: number; active: number }>(
      `SELECT count(*) AS total, count(*) FILTER (WHERE archived) AS archived, count(*) FILTER (WHERE invalid_at IS NOT NULL) AS invalid,
         count(*) FILTER (WHERE NOT archived AND invalid_at IS NULL) AS active
       FROM memories WHERE ${where}`,
      values,
    )
  ).rows;
  const byType = { user: 0, feedback: 0, project: 0, reference: 0, procedure: 0 };
  for (const row of (
    await database.query<{ type: keyof typeof byType; n: number }>(
      `SELECT type, count(*) AS n FROM memories WHERE ${where} GROUP BY type`,
      values,
    )
  ).rows) {
    byType[row.type] = row.n;
  }
  const byScope: Record<string, number> = {};
  for (const row of (
    await database.query<{ scope: string; n: number }>(
      `SELECT scope, count(*) AS n FROM memories WHERE ${where} GROUP BY scope ORDER BY scope`,
      values,
    )
  ).rows) {
    byScope[row.scope] = row.n;
  }
  const historyWhere = scopes === undefined ? '' : ` WHERE memory_id IN (SELECT id FROM memories WHERE ${where})`;
  const [history] = (
    await database.query<{ n: number }>(`SELECT count(*) AS n FROM memory_history${historyWhere}`, values)
  ).rows;
  return { ...totals!, byType, byScope, historyEntries: history!.n };
}
