import { fullTextTokens, type Bm25Parameters, type Bm25Statistics } from '../../recall/bm25-scoring.js';
import {
  commonTermThreshold,
  COMMON_TERM_MIN_DOCUMENTS,
  COMMON_TERM_SHARE,
  inverseDocumentFrequency,
  rankCandidatesByBm25,
  RESCORE_POOL,
  searchableTerms,
  selectiveTerms,
  worthProbingTerms,
} from '../../recall/full-text-search-plan.js';
import type { Memory } from '../../memory/memory.js';
import type { TextHit } from '../../contracts/memory-store.js';
import type { checkTextSearch } from '../../contracts/store-checks/store-input.js';
import type { PostgresQueryable } from './postgres-database.js';
import { SqlParameters } from './postgres-queries.js';
import { memoryColumns, rowToMemory, type MemoryRow } from './postgres-rows.js';

// Full-text search on Postgres: a GIN index over a tsvector of engram's own tokens.
//
// The tsvector is not made by a Postgres text search configuration: engram tokenizes (letters and
// digits, lowercased, diacritics removed, Porter-stemmed: exactly what SQLite's FTS5 `porter
// unicode61 remove_diacritics 2` tokenizer makes, see recall/bm25-scoring.ts) and writes the lexemes
// with their positions. So both backends find the same candidates for the same words, whatever the
// server's locale (with the C locale Postgres neither lowercases nor splits non-ASCII words), and
// no stop word is dropped. Name, description and content carry weights A, B and D.
//
// Query terms become a tsquery of quoted lexemes built here (a term of several words is a phrase);
// user text is never parsed as query syntax. Ranking, as in SQLite, has two steps: the index picks a
// pool of candidates in the asked scopes, then engram's BM25 orders them. SQLite's pool is ordered
// by FTS5's bm25() with column weights 3:2:1; here it is Σ idf(term) × ts_rank(document, term) with
// the same field weights, ts_rank standing in for BM25's term-frequency part (it has no IDF of its
// own and saturates differently), and the pool is larger (100, against 50). Both pools are then
// ranked by the same BM25, so results differ only when more memories match than a pool holds.
// Past 10,000 memories, N is the planner's estimate and the frequencies of words in over 1% of
// memories come from the column statistics (ANALYZE), where SQLite counts them exactly.

/** Postgres limits: lexemes up to 2,046 bytes, 256 positions each, positions up to 16,383, 1 MB in all. */
const MAX_LEXEME_BYTES = 2_046;
const MAX_POSITIONS_PER_LEXEME = 256;
const MAX_POSITION = 16_383;
const MAX_DOCUMENT_CHARS = 900_000;
/**
 * Candidates ranked by engram's BM25: twice SQLite's pool, because ts_rank orders a pool less like
 * BM25 than FTS5's bm25() does. Measured on 3,000 synthetic memories, queries matching more
 * memories than the pool: top-10 overlap with SQLite 93% with a pool of 50, 99% with 100 (200 adds
 * little and costs 7 ms at p95 on 100K memories).
 */
const POSTGRES_RESCORE_POOL = 2 * RESCORE_POOL;
/** ts_rank weights of D, C, B, A: content 1, description 2, name 3, scaled to 1. */
const FIELD_WEIGHTS = '{0.3333,0.3333,0.6667,1}';

/** The tsvector (in tsvector input syntax) of a memory's name, description and content. */
export function searchDocument(memory: Pick<Memory, 'name' | 'description' | 'content'>): string {
  const fields: Array<[string, string]> = [
    [memory.name.replace(/-/g, ' '), 'A'],
    [memory.description, 'B'],
    [memory.content, ''],
  ];
  const positions = new Map<string, string[]>();
  let position = 1;
  let size = 0;
  for (const [text, weight] of fields) {
    for (const token of fullTextTokens(text)) {
      const at = Math.min(position, MAX_POSITION);
      position += 1;
      if (Buffer.byteLength(token, 'utf8') > MAX_LEXEME_BYTES) continue;
      let list = positions.get(token);
      if (list === undefined) {
        // Past the size Postgres allows, later words are left out of the index (content is still stored whole).
        if (size + token.length + 8 > MAX_DOCUMENT_CHARS) continue;
        list = [];
        positions.set(token, list);
        size += token.length + 3;
      }
      if (list.length >= MAX_POSITIONS_PER_LEXEME || size > MAX_DOCUMENT_CHARS) continue;
      const entry = `${at}${weight}`;
      if (list.at(-1)?.replace(/\D/g, '') === String(at)) continue;
      list.push(entry);
      size += entry.length + 1;
    }
    // A gap between fields: a phrase never spans two of them (FTS5 phrases stay in one column).
    position += 1;
  }
  return [...positions].map(([lexeme, list]) => `${quoteLexeme(lexeme)}:${list.join(',')}`).join(' ');
}

