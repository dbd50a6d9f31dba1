import { fullTextToken, MAX_COVERAGE, type Bm25Parameters, type Bm25Statistics } from '../../recall/bm25-scoring.js';
import { EngramError } from '../../kernel/errors.js';
import {
  commonTermThreshold,
  rankCandidatesByBm25,
  RESCORE_POOL,
  searchableTerms,
  selectiveTerms,
  worthProbingTerms,
} from '../../recall/full-text-search-plan.js';
import type { TextHit } from '../../contracts/memory-store.js';
import type { Memory } from '../../memory/memory.js';
import type { checkTextSearch } from '../../contracts/store-checks/store-input.js';
import { ftsMatchExpression, placeholders } from './sqlite-queries.js';
import { MEMORY_COLUMNS, rowToMemory, type MemoryRow } from './sqlite-rows.js';
import { keepMemory, SqliteSearchCounts, termTokens, type SearchCounts } from './sqlite-search-counts.js';
import type { SqliteAccess } from './sqlite-vector-index.js';

/** How many more memories the commonest word must be in than the asked scopes hold before matches are checked against a rowid set (measured: a set member costs about 2.5 row reads). */
const SCOPE_SET_FACTOR = 2.5;
const SCOPE_SET_MIN_MATCHES = 1_000;
/**
 * Least share of all memories the asked scopes must hold for the index to rank every match before
 * any row is read (see #searchFts), and how many more of the best it reads than the share suggests.
 */
const RANK_FIRST_SHARE = 0.25;
const RANK_FIRST_MARGIN = 1.25;
/** The memory columns of `m`: json_each, joined beside it, has an id and a type of its own. */
const QUALIFIED_COLUMNS = MEMORY_COLUMNS.split(', ')
  .map((column) => `m.${column}`)
  .join(', ');

/** The full-text half of the SQLite store: FTS5 finds candidates in the asked scopes, engram's BM25 orders them. */
export class SqliteFullTextIndex {
  readonly #access: SqliteAccess;
  readonly #parameters: Bm25Parameters;
  readonly #counts: SqliteSearchCounts;

  constructor(access: SqliteAccess, parameters: Bm25Parameters) {
    const { coverage } = parameters;
    if (coverage !== undefined && !(typeof coverage === 'number' && coverage >= 0 && coverage <= MAX_COVERAGE)) {
      throw new EngramError(
        'CONFIG_INVALID',
        `Invalid full-text coverage ${JSON.stringify(coverage)}: a number from 0 to ${MAX_COVERAGE} (setting recall.fullTextCoverage).`,
      );
    }
    this.#access = access;
    this.#parameters = parameters;
    this.#counts = new SqliteSearchCounts(access);
  }

  /** Searches a checked query; see `MemoryStore.searchText`. */
  search(query: ReturnType<typeof checkTextSearch>): TextHit[] {
    if (query.limit <= 0 || query.scopes.length === 0) return [];
    const terms = searchableTerms(query.terms);
    if (terms.length === 0) return [];
    const counts = this.#counts.current();
    const total = this.#counts.memoryCount(counts);
    // Every term's document counts in one read of the index's vocabulary: they score the hits and
    // answer most of the selectivity probes.
    const frequencies = this.#counts.documentFrequencies(terms, counts);
    if (query.match === 'any' && query.sufficientHits !== undefined) {
      const selective = this.#selectiveTerms(terms, total, frequencies, counts);
      if (selective.length < terms.length) {
        const statistics = statisticsOf(selective, total, frequencies);
        const hits = this.#searchFts(ftsMatchExpression(selective, 'any')!, query, selective, statistics, counts);
        // Too few hits with the rare terms: memories that hold only the common ones count too.
        if (hits.length >= Math.min(query.sufficientHits, query.limit)) return hits;
      }
    }
    const statistics = statisticsOf(terms, total, frequencies);
    return this.#searchFts(ftsMatchExpression(terms, query.match)!, query, terms, statistics, counts);
  }

  /**
   * Runs `work`, a write that changes no count the searches keep, to the memories `changedIds`;
   * see `SqliteSearchCounts.keepingCounts`.
   */
  keepingCounts(changedIds: readonly string[], work: () => void): void {
    this.#counts.keepingCounts(changedIds, work);
  }

