import { EngramError } from '../../kernel/errors.js';
import type {
  FinishedJobFilter,
  Job,
  JobFilter,
  JobQueue,
  JobState,
  NewJob,
} from '../../contracts/memory-store-jobs.js';
import {
  checkClaim,
  checkFailure,
  checkJobDeletion,
  checkJobFilter,
  checkJobId,
  checkNewJob,
  checkQueue,
  checkRenewal,
  checkWorker,
} from '../../contracts/store-checks/job-input.js';
import { createSortableId } from '../../kernel/ids.js';
import type { PostgresAccess, PostgresQueryable } from './postgres-database.js';
import { SqlParameters } from './postgres-queries.js';
import { JOB_COLUMNS, jobNotFound, rowToJob, type JobRow } from '../sql/job-rows.js';
import { isDeadHolder, thisLeaseHolder } from '../sql/lease-holder.js';

export interface PostgresJobQueueDependencies {
  database: PostgresAccess;
  now: () => Date;
  defaults: () => { maxAttempts: number; maxPayloadBytes: number };
}

/**
 * The store's jobs role: durable jobs in Postgres, for every process and machine on the database.
 * A claim locks the first due row with FOR UPDATE SKIP LOCKED: two workers never lease one job,
 * and a worker never waits behind another's claim. Times come from the store's clock, as in SQLite
 * (machines sharing a queue should keep their clocks in sync; leases absorb small skews).
 */
export class PostgresJobQueue implements JobQueue {
  readonly #dependencies: PostgresJobQueueDependencies;

  constructor(dependencies: PostgresJobQueueDependencies) {
    this.#dependencies = dependencies;
  }

