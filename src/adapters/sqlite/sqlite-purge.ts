import {
  allCleared,
  checkpointPlace,
  placeCounter,
  purgedRowsReport,
  purgeNeedles,
  scrubCheckpointValue,
  type PurgeOptions,
  type PurgePlace,
  type PurgeReport,
} from '../../memory/memory-purge.js';
import type { Memory } from '../../memory/memory.js';
import type { ChangeContext } from '../../memory/memory-history.js';
import { checkUnchangedSince, memoryNotFound } from '../../contracts/store-checks/store-input.js';
import { guard } from './sqlite-database.js';
import type { SqliteConnection, SqliteStatement } from './sqlite-driver.js';
import { rowToHistory, type HistoryRow } from './sqlite-rows.js';

/** What a purge needs of the SQLite store it runs in. */
export interface SqlitePurgeAccess {
  database(): SqliteConnection;
  /** The database file, or `:memory:`. */
  path: string;
  statement(sql: string): SqliteStatement;
  transaction(work: () => void): Promise<void>;
  /** The memory's current row, if it has one. */
  current(id: string): Memory | undefined;
  /** Records the purge entry in the history; returns its change id. */
  record(id: string, now: string): string;
  now(): Date;
  onWarning(message: string): void;
}

/**
 * `SqliteMemoryStore.purge`: the memory's row, its history, vector and full-text entries, the copies
 * outside them (removeSqliteCopies), all with secure delete on; then freed pages and the WAL.
 */
export async function purgeSqliteMemory(
  access: SqlitePurgeAccess,
  id: string,
  change: ChangeContext,
  options: PurgeOptions,
): Promise<PurgeReport> {
  const { statement } = access;
  const db = access.database();
  const previous = guard(() => (db.prepare('PRAGMA secure_delete').get() as { secure_delete: number }).secure_delete);
  // Secure delete zeroes what this transaction frees (rows, FTS segments, overflow pages); the
  // vacuum below then rebuilds every page, so copies freed by earlier deletes and edits go too.
  guard(() => db.exec('PRAGMA secure_delete = ON'));
  let removed: Omit<PurgeReport, 'copiesCleared'> | undefined;
  try {
    await access.transaction(() => {
      const current = access.current(id);
      if (current) checkUnchangedSince(current, change);
      const history = (
        statement('SELECT * FROM memory_history WHERE memory_id = ? ORDER BY seq').all(id) as HistoryRow[]
      ).map(rowToHistory);
      if (!current && history.every((entry) => entry.action === 'purge')) throw memoryNotFound(id);
      const vectors = (
        statement(
          'SELECT count(*) AS n FROM memory_vectors WHERE memory_rowid IN (SELECT rowid FROM memories WHERE id = ?)',
        ).get(id) as { n: number }
      ).n;
      // The vector goes with the row (trigger), and so do its full-text entries.
      if (current) statement('DELETE FROM memories WHERE id = ?').run(id);
      const historyEntriesRemoved = statement('DELETE FROM memory_history WHERE memory_id = ?').run(id).changes;
      const now = access.now();
      const copies = removeSqliteCopies(statement, {
        memoryId: id,
        needles: purgeNeedles(id, current, history),
        options,
        now: now.getTime(),
      });
      // FTS5 keeps deleted terms in old segments until they merge: merge them all now.
      statement("INSERT INTO memories_fts (memories_fts) VALUES ('optimize')").run();
      const changeId = access.record(id, now.toISOString());
      removed = purgedRowsReport({
        changeId,
        memoryRemoved: current !== undefined,
        historyEntriesRemoved,
        vectorsRemoved: vectors,
        copies,
      });
    });
  } finally {
    guard(() => db.exec(`PRAGMA secure_delete = ${previous ? 'ON' : 'OFF'}`));
  }
  const places = [...removed!.places, ...clearFreedPages(db, access.path, access.onWarning)];
  return { ...removed!, places, copiesCleared: allCleared(places) };
}

/**
 * The copies of a purged memory outside its own rows, removed inside the purge's transaction: jobs
 * whose payload quotes it or holds the conversation it came from (with their progress checkpoints),
 * and checkpoints that quote it (rewritten without what quotes it, see scrubCheckpointValue).
 */