  #searchFts(
    match: string,
    query: ReturnType<typeof checkTextSearch>,
    terms: readonly string[],
    statistics: Bm25Statistics,
    counts: SearchCounts,
  ): TextHit[] {
    const filter: unknown[] = [...query.scopes];
    let typeClause = '';
    if (query.types && query.types.length > 0) {
      typeClause = ` AND m.type IN (${placeholders(query.types.length)})`;
      filter.push(...query.types);
    }
    const inScope = `m.scope IN (${placeholders(query.scopes.length)}) AND m.archived = 0 AND m.invalid_at IS NULL${typeClause}`;
    const pool = Math.max(query.limit, RESCORE_POOL);
    const held = this.#counts.held(query, counts);
    const total = this.#counts.memoryCount(counts);
    // When the asked scopes hold most of the store (one project and the global scope, say), the
    // index ranks every match alone and only the rows of the best are read and checked against the
    // scopes: reading the row of each of thousands of matches to check its scope cost most of a long
    // question's recall. The depth allows for the share outside the scopes; when too few of the
    // best are in them and there were more, the plans below run (the same rows, ranks and order).
    if (held >= total * RANK_FIRST_SHARE && held > 0) {
      const depth = Math.ceil((pool * total * RANK_FIRST_MARGIN) / held);
      const ranked = this.#access
        .statement(
          `SELECT rowid, bm25(memories_fts, 3.0, 2.0, 1.0) AS rank FROM memories_fts
          WHERE memories_fts MATCH ? ORDER BY rank LIMIT ${depth}`,
        )
        .all(match) as Array<{ rowid: number }>;
      const memories = this.#readMemories(ranked, counts, { clause: inScope, filter, query });
      if (memories.length >= pool || ranked.length < depth)
        return this.#rescore(memories.slice(0, pool), terms, statistics, query);
    }
    // Column weights: a hit in the name or description says more than one deep in the content.
    // Ranked on rowids alone, then the kept rows are read: sorting whole rows (content and all)
    // cost a fifth of a query whose words are common. Each match is checked against the asked
    // scopes by reading its row, or, when the words match many times more memories than the
    // scopes hold, against the set of the scopes' rowids made once (a fifth faster then; the same
    // rows, ranks and order either way).
    const sql = this.#manyMoreMatches(statistics, held)
      ? `SELECT rowid, bm25(memories_fts, 3.0, 2.0, 1.0) AS rank FROM memories_fts
      WHERE memories_fts MATCH ? AND +rowid IN (SELECT m.rowid FROM memories m WHERE ${inScope})
      ORDER BY rank LIMIT ${pool}`
      : `SELECT m.rowid AS rowid, bm25(memories_fts, 3.0, 2.0, 1.0) AS rank
      FROM memories_fts JOIN memories m ON m.rowid = memories_fts.rowid
      WHERE memories_fts MATCH ? AND ${inScope}
      ORDER BY rank LIMIT ${pool}`;
    const ranked = this.#access.statement(sql).all(match, ...filter) as Array<{ rowid: number }>;
    return this.#rescore(this.#readMemories(ranked, counts, undefined), terms, statistics, query);
  }

  /**
   * The memories of ranked rowids, in their order; with `scopes`, only those in the asked scopes
   * (not archived, not invalidated, of the asked types). Memories read before on this state of the
   * file are reused (reading and converting rows cost a long question's recall more than ranking);
   * the others are read in one query, back to back with the ranking. A row another process deleted
   * between them is left out.
   */
  #readMemories(
    ranked: ReadonlyArray<{ rowid: number }>,
    counts: SearchCounts,
    scopes: { clause: string; filter: readonly unknown[]; query: ReturnType<typeof checkTextSearch> } | undefined,
  ): Memory[] {
    if (ranked.length === 0) return [];
    const kept = counts.memories;
    const unread: number[] = [];
    for (const row of ranked) if (!kept.has(row.rowid)) unread.push(row.rowid);
    // Rows outside the asked scopes are left in SQLite: they are never converted nor kept.
    const read =
      unread.length === 0
        ? []
        : (this.#access
            .statement(
              `SELECT m.rowid AS rowid, ${QUALIFIED_COLUMNS} FROM json_each(?) AS ranked CROSS JOIN memories m ON m.rowid = ranked.value${scopes === undefined ? '' : ` WHERE ${scopes.clause}`}`,
            )
            .all(JSON.stringify(unread), ...(scopes?.filter ?? [])) as Array<MemoryRow & { rowid: number }>);
    const fresh = new Map(read.map((row) => [row.rowid, keptMemory(row)]));
    for (const [rowid, memory] of fresh) keepMemory(counts, rowid, memory);
    const admits = scopes === undefined ? undefined : inAskedScopes(scopes.query);
    // One pass, no array per row: this runs for every candidate of every recall.
    const memories: Memory[] = [];
    for (const row of ranked) {
      const memory = fresh.size === 0 ? undefined : fresh.get(row.rowid);
      if (memory !== undefined) {
        memories.push(memory);
        continue;
      }
      const known = kept.get(row.rowid);
      if (known !== undefined && (admits === undefined || admits(known))) memories.push(known);
    }
    return memories;
  }

  /**
   * FTS5 finds the candidates; engram's BM25 orders them (FTS5's bm25() fixes b at 0.75, too harsh
   * on longer memories). The sort is stable, so ties keep FTS5's order.
   */
  #rescore(
    memories: readonly Memory[],
    terms: readonly string[],
    statistics: Bm25Statistics,
    query: ReturnType<typeof checkTextSearch>,
  ): TextHit[] {
    if (memories.length === 0) return [];
    return rankCandidatesByBm25(memories, terms, statistics, this.#parameters, query.limit);
  }

  /**
   * Whether the commonest searched word alone is in more than SCOPE_SET_FACTOR times as many
   * memories as the asked scopes hold, so that making the scopes' rowid set once costs less than
   * reading the row of every match. Only when the word is in at least SCOPE_SET_MIN_MATCHES
   * memories; below that, reading rows costs next to nothing.
   */
  #manyMoreMatches(statistics: Bm25Statistics, held: number): boolean {
    const matches = Math.max(0, ...statistics.documentFrequencies.values());
    return matches >= SCOPE_SET_MIN_MATCHES && matches > SCOPE_SET_FACTOR * held;
  }

  /**
   * The terms worth searching first: those in less than 5% (and 1,000) of all memories, when some
   * are present. Common terms barely move BM25 but make an OR query score most of a large store
   * (100K memories: 30K matches for "use"). Counts come from the vocabulary already read, else
   * from capped probes of the index, so this stays cheap. Whether the rare terms suffice is judged in the asked scopes by the caller.
   */
  #selectiveTerms(
    terms: readonly string[],
    total: number,
    frequencies: ReadonlyMap<string, number>,
    counts: SearchCounts,
  ): string[] {
    if (terms.length < 2) return [...terms];
    if (!worthProbingTerms(terms, total)) return [...terms];
    const threshold = commonTermThreshold(total);
    // A word the vocabulary counts is in exactly that many memories (what the probe would count, up
    // to its cap). A word it lacks is probed: a search of its one token finds nothing, so the probe
    // costs a seek, and it stays the judge where engram's tokens and the index's could differ.
    return selectiveTerms(terms, total, (term) => {
      const token = fullTextToken(term);
      const counted = token === undefined ? undefined : frequencies.get(token);
      if (counted !== undefined) return Math.min(counted, threshold);
      return this.#counts.probed(counts, term, () => {
        const probe = this.#access.statement(
          'SELECT COUNT(*) AS n FROM (SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? LIMIT ?)',
        );
        return (probe.get(ftsMatchExpression([term], 'any'), threshold) as { n: number }).n;
      });
    });
  }
}

