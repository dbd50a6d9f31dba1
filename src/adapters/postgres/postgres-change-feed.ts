import { EngramError } from '../../kernel/errors.js';
import type { ChangeFeed, FeedChange, FeedPage } from '../../contracts/memory-store-changes.js';
import { checkFeedLimit } from '../../contracts/store-checks/change-feed-input.js';
import type { ChangeAction } from '../../memory/memory-history.js';
import type { PostgresQueryable } from './postgres-database.js';

interface FeedRow {
  seq: number;
  id: string;
  memory_id: string;
  action: ChangeAction;
  actor: string;
  at: number;
  tx: string;
}

// `seq` is handed out when a row is inserted, not when its transaction commits, so a reader that
// went by seq alone could pass a row whose transaction commits later. Each history row carries the
// id of the transaction that wrote it (`tx`, xid8), and the cursor is the snapshot the reader last
// looked with (pg_current_snapshot: `xmin:xmax:running,…`): a row whose transaction that snapshot
// sees was read; every other row (a transaction still running then, or begun later) is read now.
// A page that stops early adds the (tx, seq) it stopped at. A cursor of an older engram held only
// the snapshot's xmin (a watermark: rows at or above it are read again, at least once); it is still
// read that way.
const SNAPSHOT = /^(\d{1,20}):(\d{1,20}):((?:\d{1,20})(?:,\d{1,20}){0,9999})?$/;
const CURSOR = /^postgres:snapshot:([\d:,]{3,220000})(?:@(\d{1,20}):(\d{1,19}))?$/;
const WATERMARK_CURSOR = /^postgres:(\d{1,20})(?::(\d{1,20}):(\d{1,19}))?$/;

/** The store's change feed over `memory_history`, safe for many writers committing out of order. */
export class PostgresChangeFeed implements ChangeFeed {
  readonly #database: PostgresQueryable;

  constructor(database: PostgresQueryable) {
    this.#database = database;
  }

  async head(): Promise<string> {
    return `postgres:snapshot:${await this.#snapshot()}`;
  }

  async read(cursor: string, limit: number): Promise<FeedPage> {
    const take = checkFeedLimit(limit);
    const from = parseCursor(cursor);
    // Taken before the rows: anything that commits after this read began is not seen by it.
    const next = await this.#snapshot();
    if (BigInt(from.xmin) > BigInt(SNAPSHOT.exec(next)![1]!)) throw staleCursor(cursor);
    const parameters: unknown[] = [from.snapshot ?? from.xmin, take + 1];
    let where = from.snapshot
      ? 'tx >= pg_snapshot_xmin($1::pg_snapshot) AND NOT pg_visible_in_snapshot(tx, $1::pg_snapshot)'
      : 'tx >= $1::xid8';
    if (from.after) {
      parameters.push(from.after.tx, from.after.seq);
      where += ' AND (tx, seq) > ($3::xid8, $4::bigint)';
    }
    const rows = (
      await this.#database.query<FeedRow>(
        `SELECT seq, id, memory_id, action, actor, at, tx::text AS tx FROM memory_history
         WHERE ${where} ORDER BY tx, seq LIMIT $2`,
        parameters,
      )
    ).rows;
    const page = rows.slice(0, take);
    const more = rows.length > take;
    const last = page.at(-1);
    const start = from.snapshot ? `postgres:snapshot:${from.snapshot}` : `postgres:${from.xmin}`;
    return {
      changes: page.map(toChange),
      cursor: more && last ? `${start}${from.snapshot ? '@' : ':'}${last.tx}:${last.seq}` : `postgres:snapshot:${next}`,
      more,
    };
  }

  async #snapshot(): Promise<string> {
    const [row] = (await this.#database.query<{ snapshot: string }>('SELECT pg_current_snapshot()::text AS snapshot'))
      .rows;
    return row!.snapshot;
  }
}

interface FeedCursor {
  /** The oldest transaction the cursor's reader had not seen finish. */
  xmin: string;
  /** The reader's whole snapshot (none in an older engram's watermark cursor). */
  snapshot?: string;
  /** Where a page that stopped early stopped. */
  after?: { tx: string; seq: number };
}

function parseCursor(cursor: unknown): FeedCursor {
  if (typeof cursor !== 'string') throw staleCursor(cursor);
  const match = CURSOR.exec(cursor);
  const snapshot = match ? SNAPSHOT.exec(match[1]!) : null;
  if (match && snapshot) {
    return {
      xmin: snapshot[1]!,
      snapshot: match[1]!,
      ...(match[2] !== undefined && { after: { tx: match[2], seq: Number(match[3]) } }),
    };
  }
  const watermark = WATERMARK_CURSOR.exec(cursor);
  if (!watermark) throw staleCursor(cursor);
  return {
    xmin: watermark[1]!,
    ...(watermark[2] !== undefined && { after: { tx: watermark[2], seq: Number(watermark[3]) } }),
  };
}

function toChange(row: FeedRow): FeedChange {
  return {
    memoryId: row.memory_id,
    changeId: row.id,
    action: row.action,
    actor: row.actor,
    at: new Date(Number(row.at)).toISOString(),
  };
}

function staleCursor(cursor: unknown): EngramError {
  return new EngramError(
    'CONFLICT',
    `The change feed cannot continue from ${JSON.stringify(String(cursor).slice(0, 80))}: it is another store's. Compare in full and start again from head().`,
  );
}
