import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SqliteMemoryStore } from '../../src/adapters/sqlite/sqlite-memory-store.js';
import type { Job, JobQueue } from '../../src/contracts/memory-store-jobs.js';
import { reviveFailedJobs } from '../../src/extraction/revive-failed-jobs.js';

// `engram queue run --failed` from two processes at once: two connections to one real SQLite file,
// the second acting at the exact point of the race (after the first listed the failed jobs, before
// it retried them), which processes alone hit only now and then (cli-queue-run-race.test.ts).
const QUEUE = 'extraction';
const START = Date.parse('2026-05-01T09:00:00.000Z');

let directory: string;
let clock: { now: number };
let first: SqliteMemoryStore;
let second: SqliteMemoryStore;

beforeEach(async () => {
  directory = await mkdtemp(join(tmpdir(), 'engram-revive-'));
  clock = { now: START };
  const path = join(directory, 'engram.db');
  first = new SqliteMemoryStore({ path, now: () => new Date(clock.now) });
  second = new SqliteMemoryStore({ path, now: () => new Date(clock.now) });
  await first.open();
  await second.open();
});
afterEach(async () => {
  await first.close();
  await second.close();
  await rm(directory, { recursive: true, force: true });
});

/** Queues `count` jobs and runs each to failure (one attempt each), one second apart. */
async function failedJobs(count: number, from = 0): Promise<Job[]> {
  const jobs: Job[] = [];
  for (let index = from; index < from + count; index += 1) {
    await first.jobs.enqueue({ queue: QUEUE, key: `turn-${index}`, payload: { index }, maxAttempts: 1 });
    const claimed = await first.jobs.claim({ queue: QUEUE, worker: 'setup', leaseMs: 60_000 });
    jobs.push(await first.jobs.fail(claimed!.id, 'setup', { error: 'MODEL_AUTH: invalid x-api-key' }));
    clock.now += 1_000;
  }
  expect(jobs.every((job) => job.state === 'failed')).toBe(true);
  return jobs;
}

/** The first connection's queue, with the other process acting just before or just after its n-th list (from 0). */
function withOtherProcess(other: {
  beforeList?: (call: number) => Promise<void>;
  afterList?: (call: number) => Promise<void>;
}): Pick<JobQueue, 'list' | 'retry'> {
  let calls = 0;
  return {
    async list(filter) {
      const call = calls++;
      await other.beforeList?.(call);
      const listed = await first.jobs.list(filter);
      await other.afterList?.(call);
      return listed;
    },
    retry: (id) => first.jobs.retry(id),
  };
}

async function states(): Promise<Record<string, string>> {
  const all = await first.jobs.list({ queue: QUEUE });
  return Object.fromEntries(all.map((job) => [job.key, `${job.state}:${job.attempts}`]));
}

describe('reviveFailedJobs (engram queue run --failed) against another process', () => {
  it('counts a job another process retried or removed after this run listed it as handled elsewhere, and revives the rest', async () => {
    const jobs = await failedJobs(4);
    const result = await reviveFailedJobs(
      withOtherProcess({
        afterList: async (call) => {
          if (call !== 0) return;
          await second.jobs.retry(jobs[3]!.id);
          // The oldest failed job only: it is the one last changed before this instant.
          expect(
            await second.jobs.delete({
              queue: QUEUE,
              states: ['failed'],
              updatedBefore: new Date(START + 500).toISOString(),
            }),
          ).toBe(1);
        },
      }),
      QUEUE,
    );
    expect(result).toEqual({ revived: 2, handledElsewhere: 2 });
    expect(await states()).toEqual({ 'turn-1': 'pending:0', 'turn-2': 'pending:0', 'turn-3': 'pending:0' });
    expect(await first.jobs.get(jobs[0]!.id)).toBeUndefined();
  });

  it('lets two runs at once put each failed job back exactly once', async () => {
    await failedJobs(6);
    const results = await Promise.all([reviveFailedJobs(first.jobs, QUEUE), reviveFailedJobs(second.jobs, QUEUE)]);
    expect(results[0]!.revived + results[1]!.revived).toBe(6);
    for (const result of results) expect(result.revived + result.handledElsewhere).toBeLessThanOrEqual(6);
    expect(Object.values(await states())).toEqual(Array(6).fill('pending:0'));
  });

  it('does not revive a job twice when another worker runs it and it fails again meanwhile', async () => {
    const jobs = await failedJobs(2);
    const result = await reviveFailedJobs(
      withOtherProcess({
        beforeList: async (call) => {
          if (call !== 1) return;
          const claimed = await second.jobs.claim({ queue: QUEUE, worker: 'other', leaseMs: 60_000 });
          expect(claimed?.id).toBe(jobs[0]!.id);
          await second.jobs.fail(claimed!.id, 'other', { error: 'MODEL_AUTH: still invalid' });
        },
      }),
      QUEUE,
    );
    expect(result).toEqual({ revived: 2, handledElsewhere: 0 });
    expect(await states()).toEqual({ 'turn-0': 'failed:1', 'turn-1': 'pending:0' });
  });

  it('still finds the failed jobs not yet seen when more than a page of seen ones failed again', async () => {
    // 502 failed: the first round puts back 500 (a page); another worker fails those 500 again
    // before the second round, which must look past them to the 2 it has not seen.
    await failedJobs(502);
    const result = await reviveFailedJobs(
      withOtherProcess({
        beforeList: async (call) => {
          if (call !== 1) return;
          for (let index = 0; index < 500; index += 1) {
            const claimed = await second.jobs.claim({ queue: QUEUE, worker: 'other', leaseMs: 60_000 });
            await second.jobs.fail(claimed!.id, 'other', { error: 'MODEL_AUTH: still invalid' });
          }
        },
      }),
      QUEUE,
    );
    expect(result).toEqual({ revived: 502, handledElsewhere: 0 });
    const counts = await first.jobs.counts(QUEUE);
    expect(counts).toMatchObject({ failed: 500, pending: 2 });
    const pending = await first.jobs.list({ queue: QUEUE, states: ['pending'] });
    expect(pending.map((job) => job.key)).toEqual(['turn-500', 'turn-501']);
  });
});