/** BM25 statistics for `terms`: the document frequencies of their tokens, out of those read for the whole query. */
function statisticsOf(
  terms: readonly string[],
  documentCount: number,
  frequencies: ReadonlyMap<string, number>,
): Bm25Statistics {
  const documentFrequencies = new Map<string, number>();
  for (const token of new Set(terms.flatMap(termTokens))) {
    const frequency = frequencies.get(token);
    if (frequency !== undefined) documentFrequencies.set(token, frequency);
  }
  return { documentCount, documentFrequencies };
}

/** A row as a memory that may be handed to many searches: frozen, its source too. */
function keptMemory(row: MemoryRow): Memory {
  const memory = rowToMemory(row);
  if (memory.source !== null) Object.freeze(memory.source);
  return Object.freeze(memory);
}

/** What the scope clause of a search admits (`m.scope IN (…) AND m.archived = 0 AND m.invalid_at IS NULL`, and the types), for a memory read before. */
function inAskedScopes(query: ReturnType<typeof checkTextSearch>): (memory: Memory) => boolean {
  const scopes = new Set<string>(query.scopes);
  const types = query.types && query.types.length > 0 ? new Set<string>(query.types) : undefined;
  return (memory) =>
    scopes.has(memory.scope) &&
    !memory.archived &&
    memory.invalidAt === null &&
    (types === undefined || types.has(memory.type));
}