/** The tsquery of one query term: its lexeme, or the phrase of its lexemes; undefined if it has none Postgres can hold. */
export function termQuery(term: string): string | undefined {
  const tokens = fullTextTokens(term);
  if (tokens.length === 0 || tokens.some((token) => Buffer.byteLength(token, 'utf8') > MAX_LEXEME_BYTES))
    return undefined;
  return tokens.length === 1 ? quoteLexeme(tokens[0]!) : `(${tokens.map(quoteLexeme).join(' <-> ')})`;
}

function quoteLexeme(lexeme: string): string {
  return `'${lexeme.replace(/\\/g, '\\\\').replace(/'/g, "''")}'`;
}

interface SearchUnit {
  term: string;
  tsquery: string;
  /** The index token of a one-word term (the key of its document frequency); undefined for phrases. */
  token: string | undefined;
}

type CheckedTextSearch = ReturnType<typeof checkTextSearch>;

/**
 * How many memories there are: the planner's estimate (statistics scaled to the table's current
 * size, as the planner itself does) from 10,000 up, an exact count below. Counting 100K rows takes
 * longer than the rest of a search, and BM25 barely moves with a few percent of N.
 */
const MEMORY_COUNT = `(SELECT CASE WHEN estimate.n >= 10000 THEN estimate.n ELSE (SELECT count(*) FROM memories) END
  FROM (SELECT (CASE WHEN c.reltuples > 0 AND c.relpages > 0
                THEN c.reltuples / c.relpages * (pg_relation_size(c.oid) / current_setting('block_size')::float8) ELSE 0 END)::bigint AS n
        FROM pg_class c WHERE c.oid = 'memories'::regclass) estimate)`;
/** How long the column statistics (common lexemes) are reused before being read again. */
const STATISTICS_TTL_MS = 60_000;

/** The full-text half of the Postgres store. */
export class PostgresFullTextIndex {
  readonly #database: PostgresQueryable;
  readonly #parameters: Bm25Parameters;
  readonly #now: () => number;
  #common: { read: number; frequencies: ReadonlyMap<string, number> } | undefined;

  constructor(database: PostgresQueryable, parameters: Bm25Parameters, now: () => number = Date.now) {
    this.#database = database;
    this.#parameters = parameters;
    this.#now = now;
  }

