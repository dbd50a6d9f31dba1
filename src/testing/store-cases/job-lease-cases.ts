// Claims and leases: a job has one holder at a time, in claim order; a lease ends when its time runs
// out, its heartbeat stops or its process dies; and two processes working one queue run each job once.
import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'vitest';
import type { NewJob } from '../../contracts/memory-store-jobs.js';
import { expectEngramError, storeCaseGroup, type StoreCaseDefinition } from '../store-suite-support.js';
import {
  collectStoreWriteWorker,
  runStoreWorkersTogether,
  spawnStoreWorker,
  unexpectedStderr,
} from '../store-write-worker-process.js';
import { anHourAgo, inAnHour, LONG_LEASE, outlive } from './job-case-support.js';

const JOBS_FOR_TWO_WORKERS = 300;

/** Claims and leases within one process; the job queue group runs them after enqueueing. */
export const jobLeaseCases: ReadonlyArray<StoreCaseDefinition<'jobs'>> = [
  {
    name: 'jobs.claim leases due jobs in runAt order, then enqueue order, and leaves future and other queues alone',
    async run({ store }) {
      const ids: Record<string, string> = {};
      const enqueue = async (key: string, extra: Partial<NewJob> = {}): Promise<void> => {
        ids[key] = (await store.jobs.enqueue({ queue: 'work', key, payload: { key }, ...extra })).job.id;
      };
      await enqueue('a');
      await enqueue('b');
      await enqueue('later', { runAt: inAnHour() });
      await enqueue('c');
      await enqueue('overdue', { runAt: anHourAgo() });
      await store.jobs.enqueue({ queue: 'other', key: 'a', payload: null });

      const order: string[] = [];
      for (;;) {
        const before = Date.now();
        const job = await store.jobs.claim({ queue: 'work', worker: 'worker-1', leaseMs: LONG_LEASE });
        if (!job) break;
        order.push((job.payload as { key: string }).key);
        expect(job).toMatchObject({ state: 'running', attempts: 1, lockedBy: 'worker-1' });
        expect(Date.parse(job.lockedUntil!)).toBeGreaterThanOrEqual(before + LONG_LEASE - 1_000);
        expect(await store.jobs.get(job.id)).toEqual(job);
      }
      expect(order).toEqual(['overdue', 'a', 'b', 'c']);
      expect(await store.jobs.get(ids.later!)).toMatchObject({ state: 'pending', attempts: 0 });
      expect(await store.jobs.counts('other')).toEqual({ pending: 1, running: 0, done: 0, failed: 0 });
      expect(
        await store.jobs.claim({ queue: 'missing-queue', worker: 'worker-1', leaseMs: LONG_LEASE }),
      ).toBeUndefined();
    },
  },
  {
    name: 'a job is not claimed twice while leased; once its lease runs out another worker takes it and the first gets JOB_LEASE_LOST',
    timeoutMs: 20_000,
    async run({ store }) {
      const held = await store.jobs.enqueue({ queue: 'held', key: 'k', payload: null });
      expect((await store.jobs.claim({ queue: 'held', worker: 'first', leaseMs: LONG_LEASE }))?.id).toBe(held.job.id);
      expect(await store.jobs.claim({ queue: 'held', worker: 'second', leaseMs: LONG_LEASE })).toBeUndefined();

      const slow = await store.jobs.enqueue({ queue: 'slow', key: 'k', payload: { step: 1 } });
      const firstLease = await store.jobs.claim({ queue: 'slow', worker: 'first', leaseMs: 50 });
      expect(firstLease).toMatchObject({ id: slow.job.id, attempts: 1, lockedBy: 'first' });
      await outlive(firstLease!);
      const taken = await store.jobs.claim({ queue: 'slow', worker: 'second', leaseMs: LONG_LEASE });
      expect(taken).toMatchObject({ id: slow.job.id, state: 'running', attempts: 2, lockedBy: 'second' });

      await expectEngramError(() => store.jobs.complete(slow.job.id, 'first'), 'JOB_LEASE_LOST');
      await expectEngramError(
        () => store.jobs.fail(slow.job.id, 'first', { error: 'late failure', retryAt: new Date().toISOString() }),
        'JOB_LEASE_LOST',
      );
      expect(await store.jobs.get(slow.job.id)).toEqual(taken);
      expect(await store.jobs.complete(slow.job.id, 'second')).toMatchObject({
        state: 'done',
        attempts: 2,
        lockedBy: null,
        lockedUntil: null,
      });
    },
  },
  {
    name: "jobs.renew is the holder's heartbeat: a renewed lease is never taken; once renewals stop it is taken back after the lease; a stranger cannot renew",
    timeoutMs: 20_000,
    async run({ store }) {
      const { job } = await store.jobs.enqueue({ queue: 'beat', key: 'k', payload: null });
      const lease = await store.jobs.claim({ queue: 'beat', worker: 'alive', leaseMs: 300 });
      expect(lease).toMatchObject({ id: job.id, attempts: 1, lockedBy: 'alive' });
      // Renewed every 100 ms for three leases' time: nobody else gets it.
      for (let beat = 0; beat < 9; beat += 1) {
        await sleep(100);
        const renewed = await store.jobs.renew(job.id, 'alive', 300);
        expect(renewed).toMatchObject({ state: 'running', attempts: 1, lockedBy: 'alive' });
        expect(Date.parse(renewed.lockedUntil!)).toBeGreaterThan(Date.now() + 150);
        expect(await store.jobs.claim({ queue: 'beat', worker: 'other', leaseMs: LONG_LEASE })).toBeUndefined();
      }
      await expectEngramError(() => store.jobs.renew(job.id, 'stranger', 300), 'JOB_LEASE_LOST');
      await expectEngramError(() => store.jobs.renew('job_missing', 'alive', 300), 'NOT_FOUND');
      for (const bad of [0, -1, 1.5, Number.NaN, '300', 1e12])
        await expectEngramError(() => store.jobs.renew(job.id, 'alive', bad as number), 'INVALID_INPUT');
      // The heartbeat stops: the lease runs out and another worker takes the job.
      await outlive((await store.jobs.get(job.id))!);
      const taken = await store.jobs.claim({ queue: 'beat', worker: 'other', leaseMs: LONG_LEASE });
      expect(taken).toMatchObject({ id: job.id, attempts: 2, lockedBy: 'other' });
      await expectEngramError(() => store.jobs.renew(job.id, 'alive', 300), 'JOB_LEASE_LOST');
      // A finished job has no lease to renew.
      await store.jobs.complete(job.id, 'other');
      await expectEngramError(() => store.jobs.renew(job.id, 'other', 300), 'JOB_LEASE_LOST');
    },
  },
  {
    name: 'a job held by a process that died on this host is claimed again at once, its long lease not waited out; a live holder keeps it',
    timeoutMs: 60_000,
    async run({ store, url }) {
      const { job } = await store.jobs.enqueue({ queue: 'orphan', key: 'k', payload: { step: 1 } });
      const child = spawnStoreWorker({
        url,
        task: { mode: 'claim-and-hold', queue: 'orphan', worker: 'doomed', leaseMs: 3_600_000 },
      });
      let claimed!: (line: string) => void;
      const holding = new Promise<string>((resolve) => {
        claimed = resolve;
      });
      const exited = collectStoreWriteWorker(child, (line) => {
        if (line.startsWith('claimed ') || line === 'none') claimed(line);
      });
      const line = await Promise.race([
        holding,
        exited.then((result) => expect.fail(`the holder exited early: ${result.stderr}`)),
      ]);
      expect(line).toBe(`claimed ${job.id}`);
      // Alive, with an hour's lease: nobody else gets it.
      expect(await store.jobs.claim({ queue: 'orphan', worker: 'survivor', leaseMs: LONG_LEASE })).toBeUndefined();
      child.kill('SIGKILL');
      const result = await exited;
      expect({ signal: result.signal, stderr: unexpectedStderr(result.stderr) }).toEqual({
        signal: 'SIGKILL',
        stderr: '',
      });
      const taken = await store.jobs.claim({ queue: 'orphan', worker: 'survivor', leaseMs: LONG_LEASE });
      expect(taken).toMatchObject({
        id: job.id,
        state: 'running',
        attempts: 2,
        lockedBy: 'survivor',
        payload: { step: 1 },
      });
      // The survivor is alive (this process): held by it, the job is not claimed again.
      expect(await store.jobs.claim({ queue: 'orphan', worker: 'third', leaseMs: LONG_LEASE })).toBeUndefined();
      expect(await store.jobs.complete(job.id, 'survivor')).toMatchObject({ state: 'done', attempts: 2 });
    },
  },
];

