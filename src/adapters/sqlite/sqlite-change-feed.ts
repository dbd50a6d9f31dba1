import { EngramError } from '../../kernel/errors.js';
import type { ChangeFeed, FeedChange, FeedPage } from '../../contracts/memory-store-changes.js';
import { checkFeedLimit } from '../../contracts/store-checks/change-feed-input.js';
import type { ChangeAction } from '../../memory/memory-history.js';
import type { SqliteStatement } from './sqlite-driver.js';
import { guard } from './sqlite-database.js';

/** What the feed needs from the store: its prepared statements. */
export interface SqliteChangeFeedDependencies {
  statement: (sql: string) => SqliteStatement;
}

interface FeedRow {
  seq: number;
  id: string;
  memory_id: string;
  action: ChangeAction;
  actor: string;
  at: number;
}

// SQLite commits one writer at a time, so `memory_history.seq` (its rowid) is commit order. A purge
// deletes a memory's entries; when they were the newest, SQLite hands their seq numbers out again.
// The cursor therefore names the entry it stopped at as well as its seq: when that entry is gone or
// another holds its seq, the cursor is stale and the reader compares in full once.
const CURSOR = /^sqlite:(\d{1,15}):([A-Za-z0-9_]{0,64})$/;

/** The store's change feed over `memory_history`: memories changed after a point, in commit order. */
export class SqliteChangeFeed implements ChangeFeed {
  readonly #statement: (sql: string) => SqliteStatement;

  constructor(dependencies: SqliteChangeFeedDependencies) {
    this.#statement = dependencies.statement;
  }

  async head(): Promise<string> {
    return guard(() => {
      const row = this.#statement('SELECT seq, id FROM memory_history ORDER BY seq DESC LIMIT 1').get() as
        { seq: number; id: string } | undefined;
      return row === undefined ? 'sqlite:0:' : `sqlite:${row.seq}:${row.id}`;
    });
  }

  async read(cursor: string, limit: number): Promise<FeedPage> {
    const take = checkFeedLimit(limit);
    const match = typeof cursor === 'string' ? CURSOR.exec(cursor) : null;
    if (!match) throw staleCursor(cursor);
    const seq = Number(match[1]);
    const changeId = match[2]!;
    return guard(() => {
      if (seq > 0) {
        const at = this.#statement('SELECT id FROM memory_history WHERE seq = ?').get(seq) as
          { id: string } | undefined;
        if (at?.id !== changeId) throw staleCursor(cursor);
      } else if (changeId !== '') throw staleCursor(cursor);
      const rows = this.#statement(
        'SELECT seq, id, memory_id, action, actor, at FROM memory_history WHERE seq > ? ORDER BY seq LIMIT ?',
      ).all(seq, take + 1) as FeedRow[];
      const page = rows.slice(0, take);
      const last = page.at(-1);
      return {
        changes: page.map(toChange),
        cursor: last === undefined ? cursor : `sqlite:${last.seq}:${last.id}`,
        more: rows.length > take,
      };
    });
  }
}

function toChange(row: FeedRow): FeedChange {
  return {
    memoryId: row.memory_id,
    changeId: row.id,
    action: row.action,
    actor: row.actor,
    at: new Date(row.at).toISOString(),
  };
}

function staleCursor(cursor: unknown): EngramError {
  return new EngramError(
    'CONFLICT',
    `The change feed cannot continue from ${JSON.stringify(String(cursor).slice(0, 80))}: it is another store's, or a purge removed the entry it names. Compare in full and start again from head().`,
  );
}