export function removeSqliteCopies(
  statement: (sql: string) => SqliteStatement,
  input: { memoryId: string; needles: readonly string[]; options: PurgeOptions; now: number },
): { jobsRemoved: number; places: PurgePlace[] } {
  const removedJobs = new Map<string, string>();
  for (const needle of input.needles) {
    const rows = statement('SELECT id, key FROM jobs WHERE instr(payload, ?) > 0').all(needle) as JobRow[];
    for (const row of rows) removedJobs.set(row.id, row.key);
  }
  for (const source of input.options.jobSources ?? []) {
    // substr, not LIKE: the prefix is taken literally (keys may hold % and _).
    const rows = statement(
      'SELECT id, key, state, payload FROM jobs WHERE queue = ? AND substr(key, 1, length(?)) = ?',
    ).all(source.queue, source.keyPrefix, source.keyPrefix) as Array<JobRow & { state: string; payload: string }>;
    for (const row of rows) {
      const finished = row.state === 'done' || row.state === 'failed';
      if (finished || source.quotes.some((quote) => row.payload.includes(quote))) removedJobs.set(row.id, row.key);
    }
  }
  for (const id of removedJobs.keys()) statement('DELETE FROM jobs WHERE id = ?').run(id);
  const { count, places } = placeCounter();
  for (const key of removedJobs.values())
    for (const prefix of input.options.jobCheckpointPrefixes ?? []) {
      if (statement('DELETE FROM checkpoints WHERE name = ?').run(`${prefix}${key}`).changes > 0)
        count(checkpointPlace(`${prefix}${key}`), true);
    }
  const quoting = new Map<string, string>();
  for (const needle of input.needles) {
    const rows = statement('SELECT name, value FROM checkpoints WHERE instr(value, ?) > 0').all(needle) as Array<{
      name: string;
      value: string;
    }>;
    for (const row of rows) quoting.set(row.name, row.value);
  }
  for (const [name, value] of quoting) {
    const scrubbed = scrubCheckpointValue(value, input.memoryId, input.needles);
    if (scrubbed === undefined)
      count(checkpointPlace(name), false, `checkpoint "${name}" quotes the memory and is not JSON engram can rewrite`);
    else if (scrubbed === null) {
      statement('DELETE FROM checkpoints WHERE name = ?').run(name);
      count(checkpointPlace(name), true);
    } else {
      statement('UPDATE checkpoints SET value = ?, updated_at = ? WHERE name = ?').run(scrubbed, input.now, name);
      count(checkpointPlace(name), true);
    }
  }
  return {
    jobsRemoved: removedJobs.size,
    places: [{ place: 'jobs', removed: removedJobs.size, cleared: true }, ...places()],
  };
}

interface JobRow {
  id: string;
  key: string;
}

/**
 * Vacuums the file and truncates the WAL, so no freed page or old log frame keeps a copy: the
 * `freed-space` and `write-ahead-log` places of a purge, each cleared or not with the reason.
 */
function clearFreedPages(db: SqliteConnection, path: string, onWarning: (message: string) => void): PurgePlace[] {
  if (path === ':memory:')
    return [
      { place: 'freed-space', removed: 0, cleared: true },
      { place: 'write-ahead-log', removed: 0, cleared: true },
    ];
  let vacuumed: PurgePlace;
  try {
    db.exec('VACUUM');
    vacuumed = { place: 'freed-space', removed: 0, cleared: true };
  } catch (error) {
    const reason = `the vacuum of ${path} did not finish (${error instanceof Error ? error.message : String(error)}): freed pages may keep a copy until a vacuum finishes (the next purge runs one; or "sqlite3 <file> VACUUM" with no other process writing)`;
    onWarning(`The purge removed the rows, but ${reason}.`);
    vacuumed = { place: 'freed-space', removed: 0, cleared: false, reason };
  }
  try {
    const result = db.prepare('PRAGMA wal_checkpoint(TRUNCATE)').get() as { busy: number };
    if (result.busy === 0) return [vacuumed, { place: 'write-ahead-log', removed: 0, cleared: true }];
  } catch {
    // Reported below as not cleared.
  }
  return [
    vacuumed,
    {
      place: 'write-ahead-log',
      removed: 0,
      cleared: false,
      reason: `another process was reading ${path}-wal, so it could not be truncated: earlier frames may keep a copy until a checkpoint finds no reader (SQLite does one when the last process closes the store)`,
    },
  ];
}