/** Workers in other processes, started together by a checkpoint. */
export const jobWorkerCases = storeCaseGroup({
  title: 'job workers in other processes',
  roles: ['jobs', 'checkpoints'],
  cases: [
    {
      name: `two processes claiming from one queue of ${JOBS_FOR_TWO_WORKERS} jobs at once run every job exactly once`,
      timeoutMs: 120_000,
      async run({ store, url }) {
        const queue = 'shared-queue';
        const ids = new Set<string>();
        for (let index = 0; index < JOBS_FOR_TWO_WORKERS; index += 1) {
          ids.add((await store.jobs.enqueue({ queue, key: `job-${index}`, payload: { index } })).job.id);
        }
        const results = await runStoreWorkersTogether(
          store,
          ['worker-a', 'worker-b'].map((worker) => ({
            url,
            task: { mode: 'claim-jobs', queue, worker, leaseMs: LONG_LEASE } as const,
          })),
        );
        for (const result of results) {
          expect({ exitCode: result.exitCode, signal: result.signal, stderr: unexpectedStderr(result.stderr) }).toEqual(
            { exitCode: 0, signal: null, stderr: '' },
          );
        }
        const claims = results.map((result) => result.ids.map((line) => line.split(' ')));
        const claimed = claims.flat().map(([id]) => id!);
        // Every job once, none twice, none on a second attempt.
        expect(claimed.filter((id, index) => claimed.indexOf(id) !== index)).toEqual([]);
        expect(new Set(claimed)).toEqual(ids);
        expect(claims.flat().filter(([, attempts]) => attempts !== '1')).toEqual([]);
        // Both really worked the queue at once.
        for (const own of claims) expect(own.length).toBeGreaterThan(0);

        expect(await store.jobs.counts(queue)).toEqual({
          pending: 0,
          running: 0,
          done: JOBS_FOR_TWO_WORKERS,
          failed: 0,
        });
        const jobs = await store.jobs.list({ queue });
        expect(jobs.filter((job) => job.attempts !== 1 || job.lockedBy !== null)).toEqual([]);
      },
    },
  ],
});
