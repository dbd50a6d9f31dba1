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
import { baseToken, groupTokens } from '../../recall/word-forms.js';
import type { TextHit } from '../../contracts/memory-store.js';
import type { Memory } from '../../memory/memory.js';
import type { checkTextSearch } from '../../contracts/store-checks/store-input.js';
import { ftsMatchExpression, placeholders } from './sqlite-queries.js';
import { MEMORY_COLUMNS, rowToMemory, type MemoryRow } from './sqlite-rows.js';
import type { SqliteStatement } from './sqlite-driver.js';
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
/** Most sets of scopes whose counts are kept at once. */
const HELD_COUNTS_LIMIT = 1_000;
/** Most tokens (and probed words) whose document counts are kept at once. */
const KEPT_COUNTS_LIMIT = 20_000;
/** Most memories kept read at once, and most characters of text they may hold together. */
const KEPT_MEMORIES_LIMIT = 20_000;
const KEPT_MEMORY_CHARS_LIMIT = 8_000_000;

/** The full-text half of the SQLite store: FTS5 finds candidates in the asked scopes, engram's BM25 orders them. */
export class SqliteFullTextIndex {
  readonly #access: SqliteAccess;
  readonly #parameters: Bm25Parameters;
  #counted: Counts | undefined;

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
  }

  /** Searches a checked query; see `MemoryStore.searchText`. */
  search(query: ReturnType<typeof checkTextSearch>): TextHit[] {
    if (query.limit <= 0 || query.scopes.length === 0) return [];
    const terms = searchableTerms(query.terms);
    if (terms.length === 0) return [];
    const counts = this.#counts();
    const total = this.#memoryCount(counts);
    // Every term's document counts in one read of the index's vocabulary: they score the hits and
    // answer most of the selectivity probes.
    const frequencies = this.#documentFrequencies(terms, counts);
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
   * What the file holds as of now, counted lazily and kept until it may have changed: how many
   * memories (BM25's document count; COUNT(*) walks a whole index, about 0.5 ms at 100K memories),
   * how many live ones each set of scopes holds, how many hold each token (the vocabulary reads a
   * word's whole list of memories to count them) and the probes of words it lacks. A commit by another connection changes
   * `data_version`; a write on this one adds to `total_changes()`; a new connection prepares a new
   * statement (the store's statements are per connection), so nothing counted on another
   * connection is reused. The store never searches inside one of its transactions, so no count
   * holds a write a rollback takes back (total_changes() does not go down on a rollback).
   */
  #counts(): Counts {
    const { version, dataVersion, changes } = this.#fileVersion();
    const counted = this.#counted;
    if (counted?.version === version && counted.dataVersion === dataVersion && counted.changes === changes)
      return counted;
    this.#counted = {
      version,
      dataVersion,
      changes,
      memoryCount: undefined,
      held: new Map(),
      documents: new Map(),
      probes: new Map(),
      memories: new Map(),
      rowids: new Map(),
      memoryChars: 0,
    };
    return this.#counted;
  }

  /**
   * Runs `work`, a write that changes no count the searches keep (recording recall hits: hit
   * counts and access times only) to the memories `changedIds`, inside the caller's write
   * transaction, and keeps the counts if they were current when it began (the memories it changed
   * are read again). Inside a write transaction no other connection can commit,
   * so a `data_version` unchanged since the counts were made means nothing else wrote.
   */
  keepingCounts(changedIds: readonly string[], work: () => void): void {
    const counted = this.#counted;
    const before = this.#fileVersion();
    const current =
      counted?.version === before.version &&
      counted.dataVersion === before.dataVersion &&
      counted.changes === before.changes;
    work();
    if (!current) return;
    counted.changes = this.#fileVersion().changes;
    // The memories it wrote are read again when next found.
    for (const id of changedIds) {
      const rowid = counted.rowids.get(id);
      if (rowid === undefined) continue;
      counted.rowids.delete(id);
      counted.memories.delete(rowid);
    }
  }

  #fileVersion(): { version: SqliteStatement; dataVersion: number; changes: number } {
    const version = this.#access.statement(
      'SELECT data_version AS dataVersion, total_changes() AS changes FROM pragma_data_version',
    );
    const { dataVersion, changes } = version.get() as { dataVersion: number; changes: number };
    return { version, dataVersion, changes };
  }

  #memoryCount(counts: Counts): number {
    counts.memoryCount ??= (this.#access.statement('SELECT COUNT(*) AS n FROM memories').get() as { n: number }).n;
    return counts.memoryCount;
  }

  #searchFts(
    match: string,
    query: ReturnType<typeof checkTextSearch>,
    terms: readonly string[],
    statistics: Bm25Statistics,
    counts: Counts,
  ): TextHit[] {
    const filter: unknown[] = [...query.scopes];
    let typeClause = '';
    if (query.types && query.types.length > 0) {
      typeClause = ` AND m.type IN (${placeholders(query.types.length)})`;
      filter.push(...query.types);
    }
    const inScope = `m.scope IN (${placeholders(query.scopes.length)}) AND m.archived = 0 AND m.invalid_at IS NULL${typeClause}`;
    const pool = Math.max(query.limit, RESCORE_POOL);
    const held = this.#held(query, counts);
    const total = this.#memoryCount(counts);
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
    counts: Counts,
    scopes: { clause: string; filter: readonly unknown[]; query: ReturnType<typeof checkTextSearch> } | undefined,
  ): Memory[] {
    if (ranked.length === 0) return [];
    const kept = counts.memories;
    const unread = ranked.filter((row) => !kept.has(row.rowid)).map((row) => row.rowid);
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
    for (const [rowid, memory] of fresh) this.#keep(counts, rowid, memory);
    const admits = scopes === undefined ? undefined : inAskedScopes(scopes.query);
    return ranked.flatMap((row) => {
      const memory = fresh.get(row.rowid);
      if (memory !== undefined) return [memory];
      const known = kept.get(row.rowid);
      return known !== undefined && (admits === undefined || admits(known)) ? [known] : [];
    });
  }

  #keep(counts: Counts, rowid: number, memory: Memory): void {
    const chars = memory.name.length + memory.description.length + memory.content.length;
    if (counts.memories.size >= KEPT_MEMORIES_LIMIT || counts.memoryChars + chars > KEPT_MEMORY_CHARS_LIMIT) {
      counts.memories.clear();
      counts.rowids.clear();
      counts.memoryChars = 0;
    }
    counts.memories.set(rowid, memory);
    counts.rowids.set(memory.id, rowid);
    counts.memoryChars += chars;
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
   * Memories not archived in the asked scopes, counted on the scope index once per state of the
   * file (invalidated memories and a type filter would need every row read; they only make the
   * count an upper bound).
   */
  #held(query: ReturnType<typeof checkTextSearch>, counts: Counts): number {
    const key = JSON.stringify(query.scopes);
    let held = counts.held.get(key);
    if (held === undefined) {
      held = (
        this.#access
          .statement(
            `SELECT COUNT(*) AS n FROM memories WHERE scope IN (${placeholders(query.scopes.length)}) AND archived = 0`,
          )
          .get(...query.scopes) as { n: number }
      ).n;
      if (counts.held.size >= HELD_COUNTS_LIMIT) counts.held.clear();
      counts.held.set(key, held);
    }
    return held;
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
   * How many memories hold each index token of `terms` and every form of their irregular words,
   * read from an fts5vocab view of the index for the tokens `counts` does not hold yet (tokens no
   * memory holds are absent from the answer).
   */
  #documentFrequencies(terms: readonly string[], counts: Counts): Map<string, number> {
    const tokens = [...new Set(terms.flatMap(termTokens))];
    let unread = tokens.filter((token) => !counts.documents.has(token));
    if (unread.length > 0 && counts.documents.size + unread.length > KEPT_COUNTS_LIMIT) {
      counts.documents.clear();
      unread = tokens;
    }
    if (unread.length > 0) {
      // A temp view of the index's terms: made per connection, never stored, no migration needed.
      this.#access
        .statement(
          "CREATE VIRTUAL TABLE IF NOT EXISTS temp.memories_fts_vocabulary USING fts5vocab(main, 'memories_fts', 'row')",
        )
        .run();
      const rows = this.#access
        .statement(`SELECT term, doc FROM temp.memories_fts_vocabulary WHERE term IN (${placeholders(unread.length)})`)
        .all(...unread) as Array<{ term: string; doc: number }>;
      for (const token of unread) counts.documents.set(token, 0);
      for (const row of rows) counts.documents.set(row.term, row.doc);
    }
    const documentFrequencies = new Map<string, number>();
    for (const token of tokens) {
      const frequency = counts.documents.get(token)!;
      if (frequency > 0) documentFrequencies.set(token, frequency);
    }
    return documentFrequencies;
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
    counts: Counts,
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
      let probed = counts.probes.get(term);
      if (probed === undefined) {
        const probe = this.#access.statement(
          'SELECT COUNT(*) AS n FROM (SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? LIMIT ?)',
        );
        probed = (probe.get(ftsMatchExpression([term], 'any'), threshold) as { n: number }).n;
        if (counts.probes.size >= KEPT_COUNTS_LIMIT) counts.probes.clear();
        counts.probes.set(term, probed);
      }
      return probed;
    });
  }
}

/** What `#counts` keeps: the connection's state it was read at, then each count once asked. */
interface Counts {
  version: SqliteStatement;
  dataVersion: number;
  /** total_changes() the counts hold at: moved on past this connection's own writes that change no count. */
  changes: number;
  memoryCount: number | undefined;
  /** Memories not archived in a set of scopes, keyed by the JSON of the scopes as asked. */
  held: Map<string, number>;
  /** Memories holding each index token the vocabulary was asked for (0: none). */
  documents: Map<string, number>;
  /** Capped probe counts of the words the vocabulary lacks (the cap depends on the memory count only). */
  probes: Map<string, number>;
  /** Memories searches read, frozen, by rowid (their tokens, kept beside each object, come with them). */
  memories: Map<number, Memory>;
  /** The rowid of each memory in `memories`, by id. */
  rowids: Map<string, number>;
  /** Characters of name, description and content the kept memories hold. */
  memoryChars: number;
}

/** The index tokens whose counts score `term`: its own and every form of its irregular word. */
function termTokens(term: string): string[] {
  const token = fullTextToken(term);
  return token === undefined ? [] : [token, ...groupTokens(baseToken(token))];
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
