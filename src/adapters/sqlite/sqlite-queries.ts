import type { MemoryFilter } from '../../contracts/memory-store.js';
import type { checkMemoryFilter } from '../../contracts/store-checks/store-input.js';
import { checkInstant } from '../../contracts/store-checks/store-input.js';

// The SQL text of reads: filters, sort orders and full-text expressions.

export const ORDER_BY: Record<NonNullable<MemoryFilter['order']>, string> = {
  'updated-desc': 'updated_at DESC, rowid DESC',
  'created-asc': 'created_at ASC, rowid ASC',
  'created-desc': 'created_at DESC, rowid DESC',
  'importance-desc': 'importance DESC, updated_at DESC, rowid DESC',
};

/** The WHERE clause of a checked filter: scope first, so the scope index serves it. */
export function filterClause(filter: ReturnType<typeof checkMemoryFilter>): { where: string; parameters: unknown[] } {
  const scopes = filter.scopes;
  if (scopes.length === 0) return { where: '0 = 1', parameters: [] };
  const clauses = [`scope IN (${placeholders(scopes.length)})`];
  const parameters: unknown[] = [...scopes];
  if (filter.types && filter.types.length > 0) {
    clauses.push(`type IN (${placeholders(filter.types.length)})`);
    parameters.push(...filter.types);
  }
  if (filter.archived === 'exclude') clauses.push('archived = 0');
  if (filter.archived === 'only') clauses.push('archived = 1');
  if (filter.invalid === 'exclude') clauses.push('invalid_at IS NULL');
  if (filter.invalid === 'only') clauses.push('invalid_at IS NOT NULL');
  if (filter.updatedBefore !== undefined) {
    clauses.push('updated_at < ?');
    parameters.push(checkInstant(filter.updatedBefore, 'updatedBefore'));
  }
  if (filter.accessedBefore !== undefined) {
    clauses.push('COALESCE(last_accessed_at, created_at) < ?');
    parameters.push(checkInstant(filter.accessedBefore, 'accessedBefore'));
  }
  if (filter.importanceBelow !== undefined) {
    clauses.push('importance < ?');
    parameters.push(filter.importanceBelow);
  }
  if (filter.importanceAtLeast !== undefined) {
    clauses.push('importance >= ?');
    parameters.push(filter.importanceAtLeast);
  }
  return { where: clauses.join(' AND '), parameters };
}

/**
 * Turns plain words into an FTS5 expression: every term is quoted (so `AND`, `(`, `*`, `NEAR` are
 * just words), and terms are joined with OR for ranked any-match or AND for all-match.
 */
export function ftsMatchExpression(terms: readonly string[], match: 'any' | 'all'): string | undefined {
  const quoted = terms
    .filter((term) => /[\p{L}\p{N}]/u.test(term))
    .map((term) => `"${term.replace(/\u0000/g, '').replace(/"/g, '""')}"`);
  if (quoted.length === 0) return undefined;
  return quoted.join(match === 'all' ? ' AND ' : ' OR ');
}

export function placeholders(count: number): string {
  return new Array(count).fill('?').join(', ');
}