  async enqueue(input: NewJob): Promise<{ job: Job; created: boolean }> {
    const now = this.#now();
    const checked = checkNewJob(input, { ...this.#dependencies.defaults(), now });
    const [inserted] = (
      await this.#database.query<JobRow>(
        `INSERT INTO jobs (id, queue, key, payload, state, attempts, max_attempts, run_at, created_at, updated_at)
         VALUES ($1, $2, $3, $4, 'pending', 0, $5, $6, $7, $7) ON CONFLICT (queue, key) DO NOTHING RETURNING ${JOB_COLUMNS}`,
        [
          createSortableId('job', now),
          checked.queue,
          checked.key,
          checked.payloadJson,
          checked.maxAttempts,
          checked.runAt,
          now,
        ],
      )
    ).rows;
    if (inserted) return { job: rowToJob(inserted), created: true };
    // Jobs are never deleted, so the one holding the key is there to read.
    const [existing] = (
      await this.#database.query<JobRow>(`SELECT ${JOB_COLUMNS} FROM jobs WHERE queue = $1 AND key = $2`, [
        checked.queue,
        checked.key,
      ])
    ).rows;
    return { job: rowToJob(existing!), created: false };
  }

  async claim(options: { queue: string; worker: string; leaseMs: number }): Promise<Job | undefined> {
    const { queue, worker, leaseMs } = checkClaim(options);
    const now = this.#now();
    const holder = thisLeaseHolder();
    return this.#database.transaction(async (transaction) => {
      // Running jobs whose lease still runs but whose holder is gone from this host: due now.
      const held = (
        await transaction.query<{ id: string; locked_host: string; locked_pid: number | null }>(
          "SELECT id, locked_host, locked_pid FROM jobs WHERE queue = $1 AND state = 'running' AND locked_until > $2 AND locked_host = $3",
          [queue, now, holder.host],
        )
      ).rows;
      const dead = held.filter((row) => isDeadHolder(row.locked_host, row.locked_pid)).map((row) => row.id);
      for (;;) {
        // Due: pending with its run time come, or running with its lease run out or its holder dead.
        const [row] = (
          await transaction.query<JobRow>(
            `SELECT ${JOB_COLUMNS} FROM jobs
             WHERE queue = $1 AND ((state = 'pending' AND run_at <= $2) OR (state = 'running' AND (locked_until <= $2 OR id = ANY($3::text[]))))
             ORDER BY run_at, seq LIMIT 1 FOR UPDATE SKIP LOCKED`,
            [queue, now, dead],
          )
        ).rows;
        if (!row) return undefined;
        if (row.state === 'running' && row.attempts >= row.max_attempts) {
          // Its worker died on every attempt it had: a job that kills workers must not loop forever.
          const error = `The lease of worker ${row.locked_by ?? '?'} ran out on attempt ${row.attempts} of ${row.max_attempts} (the worker stopped, hung or died).`;
          await transaction.query(
            "UPDATE jobs SET state = 'failed', locked_by = NULL, locked_until = NULL, last_error = $1, updated_at = $2 WHERE id = $3",
            [error, now, row.id],
          );
          continue;
        }
        const [claimed] = (
          await transaction.query<JobRow>(
            `UPDATE jobs SET state = 'running', attempts = attempts + 1, locked_by = $1, locked_until = $2, locked_host = $3, locked_pid = $4, updated_at = $5 WHERE id = $6 RETURNING ${JOB_COLUMNS}`,
            [worker, now + leaseMs, holder.host, holder.pid, now, row.id],
          )
        ).rows;
        return rowToJob(claimed!);
      }
    });
  }

  async renew(id: string, worker: string, leaseMs: number): Promise<Job> {
    const checked = checkRenewal(id, worker, leaseMs);
    const now = this.#now();
    return this.#leased(checked.id, checked.worker, (transaction) =>
      transaction.query<JobRow>(`UPDATE jobs SET locked_until = $1 WHERE id = $2 RETURNING ${JOB_COLUMNS}`, [
        now + checked.leaseMs,
        checked.id,
      ]),
    );
  }

  async complete(id: string, worker: string): Promise<Job> {
    const checkedId = checkJobId(id);
    const checkedWorker = checkWorker(worker);
    const now = this.#now();
    return this.#leased(checkedId, checkedWorker, (transaction) =>
      transaction.query<JobRow>(
        `UPDATE jobs SET state = 'done', locked_by = NULL, locked_until = NULL, updated_at = $1 WHERE id = $2 RETURNING ${JOB_COLUMNS}`,
        [now, checkedId],
      ),
    );
  }

  async fail(id: string, worker: string, failure: { error: string; retryAt?: string }): Promise<Job> {
    const checkedId = checkJobId(id);
    const checkedWorker = checkWorker(worker);
    const { error, retryAt } = checkFailure(failure);
    const now = this.#now();
    return this.#leased(checkedId, checkedWorker, (transaction, row) =>
      retryAt !== undefined && row.attempts < row.max_attempts
        ? transaction.query<JobRow>(
            `UPDATE jobs SET state = 'pending', run_at = $1, locked_by = NULL, locked_until = NULL, last_error = $2, updated_at = $3 WHERE id = $4 RETURNING ${JOB_COLUMNS}`,
            [retryAt, error, now, checkedId],
          )
        : transaction.query<JobRow>(
            `UPDATE jobs SET state = 'failed', locked_by = NULL, locked_until = NULL, last_error = $1, updated_at = $2 WHERE id = $3 RETURNING ${JOB_COLUMNS}`,
            [error, now, checkedId],
          ),
    );
  }

  async retry(id: string): Promise<Job> {
    const checkedId = checkJobId(id);
    const now = this.#now();
    return this.#database.transaction(async (transaction) => {
      const row = await this.#row(transaction, checkedId, true);
      if (!row) throw jobNotFound(checkedId);
      if (row.state !== 'failed')
        throw new EngramError(
          'CONFLICT',
          `Job ${checkedId} is ${row.state}, not failed: only a failed job can be retried.`,
        );
      const [updated] = (
        await transaction.query<JobRow>(
          `UPDATE jobs SET state = 'pending', attempts = 0, run_at = $1, updated_at = $1 WHERE id = $2 RETURNING ${JOB_COLUMNS}`,
          [now, checkedId],
        )
      ).rows;
      return rowToJob(updated!);
    });
  }

  async hasten(queue: string): Promise<number> {
    const checked = checkQueue(queue);
    const now = this.#now();
    const result = await this.#database.query(
      "UPDATE jobs SET run_at = $1, updated_at = $1 WHERE queue = $2 AND state = 'pending' AND run_at > $1",
      [now, checked],
    );
    return result.rowCount ?? 0;
  }

  async get(id: string): Promise<Job | undefined> {
    const row = await this.#row(this.#database, checkJobId(id), false);
    return row && rowToJob(row);
  }

  async list(filter: JobFilter): Promise<Job[]> {
    const { queue, states, limit } = checkJobFilter(filter);
    if (states !== undefined && states.length === 0) return [];
    const parameters = new SqlParameters();
    const conditions: string[] = [];
    if (queue !== undefined) conditions.push(`queue = ${parameters.add(queue)}`);
    if (states !== undefined) conditions.push(`state = ANY(${parameters.add(states)}::text[])`);
    const where = conditions.length === 0 ? '' : `WHERE ${conditions.join(' AND ')}`;
    const limitClause = limit === undefined ? '' : `LIMIT ${parameters.add(limit)}`;
    return (
      await this.#database.query<JobRow>(
        `SELECT ${JOB_COLUMNS} FROM jobs ${where} ORDER BY seq ${limitClause}`,
        parameters.values,
      )
    ).rows.map(rowToJob);
  }

  async delete(filter: FinishedJobFilter): Promise<number> {
    const { queue, states, updatedBefore } = checkJobDeletion(filter);
    const result = await this.#database.query(
      'DELETE FROM jobs WHERE queue = $1 AND state = ANY($2::text[]) AND updated_at < $3',
      [queue, states, updatedBefore],
    );
    return result.rowCount ?? 0;
  }

  async counts(queue?: string): Promise<Record<JobState, number>> {
    const checked = queue === undefined ? undefined : checkQueue(queue);
    const rows = (
      checked === undefined
        ? await this.#database.query<{ state: JobState; n: number }>(
            'SELECT state, count(*) AS n FROM jobs GROUP BY state',
          )
        : await this.#database.query<{ state: JobState; n: number }>(
            'SELECT state, count(*) AS n FROM jobs WHERE queue = $1 GROUP BY state',
            [checked],
          )
    ).rows;
    const counts: Record<JobState, number> = { pending: 0, running: 0, done: 0, failed: 0 };
    for (const row of rows) counts[row.state] = row.n;
    return counts;
  }

  /** Runs `change` on a job `worker` still holds, the row locked; JOB_LEASE_LOST when another worker took it or it ended. */
  async #leased(
    id: string,
    worker: string,
    change: (transaction: PostgresQueryable, row: JobRow) => Promise<{ rows: JobRow[] }>,
  ): Promise<Job> {
    return this.#database.transaction(async (transaction) => {
      const row = await this.#row(transaction, id, true);
      if (!row) throw jobNotFound(id);
      if (row.state !== 'running' || row.locked_by !== worker) {
        const now = row.state === 'running' ? `now leased to ${JSON.stringify(row.locked_by)}` : `now ${row.state}`;
        throw new EngramError(
          'JOB_LEASE_LOST',
          `Worker ${JSON.stringify(worker)} no longer holds job ${id} (${now}): its lease ran out and the job was claimed again. Drop this run's result; lease longer for slow jobs.`,
          { details: { jobId: id, state: row.state } },
        );
      }
      const [updated] = (await change(transaction, row)).rows;
      return rowToJob(updated!);
    });
  }

  async #row(queryable: PostgresQueryable, id: string, forUpdate: boolean): Promise<JobRow | undefined> {
    const [row] = (
      await queryable.query<JobRow>(`SELECT ${JOB_COLUMNS} FROM jobs WHERE id = $1${forUpdate ? ' FOR UPDATE' : ''}`, [
        id,
      ])
    ).rows;
    return row;
  }

  get #database(): PostgresAccess {
    return this.#dependencies.database;
  }

  #now(): number {
    return this.#dependencies.now().getTime();
  }
}
