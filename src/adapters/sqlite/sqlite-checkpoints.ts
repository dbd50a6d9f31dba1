import type { SqliteStatement } from './sqlite-driver.js';
import type { CheckpointFilter, Checkpoints } from '../../contracts/memory-store-checkpoints.js';
import {
  checkCheckpointDeletion,
  checkCheckpointName,
  checkCheckpointOptions,
  checkCheckpointValue,
} from '../../contracts/store-checks/checkpoint-input.js';
import { guard } from './sqlite-database.js';

/** What the checkpoints need from the store: its prepared statements, write transactions and clock. */
export interface SqliteCheckpointsDependencies {
  statement: (sql: string) => SqliteStatement;
  /** Runs `work` in one BEGIN IMMEDIATE transaction: no other process writes in between. */
  transaction: (work: () => void) => Promise<void>;
  now: () => Date;
}

/** The store's checkpoints role: named values in the `checkpoints` table, set with compare-and-set in one immediate transaction. */
export class SqliteCheckpoints implements Checkpoints {
  readonly #dependencies: SqliteCheckpointsDependencies;

  constructor(dependencies: SqliteCheckpointsDependencies) {
    this.#dependencies = dependencies;
  }

  async get(name: string): Promise<string | undefined> {
    const checked = checkCheckpointName(name);
    const row = guard(
      () =>
        this.#statement('SELECT value FROM checkpoints WHERE name = ?').get(checked) as { value: string } | undefined,
    );
    return row?.value;
  }

  async set(name: string, value: string, options?: { expected?: string | null }): Promise<boolean> {
    const checkedName = checkCheckpointName(name);
    const checkedValue = checkCheckpointValue(value);
    const { expected } = checkCheckpointOptions(options);
    const now = this.#dependencies.now().getTime();
    let changes = 0;
    await this.#dependencies.transaction(() => {
      if (expected === undefined) {
        changes = this.#statement(
          'INSERT INTO checkpoints (name, value, updated_at) VALUES (?, ?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at',
        ).run(checkedName, checkedValue, now).changes;
      } else if (expected === null) {
        changes = this.#statement(
          'INSERT INTO checkpoints (name, value, updated_at) VALUES (?, ?, ?) ON CONFLICT (name) DO NOTHING',
        ).run(checkedName, checkedValue, now).changes;
      } else {
        changes = this.#statement('UPDATE checkpoints SET value = ?, updated_at = ? WHERE name = ? AND value = ?').run(
          checkedValue,
          now,
          checkedName,
          expected,
        ).changes;
      }
    });
    return changes === 1;
  }

  async delete(filter: CheckpointFilter): Promise<number> {
    const { prefix, updatedBefore } = checkCheckpointDeletion(filter);
    let deleted = 0;
    // substr, not LIKE: the prefix is taken literally (names may hold % and _).
    await this.#dependencies.transaction(() => {
      deleted = this.#statement('DELETE FROM checkpoints WHERE substr(name, 1, length(?)) = ? AND updated_at < ?').run(
        prefix,
        prefix,
        updatedBefore,
      ).changes;
    });
    return deleted;
  }

  #statement(sql: string): SqliteStatement {
    return this.#dependencies.statement(sql);
  }
}
