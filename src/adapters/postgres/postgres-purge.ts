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
import type { ChangeContext } from '../../memory/memory-history.js';
import { checkActor, checkUnchangedSince, memoryNotFound } from '../../contracts/store-checks/store-input.js';
import type { PostgresDatabase, PostgresQueryable } from './postgres-database.js';
import { rowToHistory, type HistoryRow } from './postgres-rows.js';
import { HISTORY_SELECT, lockedMemory, recordChange } from './postgres-writes.js';

/**
 * A purge on Postgres beyond the memory's rows: the jobs and checkpoints that hold copies (inside
 * the purge's transaction, as on SQLite, see sqlite-purge.ts), then the server's files. Deleted rows
 * keep their bytes in the table files until the space is reused, and the server's write-ahead log
 * keeps every change it logged until its segments are recycled; a client can rewrite the tables
 * (VACUUM FULL, as their owner) and ask for a checkpoint (superuser or pg_checkpoint), and no more.
 */

/**
 * `PostgresMemoryStore.purge`: the memory's row, its history and vectors and the copies outside them
 * in one transaction, then the server's files (clearPostgresFiles), warning when freed space stays.
 */
export async function purgePostgresMemory(
  database: PostgresDatabase,
  access: { now(): Date; warn(message: string): void },
  id: string,
  change: ChangeContext,
  options: PurgeOptions,
): Promise<PurgeReport> {
  const actor = checkActor(change);
  const removed = await database.transaction(async (transaction) => {
    const current = await lockedMemory(transaction, id);
    if (current) checkUnchangedSince(current, change);
    const history = (
      await transaction.query<HistoryRow>(
        `SELECT ${HISTORY_SELECT} FROM memory_history WHERE memory_id = $1 ORDER BY seq FOR UPDATE`,
        [id],
      )
    ).rows.map(rowToHistory);
    if (!current && history.every((entry) => entry.action === 'purge')) throw memoryNotFound(id);
    const vectors = (
      await transaction.query<{ n: string }>('SELECT count(*) AS n FROM memory_vectors WHERE memory_id = $1', [id])
    ).rows[0]!.n;
    // The vector goes with the row (foreign key, ON DELETE CASCADE), the text search entry too.
    if (current) await transaction.query('DELETE FROM memories WHERE id = $1', [id]);
    const historyEntriesRemoved = (await transaction.query('DELETE FROM memory_history WHERE memory_id = $1', [id]))
      .rowCount;
    const now = access.now();
    const copies = await removePostgresCopies(transaction, {
      memoryId: id,
      needles: purgeNeedles(id, current, history),
      options,
      now: now.getTime(),
    });
    const changeId = await recordChange(transaction, 'purge', id, null, null, actor, now.toISOString(), null);
    return purgedRowsReport({
      changeId,
      memoryRemoved: current !== undefined,
      historyEntriesRemoved,
      vectorsRemoved: Number(vectors),
      copies,
    });
  });
  const files = await clearPostgresFiles(database);
  for (const place of files)
    if (!place.cleared && place.place === 'freed-space')
      access.warn(`The purge removed the rows, but ${place.reason}.`);
  const places = [...removed.places, ...files];
  return { ...removed, places, copiesCleared: allCleared(places) };
}

/** The tables a purge touches (memory_embeddings exists only with pgvector). */
const PURGED_TABLES = ['memories', 'memory_history', 'memory_vectors', 'memory_embeddings', 'jobs', 'checkpoints'];

/** Removes the jobs and checkpoint parts that hold the memory; runs inside the purge's transaction. */
export async function removePostgresCopies(
  transaction: PostgresQueryable,
  input: { memoryId: string; needles: readonly string[]; options: PurgeOptions; now: number },
): Promise<{ jobsRemoved: number; places: PurgePlace[] }> {
  const removedJobs = new Map<string, string>();
  const quoting = await transaction.query<{ id: string; key: string }>(
    'SELECT id, key FROM jobs WHERE EXISTS (SELECT 1 FROM unnest($1::text[]) AS needle WHERE strpos(payload, needle) > 0) FOR UPDATE',
    [input.needles],
  );
  for (const row of quoting.rows) removedJobs.set(row.id, row.key);
  for (const source of input.options.jobSources ?? []) {
    const rows = await transaction.query<{ id: string; key: string; state: string; payload: string }>(
      'SELECT id, key, state, payload FROM jobs WHERE queue = $1 AND left(key, length($2)) = $2 FOR UPDATE',
      [source.queue, source.keyPrefix],
    );
    for (const row of rows.rows) {
      const finished = row.state === 'done' || row.state === 'failed';
      if (finished || source.quotes.some((quote) => row.payload.includes(quote))) removedJobs.set(row.id, row.key);
    }
  }
  if (removedJobs.size > 0)
    await transaction.query('DELETE FROM jobs WHERE id = ANY($1::text[])', [[...removedJobs.keys()]]);

  const { count, places } = placeCounter();
  const progress = [...removedJobs.values()].flatMap((key) =>
    (input.options.jobCheckpointPrefixes ?? []).map((prefix) => `${prefix}${key}`),
  );
  if (progress.length > 0) {
    const deleted = await transaction.query<{ name: string }>(
      'DELETE FROM checkpoints WHERE name = ANY($1::text[]) RETURNING name',
      [progress],
    );
    for (const row of deleted.rows) count(checkpointPlace(row.name), true);
  }
  const found = await transaction.query<{ name: string; value: string }>(
    'SELECT name, value FROM checkpoints WHERE EXISTS (SELECT 1 FROM unnest($1::text[]) AS needle WHERE strpos(value, needle) > 0) FOR UPDATE',
    [input.needles],
  );
  for (const { name, value } of found.rows) {
    const scrubbed = scrubCheckpointValue(value, input.memoryId, input.needles);
    if (scrubbed === undefined)
      count(checkpointPlace(name), false, `checkpoint "${name}" quotes the memory and is not JSON engram can rewrite`);
    else {
      if (scrubbed === null) await transaction.query('DELETE FROM checkpoints WHERE name = $1', [name]);
      else
        await transaction.query('UPDATE checkpoints SET value = $1, updated_at = $2 WHERE name = $3', [
          scrubbed,
          input.now,
          name,
        ]);
      count(checkpointPlace(name), true);
    }
  }
  return {
    jobsRemoved: removedJobs.size,
    places: [{ place: 'jobs', removed: removedJobs.size, cleared: true }, ...places()],
  };
}

