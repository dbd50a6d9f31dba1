import { fullTextToken } from '../../recall/bm25-scoring.js';
import { baseToken, groupTokens } from '../../recall/word-forms.js';
import type { Memory } from '../../memory/memory.js';
import type { checkTextSearch } from '../../contracts/store-checks/store-input.js';
import { placeholders } from './sqlite-queries.js';
import type { SqliteStatement } from './sqlite-driver.js';
import type { SqliteAccess } from './sqlite-vector-index.js';

/** Most sets of scopes whose counts are kept at once. */
const HELD_COUNTS_LIMIT = 1_000;
/** Most tokens (and probed words) whose document counts are kept at once. */
const KEPT_COUNTS_LIMIT = 20_000;
/** Most memories kept read at once, and most characters of text they may hold together. */
const KEPT_MEMORIES_LIMIT = 20_000;
const KEPT_MEMORY_CHARS_LIMIT = 8_000_000;

/**
 * The counts full-text searches of one SQLite connection keep between them (BM25's document
 * count, how many memories a set of scopes and each token hold, probes, the memories read), and
 * when they may no longer hold.
 */
export class SqliteSearchCounts {
  readonly #access: SqliteAccess;
  #counted: SearchCounts | undefined;

  constructor(access: SqliteAccess) {
    this.#access = access;
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
  current(): SearchCounts {
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

  /** BM25's document count: every memory in the file, counted once per state of it. */
  memoryCount(counts: SearchCounts): number {
    counts.memoryCount ??= (this.#access.statement('SELECT COUNT(*) AS n FROM memories').get() as { n: number }).n;
    return counts.memoryCount;
  }

  /**
   * Memories not archived in the asked scopes, counted on the scope index once per state of the
   * file (invalidated memories and a type filter would need every row read; they only make the
   * count an upper bound).
   */
  held(query: ReturnType<typeof checkTextSearch>, counts: SearchCounts): number {
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
   * How many memories hold each index token of `terms` and every form of their irregular words,
   * read from an fts5vocab view of the index for the tokens `counts` does not hold yet (tokens no
   * memory holds are absent from the answer).
   */
  documentFrequencies(terms: readonly string[], counts: SearchCounts): Map<string, number> {
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

  /** The capped probe count of a word the vocabulary lacks, probed by `probe` once per state of the file. */
  probed(counts: SearchCounts, term: string, probe: () => number): number {
    let probed = counts.probes.get(term);
    if (probed === undefined) {
      probed = probe();
      if (counts.probes.size >= KEPT_COUNTS_LIMIT) counts.probes.clear();
      counts.probes.set(term, probed);
    }
    return probed;
  }
}

/** Keeps a memory a search read, for the searches after it on this state of the file; past the limits, the kept ones are dropped first. */
export function keepMemory(counts: SearchCounts, rowid: number, memory: Memory): void {
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

/** What `SqliteSearchCounts.current` keeps: the connection's state it was read at, then each count once asked. */
export interface SearchCounts {
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
export function termTokens(term: string): string[] {
  const token = fullTextToken(term);
  return token === undefined ? [] : [token, ...groupTokens(baseToken(token))];
}
