import type { MemoryFilter } from '../../contracts/memory-store.js';
import type { checkMemoryFilter } from '../../contracts/store-checks/store-input.js';
import { checkInstant } from '../../contracts/store-checks/store-input.js';

// The SQL text of reads: filters and sort orders. Lists are passed as one array parameter
// (`= ANY($n)`), so no value is ever spliced into SQL.

export const ORDER_BY: Record<NonNullable<MemoryFilter['order']>, string> = {
  'updated-desc': 'updated_at DESC, seq DESC',
  'created-asc': 'created_at ASC, seq ASC',
  'created-desc': 'created_at DESC, seq DESC',
  'importance-desc': 'importance DESC, updated_at DESC, seq DESC',
};

/** Collects parameters and hands out their `$n` placeholders. */
export class SqlParameters {
  readonly values: unknown[] = [];

  /** Adds a value; returns its placeholder. */
  add(value: unknown): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }
}

/** The WHERE clause of a checked filter, scope first so the scope index serves it. */
export function filterClause(filter: ReturnType<typeof checkMemoryFilter>, parameters: SqlParameters): string {
  if (filter.scopes.length === 0) return 'false';
  const clauses = [`scope = ANY(${parameters.add(filter.scopes)}::text[])`];
  if (filter.types && filter.types.length > 0) clauses.push(`type = ANY(${parameters.add(filter.types)}::text[])`);
  if (filter.archived === 'exclude') clauses.push('NOT archived');
  if (filter.archived === 'only') clauses.push('archived');
  if (filter.invalid === 'exclude') clauses.push('invalid_at IS NULL');
  if (filter.invalid === 'only') clauses.push('invalid_at IS NOT NULL');
  if (filter.updatedBefore !== undefined)
    clauses.push(`updated_at < ${parameters.add(checkInstant(filter.updatedBefore, 'updatedBefore'))}`);
  if (filter.accessedBefore !== undefined) {
    clauses.push(
      `COALESCE(last_accessed_at, created_at) < ${parameters.add(checkInstant(filter.accessedBefore, 'accessedBefore'))}`,
    );
  }
  if (filter.importanceBelow !== undefined) clauses.push(`importance < ${parameters.add(filter.importanceBelow)}`);
  if (filter.importanceAtLeast !== undefined) clauses.push(`importance >= ${parameters.add(filter.importanceAtLeast)}`);
  return clauses.join(' AND ');
}