/**
 * After the rows are gone: VACUUM FULL rewrites each table the role owns into new files without the
 * dead rows (their old files are unlinked), and CHECKPOINT (where the role may) lets the server
 * recycle the log segments that recorded them. The report says what may remain: tables the role
 * does not own keep the dead rows' bytes, and the log always may, until its segments are
 * overwritten, and in any WAL archive, replica or backup, which no client can clear.
 */
export async function clearPostgresFiles(database: PostgresQueryable): Promise<PurgePlace[]> {
  const tables = await database.query<{ name: string; owned: boolean }>(
    `SELECT c.relname AS name, pg_has_role(current_user, c.relowner, 'USAGE') AS owned
       FROM unnest($1::text[]) AS wanted (name)
       JOIN pg_class c ON c.oid = to_regclass(quote_ident(wanted.name))`,
    [PURGED_TABLES],
  );
  const owned = tables.rows.filter((table) => table.owned).map((table) => table.name);
  const notOwned = tables.rows.filter((table) => !table.owned).map((table) => table.name);
  let freed: PurgePlace;
  let vacuumError: string | undefined;
  let olderReader: number | undefined;
  if (owned.length > 0) {
    try {
      // VACUUM FULL keeps a deleted row that a transaction begun before the delete may still see:
      // it waits for those first (they are short, as engram's are), and says so when one stays open.
      olderReader = await waitForOlderReaders(database, OLDER_READERS_WAIT_MS);
      await database.query(`VACUUM FULL ${owned.map((name) => `"${name}"`).join(', ')}`);
    } catch (error) {
      vacuumError = error instanceof Error ? error.message : String(error);
    }
  }
  if (vacuumError !== undefined)
    freed = {
      place: 'freed-space',
      removed: 0,
      cleared: false,
      reason: `VACUUM FULL did not finish (${vacuumError}): the deleted rows keep their bytes in the table files until the space is reused or VACUUM FULL ${PURGED_TABLES.join(', ')} runs`,
    };
  else if (notOwned.length > 0)
    freed = {
      place: 'freed-space',
      removed: owned.length,
      cleared: false,
      reason: `the store's role does not own ${notOwned.join(', ')}, and only the owner may VACUUM FULL them: the deleted rows keep their bytes in those table files until the space is reused or the owner runs VACUUM FULL ${notOwned.join(', ')}`,
    };
  else if (olderReader !== undefined)
    freed = {
      place: 'freed-space',
      removed: owned.length,
      cleared: false,
      reason: `a transaction open since before the purge (server process ${olderReader}) could still read the deleted rows, so VACUUM FULL kept their bytes in the table files: run VACUUM FULL ${owned.join(', ')} once it has ended`,
    };
  else freed = { place: 'freed-space', removed: owned.length, cleared: true };

  let checkpoint: string;
  try {
    await database.query('CHECKPOINT');
    checkpoint =
      "CHECKPOINT ran, so the server recycles the log segments that recorded the purged rows as it writes on; until they are overwritten, and in any WAL archive, replica or base backup, a copy may remain (outside a client's reach)";
  } catch (error) {
    checkpoint = `CHECKPOINT needs a superuser or the pg_checkpoint role (${error instanceof Error ? error.message : String(error)}): the server's log keeps the purged rows until its next checkpoint recycles the segments and they are overwritten, and any WAL archive, replica or base backup keeps them too`;
  }
  return [freed, { place: 'write-ahead-log', removed: 0, cleared: false, reason: checkpoint }];
}

/** How long the purge waits for transactions begun before it to end before VACUUM FULL. */
const OLDER_READERS_WAIT_MS = 10_000;

/**
 * Waits until no other session of this database holds a snapshot or a transaction older than now
 * (those could still see the rows the purge deleted, so VACUUM FULL would copy them); returns the
 * process id of one still open after `timeoutMs`, or undefined.
 */
async function waitForOlderReaders(database: PostgresQueryable, timeoutMs: number): Promise<number | undefined> {
  const now = await database.query<{ xid: string }>('SELECT (txid_current() % 4294967296)::text AS xid');
  const xid = now.rows[0]!.xid;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const older = await database.query<{ pid: number }>(
      `SELECT pid FROM pg_stat_activity
        WHERE datname = current_database() AND pid <> pg_backend_pid()
          AND ((backend_xmin IS NOT NULL AND age(backend_xmin) > age($1::text::xid))
            OR (backend_xid IS NOT NULL AND age(backend_xid) > age($1::text::xid)))
        LIMIT 1`,
      [xid],
    );
    if (older.rows.length === 0) return undefined;
    if (Date.now() >= deadline) return older.rows[0]!.pid;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
