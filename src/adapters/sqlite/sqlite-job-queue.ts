import type { SqliteStatement } from './sqlite-driver.js';
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
import { guard } from './sqlite-database.js';
import { JOB_COLUMNS, jobNotFound, rowToJob, type JobRow } from '../sql/job-rows.js';
import { isDeadHolder, thisLeaseHolder } from '../sql/lease-holder.js';

/** What the job queue needs from the store: its prepared statements, write transactions and clock. */
export interface SqliteJobQueueDependencies {
  statement: (sql: string) => SqliteStatement;
  /** Runs `work` in one BEGIN IMMEDIATE transaction: no other process writes in between. */
  transaction: (work: () => void) => Promise<void>;
  now: () => Date;
  defaults: () => { maxAttempts: number; maxPayloadBytes: number };
}

/**
 * The store's jobs role: durable jobs in the SQLite file. Every state change is one immediate
 * transaction, so a claim (find the first due job, lease it) is atomic across processes.
 */
export class SqliteJobQueue implements JobQueue {
  readonly #dependencies: SqliteJobQueueDependencies;

  constructor(dependencies: SqliteJobQueueDependencies) {
    this.#dependencies = dependencies;
  }

  async enqueue(input: NewJob): Promise<{ job: Job; created: boolean }> {
    const now = this.#dependencies.now().getTime();
    const checked = checkNewJob(input, { ...this.#dependencies.defaults(), now });
    let result: { job: Job; created: boolean } | undefined;
    await this.#dependencies.transaction(() => {
      const inserted = this.#statement(
        `INSERT INTO jobs (id, queue, key, payload, state, attempts, max_attempts, run_at, created_at, updated_at)
         VALUES (?, ?, ?, ?, 'pending', 0, ?, ?, ?, ?) ON CONFLICT (queue, key) DO NOTHING`,
      ).run(
        createSortableId('job', now),
        checked.queue,
        checked.key,
        checked.payloadJson,
        checked.maxAttempts,
        checked.runAt,
        now,
        now,
      );
      const row = this.#statement(`SELECT ${JOB_COLUMNS} FROM jobs WHERE queue = ? AND key = ?`).get(
        checked.queue,
        checked.key,
      ) as JobRow;
      result = { job: rowToJob(row), created: inserted.changes === 1 };
    });
    return result!;
  }

  async claim(options: { queue: string; worker: string; leaseMs: number }): Promise<Job | undefined> {
    const { queue, worker, leaseMs } = checkClaim(options);
    const now = this.#dependencies.now().getTime();
    const holder = thisLeaseHolder();
    let claimed: Job | undefined;
    await this.#dependencies.transaction(() => {
      const dead = this.#deadHolders(queue, now);
      for (;;) {
        const row = this.#firstDue(queue, now, dead);
        if (!row) return;
        if (row.state === 'running' && row.attempts >= row.max_attempts) {
          // Its worker died on every attempt it had: a job that kills workers must not loop forever.
          const error = `The lease of worker ${row.locked_by ?? '?'} ran out on attempt ${row.attempts} of ${row.max_attempts} (the worker stopped, hung or died).`;
          this.#statement(
            "UPDATE jobs SET state = 'failed', locked_by = NULL, locked_until = NULL, last_error = ?, updated_at = ? WHERE id = ?",
          ).run(error, now, row.id);
          dead.delete(row.id);
          continue;
        }
        this.#statement(
          "UPDATE jobs SET state = 'running', attempts = attempts + 1, locked_by = ?, locked_until = ?, locked_host = ?, locked_pid = ?, updated_at = ? WHERE id = ?",
        ).run(worker, now + leaseMs, holder.host, holder.pid, now, row.id);
        claimed = this.#read(row.id);
        return;
      }
    });
    return claimed;
  }

  async renew(id: string, worker: string, leaseMs: number): Promise<Job> {
    const checked = checkRenewal(id, worker, leaseMs);
    const now = this.#dependencies.now().getTime();
    return this.#leased(checked.id, checked.worker, () => {
      this.#statement('UPDATE jobs SET locked_until = ? WHERE id = ?').run(now + checked.leaseMs, checked.id);
    });
  }

  /** Running jobs of a queue whose lease still runs but whose holder is gone from this host: due now. */
  #deadHolders(queue: string, now: number): Set<string> {
    const rows = this.#statement(
      "SELECT id, locked_host, locked_pid FROM jobs WHERE queue = ? AND state = 'running' AND locked_until > ? AND locked_host = ?",
    ).all(queue, now, thisLeaseHolder().host) as Array<{ id: string; locked_host: string; locked_pid: number | null }>;
    return new Set(rows.filter((row) => isDeadHolder(row.locked_host, row.locked_pid)).map((row) => row.id));
  }

  async complete(id: string, worker: string): Promise<Job> {
    const checkedId = checkJobId(id);
    const checkedWorker = checkWorker(worker);
    const now = this.#dependencies.now().getTime();
    return this.#leased(checkedId, checkedWorker, () => {
      this.#statement(
        "UPDATE jobs SET state = 'done', locked_by = NULL, locked_until = NULL, updated_at = ? WHERE id = ?",
      ).run(now, checkedId);
    });
  }

  async fail(id: string, worker: string, failure: { error: string; retryAt?: string }): Promise<Job> {
    const checkedId = checkJobId(id);
    const checkedWorker = checkWorker(worker);
    const { error, retryAt } = checkFailure(failure);
    const now = this.#dependencies.now().getTime();
    return this.#leased(checkedId, checkedWorker, (row) => {
      if (retryAt !== undefined && row.attempts < row.max_attempts) {
        this.#statement(
          "UPDATE jobs SET state = 'pending', run_at = ?, locked_by = NULL, locked_until = NULL, last_error = ?, updated_at = ? WHERE id = ?",
        ).run(retryAt, error, now, checkedId);
      } else {
        this.#statement(
          "UPDATE jobs SET state = 'failed', locked_by = NULL, locked_until = NULL, last_error = ?, updated_at = ? WHERE id = ?",
        ).run(error, now, checkedId);
      }
    });
  }

  async retry(id: string): Promise<Job> {
    const checkedId = checkJobId(id);
    const now = this.#dependencies.now().getTime();
    let job: Job | undefined;
    await this.#dependencies.transaction(() => {
      const row = this.#row(checkedId);
      if (!row) throw jobNotFound(checkedId);
      if (row.state !== 'failed') {
        throw new EngramError(
          'CONFLICT',
          `Job ${checkedId} is ${row.state}, not failed: only a failed job can be retried.`,
        );
      }
      this.#statement("UPDATE jobs SET state = 'pending', attempts = 0, run_at = ?, updated_at = ? WHERE id = ?").run(
        now,
        now,
        checkedId,
      );
      job = this.#read(checkedId);
    });
    return job!;
  }

  async hasten(queue: string): Promise<number> {
    const checked = checkQueue(queue);
    const now = this.#dependencies.now().getTime();
    let changed = 0;
    await this.#dependencies.transaction(() => {
      changed = this.#statement(
        "UPDATE jobs SET run_at = ?, updated_at = ? WHERE queue = ? AND state = 'pending' AND run_at > ?",
      ).run(now, now, checked, now).changes;
    });
    return changed;
  }

  async get(id: string): Promise<Job | undefined> {
    const row = this.#row(checkJobId(id));
    return row && rowToJob(row);
  }

  async list(filter: JobFilter): Promise<Job[]> {
    const { queue, states, limit } = checkJobFilter(filter);
    const conditions: string[] = [];
    const parameters: unknown[] = [];
    if (queue !== undefined) {
      conditions.push('queue = ?');
      parameters.push(queue);
    }
    if (states !== undefined) {
      if (states.length === 0) return [];
      conditions.push(`state IN (${states.map(() => '?').join(', ')})`);
      parameters.push(...states);
    }
    const where = conditions.length === 0 ? '' : `WHERE ${conditions.join(' AND ')}`;
    const sql = `SELECT ${JOB_COLUMNS} FROM jobs ${where} ORDER BY seq LIMIT ${limit ?? -1}`;
    return guard(() => (this.#statement(sql).all(...parameters) as JobRow[]).map(rowToJob));
  }

  async delete(filter: FinishedJobFilter): Promise<number> {
    const { queue, states, updatedBefore } = checkJobDeletion(filter);
    const sql = `DELETE FROM jobs WHERE queue = ? AND state IN (${states.map(() => '?').join(', ')}) AND updated_at < ?`;
    let deleted = 0;
    await this.#dependencies.transaction(() => {
      deleted = this.#statement(sql).run(queue, ...states, updatedBefore).changes;
    });
    return deleted;
  }

  async counts(queue?: string): Promise<Record<JobState, number>> {
    const checked = queue === undefined ? undefined : checkQueue(queue);
    const rows = guard(() =>
      checked === undefined
        ? (this.#statement('SELECT state, COUNT(*) AS n FROM jobs GROUP BY state').all() as Array<{
            state: JobState;
            n: number;
          }>)
        : (this.#statement('SELECT state, COUNT(*) AS n FROM jobs WHERE queue = ? GROUP BY state').all(
            checked,
          ) as Array<{ state: JobState; n: number }>),
    );
    const counts: Record<JobState, number> = { pending: 0, running: 0, done: 0, failed: 0 };
    for (const row of rows) counts[row.state] = row.n;
    return counts;
  }

  /**
   * The first due job of a queue: pending with runAt come, or running with its lease run out or its
   * holder dead (`dead`); by runAt, then enqueue order.
   */
  #firstDue(queue: string, now: number, dead: ReadonlySet<string>): (JobRow & { seq: number }) | undefined {
    const pending = this.#statement(
      `SELECT seq, ${JOB_COLUMNS} FROM jobs WHERE queue = ? AND state = 'pending' AND run_at <= ? ORDER BY run_at, seq LIMIT 1`,
    ).get(queue, now) as (JobRow & { seq: number }) | undefined;
    const ids = [...dead];
    const expired = this.#statement(
      `SELECT seq, ${JOB_COLUMNS} FROM jobs WHERE queue = ? AND state = 'running' AND (locked_until <= ?${ids.length > 0 ? ` OR id IN (${ids.map(() => '?').join(', ')})` : ''}) ORDER BY run_at, seq LIMIT 1`,
    ).get(queue, now, ...ids) as (JobRow & { seq: number }) | undefined;
    if (!pending || !expired) return pending ?? expired;
    return expired.run_at < pending.run_at || (expired.run_at === pending.run_at && expired.seq < pending.seq)
      ? expired
      : pending;
  }

  /** Runs `change` on a job `worker` still holds, in one transaction; JOB_LEASE_LOST when another worker took it or it ended. */
  async #leased(id: string, worker: string, change: (row: JobRow) => void): Promise<Job> {
    let job: Job | undefined;
    await this.#dependencies.transaction(() => {
      const row = this.#row(id);
      if (!row) throw jobNotFound(id);
      if (row.state !== 'running' || row.locked_by !== worker) {
        const now = row.state === 'running' ? `now leased to ${JSON.stringify(row.locked_by)}` : `now ${row.state}`;
        throw new EngramError(
          'JOB_LEASE_LOST',
          `Worker ${JSON.stringify(worker)} no longer holds job ${id} (${now}): its lease ran out and the job was claimed again. Drop this run's result; lease longer for slow jobs.`,
          { details: { jobId: id, state: row.state } },
        );
      }
      change(row);
      job = this.#read(id);
    });
    return job!;
  }

  #read(id: string): Job {
    return rowToJob(this.#row(id)!);
  }

  #row(id: string): JobRow | undefined {
    return guard(() => this.#statement(`SELECT ${JOB_COLUMNS} FROM jobs WHERE id = ?`).get(id) as JobRow | undefined);
  }

  #statement(sql: string): SqliteStatement {
    return this.#dependencies.statement(sql);
  }
}
