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
// id of the transaction that wrote it (`tx`, xid8); the cursor is a watermark: the oldest
// transaction still running when the reader last looked (pg_snapshot_xmin). Every transaction
// below it had finished, so its rows were seen; rows at or above it are read again (at least
// once). A page that stops early adds the (tx, seq) it stopped at.
const CURSOR = /^postgres:(\d{1,20})(?::(\d{1,20}):(\d{1,19}))?$/;

/** The store's change feed over `memory_history`, safe for many writers committing out of order. */
export class PostgresChangeFeed implements ChangeFeed {
  readonly #database: PostgresQueryable;

  constructor(database: PostgresQueryable) {
    this.#database = database;
  }

  async head(): Promise<string> {
    return `postgres:${await this.#watermark()}`;
  }

  async read(cursor: string, limit: number): Promise<FeedPage> {
    const take = checkFeedLimit(limit);
    const match = typeof cursor === 'string' ? CURSOR.exec(cursor) : null;
    if (!match) throw staleCursor(cursor);
    const watermark = match[1]!;
    // Taken before the rows: anything that commits after this read began has a transaction id at least this.
    const next = await this.#watermark();
    if (BigInt(watermark) > BigInt(next)) throw staleCursor(cursor);
    const parameters: unknown[] = [watermark, take + 1];
    let after = '';
    if (match[2] !== undefined) {
      parameters.push(match[2], Number(match[3]));
      after = ' AND (tx, seq) > ($3::xid8, $4::bigint)';
    }
    const rows = (
      await this.#database.query<FeedRow>(
        `SELECT seq, id, memory_id, action, actor, at, tx::text AS tx FROM memory_history
         WHERE tx >= $1::xid8${after} ORDER BY tx, seq LIMIT $2`,
        parameters,
      )
    ).rows;
    const page = rows.slice(0, take);
    const more = rows.length > take;
    const last = page.at(-1);
    return {
      changes: page.map(toChange),
      cursor: more && last ? `postgres:${watermark}:${last.tx}:${last.seq}` : `postgres:${next}`,
      more,
    };
  }

  async #watermark(): Promise<string> {
    const [row] = (
      await this.#database.query<{ xmin: string }>('SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS xmin')
    ).rows;
    return row!.xmin;
  }
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