  /** Searches a checked query; see `MemoryStore.searchText`. */
  async search(query: CheckedTextSearch): Promise<TextHit[]> {
    if (query.limit <= 0 || query.scopes.length === 0) return [];
    const units: Array<SearchUnit | undefined> = searchableTerms(query.terms).map((term) => {
      const tsquery = termQuery(term);
      const tokens = fullTextTokens(term);
      return tsquery === undefined ? undefined : { term, tsquery, token: tokens.length === 1 ? tokens[0] : undefined };
    });
    // A term no index can hold matches nothing: with `all`, then nothing matches.
    if (query.match === 'all' && units.some((unit) => unit === undefined)) return [];
    const usable = units.filter((unit): unit is SearchUnit => unit !== undefined);
    if (usable.length === 0) return [];

    // Document frequencies: from the column statistics for lexemes common enough to be listed there
    // (counting them would read most of the index), counted for the rest (rare, so cheap).
    const common = await this.#commonLexemes();
    const estimated = (unit: SearchUnit): boolean => unit.token !== undefined && common.has(unit.token);
    const selecting = query.match === 'any' && query.sufficientHits !== undefined && usable.length >= 2;
    // Phrases have no document frequency of their own (as in FTS5's vocabulary); they are counted only to pick terms.
    const counted = usable.filter((unit) => !estimated(unit) && (selecting || unit.token !== undefined));
    const { total, counts } = await this.#count(counted, selecting);
    const documents = (unit: SearchUnit): number =>
      estimated(unit) ? Math.round(common.get(unit.token!)! * total) : (counts.get(unit.term) ?? 0);
    const statistics = (chosen: readonly SearchUnit[]): Bm25Statistics => ({
      documentCount: total,
      documentFrequencies: new Map(
        chosen.filter((unit) => unit.token !== undefined).map((unit) => [unit.token!, documents(unit)]),
      ),
    });

    if (
      selecting &&
      worthProbingTerms(
        usable.map((unit) => unit.term),
        total,
      )
    ) {
      const byTerm = new Map(usable.map((unit) => [unit.term, unit]));
      const selective = new Set(selectiveTerms([...byTerm.keys()], total, (term) => documents(byTerm.get(term)!)));
      const rare = usable.filter((unit) => selective.has(unit.term));
      if (rare.length < usable.length) {
        const hits = await this.#rankedCandidates(rare, query, statistics(rare));
        // Too few hits with the rare terms: memories that hold only the common ones count too.
        if (hits.length >= Math.min(query.sufficientHits!, query.limit)) return hits;
      }
      // Counts were capped at the threshold to pick terms; the common ones are counted in full now.
      const capped = usable.filter(
        (unit) => unit.token !== undefined && !estimated(unit) && documents(unit) >= commonTermThreshold(total),
      );
      if (capped.length > 0)
        for (const [term, count] of (await this.#count(capped, false)).counts) counts.set(term, count);
    }
    return this.#rankedCandidates(usable, query, statistics(usable));
  }

  /**
   * How many memories there are and, for each unit, how many hold it: exactly, or when `capped`
   * only up to the common-term threshold (enough to tell rare from common, and cheaper). One query.
   */
  async #count(units: readonly SearchUnit[], capped: boolean): Promise<{ total: number; counts: Map<string, number> }> {
    const parameters = new SqlParameters();
    const minimum = capped && units.length > 0 ? parameters.add(COMMON_TERM_MIN_DOCUMENTS) : '';
    const share = capped && units.length > 0 ? parameters.add(COMMON_TERM_SHARE) : '';
    const counts = units.map((unit, index) => {
      const match = `SELECT 1 FROM memories WHERE search_document @@ ${parameters.add(unit.tsquery)}::tsquery`;
      const limit = capped ? ` LIMIT GREATEST(${minimum}::int, CEIL(total.n * ${share}::float8))` : '';
      return `, (SELECT count(*) FROM (${match}${limit}) matches) AS c${index}`;
    });
    const sql = `SELECT total.n AS total${counts.join('')} FROM (SELECT ${MEMORY_COUNT} AS n) total`;
    const [row] = (await this.#database.query<Record<string, number>>(sql, parameters.values)).rows;
    return { total: row!.total!, counts: new Map(units.map((unit, index) => [unit.term, row![`c${index}`]!])) };
  }

  /**
   * Lexemes the column statistics list as common, with the share of memories holding each. Empty
   * below 10,000 memories (or before the first ANALYZE): there every count is exact, as in SQLite.
   */
  async #commonLexemes(): Promise<ReadonlyMap<string, number>> {
    const now = this.#now();
    if (this.#common && now - this.#common.read < STATISTICS_TTL_MS) return this.#common.frequencies;
    const [row] = (
      await this.#database.query<{ rows: number; elements: string[] | null; frequencies: number[] | null }>(
        `SELECT ${MEMORY_COUNT} AS rows, s.most_common_elems::text::text[] AS elements, s.most_common_elem_freqs AS frequencies
         FROM (SELECT 1) one LEFT JOIN pg_stats s
           ON s.schemaname = current_schema() AND s.tablename = 'memories' AND s.attname = 'search_document'`,
      )
    ).rows;
    const frequencies = new Map<string, number>();
    if (row && row.rows >= 10_000 && row.elements && row.frequencies) {
      // Only lexemes in at least 1% of memories are estimated: rarer ones are cheap to count exactly.
      row.elements.forEach((lexeme, index) => {
        const frequency = row.frequencies![index]!;
        if (frequency >= 0.01) frequencies.set(lexeme, frequency);
      });
    }
    this.#common = { read: now, frequencies };
    return frequencies;
  }

  /** Candidates in the asked scopes, the pool picked by idf-weighted ts_rank, ordered by engram's BM25. */
  async #rankedCandidates(
    units: readonly SearchUnit[],
    query: CheckedTextSearch,
    statistics: Bm25Statistics,
  ): Promise<TextHit[]> {
    const parameters = new SqlParameters();
    const match = parameters.add(units.map((unit) => unit.tsquery).join(query.match === 'all' ? ' & ' : ' | '));
    const weights = parameters.add(FIELD_WEIGHTS);
    const rank = units
      .map((unit) => {
        const frequency = unit.token === undefined ? 0 : (statistics.documentFrequencies.get(unit.token) ?? 0);
        const weight = inverseDocumentFrequency(statistics.documentCount, frequency);
        return `${parameters.add(weight)}::float8 * ts_rank(${weights}::real[], search_document, ${parameters.add(unit.tsquery)}::tsquery)`;
      })
      .join(' + ');
    const clauses = [
      `search_document @@ ${match}::tsquery`,
      `scope = ANY(${parameters.add(query.scopes)}::text[])`,
      'NOT archived',
      'invalid_at IS NULL',
    ];
    if (query.types && query.types.length > 0) clauses.push(`type = ANY(${parameters.add(query.types)}::text[])`);
    const sql = `SELECT ${memoryColumns('m')}, ${rank} AS pool_rank FROM memories m
      WHERE ${clauses.join(' AND ')}
      ORDER BY pool_rank DESC, m.seq LIMIT ${parameters.add(Math.max(query.limit, POSTGRES_RESCORE_POOL))}`;
    const rows = (await this.#database.query<MemoryRow>(sql, parameters.values)).rows;
    return rankCandidatesByBm25(
      rows.map(rowToMemory),
      units.map((unit) => unit.term),
      statistics,
      this.#parameters,
      query.limit,
    );
  }
}
