import type { CheckpointFilter, Checkpoints } from '../../contracts/memory-store-checkpoints.js';
import {
  checkCheckpointDeletion,
  checkCheckpointName,
  checkCheckpointOptions,
  checkCheckpointValue,
} from '../../contracts/store-checks/checkpoint-input.js';
import type { PostgresAccess } from './postgres-database.js';

export interface PostgresCheckpointsDependencies {
  database: PostgresAccess;
  now: () => Date;
}

/** The store's checkpoints role: named values in the `checkpoints` table, for every process and machine on the database. */
export class PostgresCheckpoints implements Checkpoints {
  readonly #dependencies: PostgresCheckpointsDependencies;

  constructor(dependencies: PostgresCheckpointsDependencies) {
    this.#dependencies = dependencies;
  }

  async get(name: string): Promise<string | undefined> {
    const checked = checkCheckpointName(name);
    const [row] = (
      await this.#database.query<{ value: string }>('SELECT value FROM checkpoints WHERE name = $1', [checked])
    ).rows;
    return row?.value;
  }

  async set(name: string, value: string, options?: { expected?: string | null }): Promise<boolean> {
    const checkedName = checkCheckpointName(name);
    const checkedValue = checkCheckpointValue(value);
    const { expected } = checkCheckpointOptions(options);
    const now = this.#dependencies.now().getTime();
    let outcome;
    if (expected === undefined) {
      outcome = await this.#database.query(
        `INSERT INTO checkpoints (name, value, updated_at) VALUES ($1, $2, $3)
         ON CONFLICT (name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
        [checkedName, checkedValue, now],
      );
    } else if (expected === null) {
      outcome = await this.#database.query(
        'INSERT INTO checkpoints (name, value, updated_at) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING',
        [checkedName, checkedValue, now],
      );
    } else {
      // The row lock makes concurrent compare-and-sets queue: the later ones see the new value and match nothing.
      outcome = await this.#database.query(
        'UPDATE checkpoints SET value = $1, updated_at = $2 WHERE name = $3 AND value = $4',
        [checkedValue, now, checkedName, expected],
      );
    }
    return outcome.rowCount === 1;
  }

  async delete(filter: CheckpointFilter): Promise<number> {
    const { prefix, updatedBefore } = checkCheckpointDeletion(filter);
    // left(), not LIKE: the prefix is taken literally (names may hold % and _).
    const result = await this.#database.query(
      'DELETE FROM checkpoints WHERE left(name, char_length($1::text)) = $1 AND updated_at < $2',
      [prefix, updatedBefore],
    );
    return result.rowCount ?? 0;
  }

  get #database(): PostgresAccess {
    return this.#dependencies.database;
  }
}
