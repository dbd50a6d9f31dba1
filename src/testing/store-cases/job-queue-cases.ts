import { expect } from 'vitest';
import type { Job } from '../../contracts/memory-store-jobs.js';
import { expectEngramError, storeCaseGroup } from '../store-suite-support.js';
import { anHourAgo, inAnHour, LONG_LEASE, outlive } from './job-case-support.js';
import { jobLeaseCases } from './job-lease-cases.js';
import { jobInputCases } from './job-queue-input-cases.js';

export const jobQueueCases = storeCaseGroup({
  title: 'job queue',
  roles: ['jobs'],
  cases: [
    {
      name: 'jobs.enqueue stores a pending job with its payload verbatim and fills defaults; jobs.get reads it back',
      async run({ store }) {
        const payload = {
          sessionId: 'session-1',
          turn: 7,
          ratio: 0.1 + 0.2,
          flags: [true, false, null],
          nested: { empty: {}, list: [], text: 'ü, 日本語, emoji 🚀, "quotes" and \\ backslash', newline: 'a\nb\tc' },
        };
        const before = Date.now();
        const { job, created } = await store.jobs.enqueue({ queue: 'extract', key: 'session-1:turn-7', payload });
        expect(created).toBe(true);
        expect(job).toEqual({
          id: expect.stringMatching(/\S/),
          queue: 'extract',
          key: 'session-1:turn-7',
          payload,
          state: 'pending',
          attempts: 0,
          maxAttempts: 5,
          runAt: job.createdAt,
          lockedBy: null,
          lockedUntil: null,
          lastError: null,
          createdAt: expect.any(String),
          updatedAt: job.createdAt,
        });
        expect(new Date(job.createdAt).toISOString()).toBe(job.createdAt);
        expect(Date.parse(job.createdAt)).toBeGreaterThanOrEqual(before - 1_000);
        expect(await store.jobs.get(job.id)).toEqual(job);
        expect(await store.jobs.get('job_that_does_not_exist')).toBeUndefined();

        for (const scalar of [null, 0, 'text', false, [1, 'two', { three: 3 }]]) {
          const { job: other } = await store.jobs.enqueue({
            queue: 'extract',
            key: `scalar-${JSON.stringify(scalar)}`,
            payload: scalar,
            maxAttempts: 2,
            runAt: '2030-01-01T00:00:00+01:00',
          });
          expect(other).toMatchObject({ payload: scalar, maxAttempts: 2, runAt: '2029-12-31T23:00:00.000Z' });
          expect((await store.jobs.get(other.id))!.payload).toEqual(scalar);
        }
      },
    },
    {
      name: 'jobs.enqueue is idempotent by key within a queue, whatever state the job is in',
      async run({ store }) {
        const first = await store.jobs.enqueue({ queue: 'extract', key: 'turn-1', payload: { version: 1 } });
        const again = await store.jobs.enqueue({
          queue: 'extract',
          key: 'turn-1',
          payload: { version: 2 },
          maxAttempts: 9,
        });
        expect(again).toEqual({ job: first.job, created: false });
        const elsewhere = await store.jobs.enqueue({ queue: 'reindex', key: 'turn-1', payload: null });
        expect(elsewhere.created).toBe(true);
        expect(elsewhere.job.id).not.toBe(first.job.id);

        const claimed = await store.jobs.claim({ queue: 'extract', worker: 'w1', leaseMs: LONG_LEASE });
        expect(claimed?.id).toBe(first.job.id);
        expect(await store.jobs.enqueue({ queue: 'extract', key: 'turn-1', payload: 3 })).toMatchObject({
          created: false,
          job: { id: first.job.id, state: 'running' },
        });
        await store.jobs.complete(first.job.id, 'w1');
        expect(await store.jobs.enqueue({ queue: 'extract', key: 'turn-1', payload: 4 })).toMatchObject({
          created: false,
          job: { id: first.job.id, state: 'done', payload: { version: 1 } },
        });

        const doomed = await store.jobs.enqueue({ queue: 'extract', key: 'turn-2', payload: null, maxAttempts: 1 });
        await store.jobs.claim({ queue: 'extract', worker: 'w1', leaseMs: LONG_LEASE });
        await store.jobs.fail(doomed.job.id, 'w1', { error: 'model unavailable' });
        expect(await store.jobs.enqueue({ queue: 'extract', key: 'turn-2', payload: null })).toMatchObject({
          created: false,
          job: { id: doomed.job.id, state: 'failed' },
        });

        expect(await store.jobs.counts('extract')).toEqual({ pending: 0, running: 0, done: 1, failed: 1 });
        expect(await store.jobs.counts()).toEqual({ pending: 1, running: 0, done: 1, failed: 1 });
      },
    },
    ...jobLeaseCases,
    {
      name: 'jobs.complete marks the job done for good; a stranger, a second completion and an unknown id are refused',
      async run({ store }) {
        const { job } = await store.jobs.enqueue({ queue: 'q', key: 'k', payload: 1 });
        await store.jobs.claim({ queue: 'q', worker: 'owner', leaseMs: LONG_LEASE });
        await expectEngramError(() => store.jobs.complete(job.id, 'stranger'), 'JOB_LEASE_LOST');
        const done = await store.jobs.complete(job.id, 'owner');
        expect(done).toMatchObject({ id: job.id, state: 'done', attempts: 1, lockedBy: null, lockedUntil: null });
        expect(Date.parse(done.updatedAt)).toBeGreaterThanOrEqual(Date.parse(job.updatedAt));
        await expectEngramError(() => store.jobs.complete(job.id, 'owner'), 'JOB_LEASE_LOST');
        await expectEngramError(() => store.jobs.complete('job_missing', 'owner'), 'NOT_FOUND');
        await expectEngramError(() => store.jobs.fail('job_missing', 'owner', { error: 'x' }), 'NOT_FOUND');
        await expectEngramError(() => store.jobs.complete(job.id, 'owner'), 'JOB_LEASE_LOST');
        expect(await store.jobs.claim({ queue: 'q', worker: 'owner', leaseMs: LONG_LEASE })).toBeUndefined();
        expect(await store.jobs.get(job.id)).toEqual(done);
      },
    },
    {
      name: 'jobs.fail with retryAt puts the job back to pending until then; without retryAt or attempts left it fails with lastError',
      async run({ store }) {
        const { job } = await store.jobs.enqueue({ queue: 'retries', key: 'flaky', payload: null, maxAttempts: 2 });
        await store.jobs.claim({ queue: 'retries', worker: 'w', leaseMs: LONG_LEASE });
        const retryAt = inAnHour();
        const backedOff = await store.jobs.fail(job.id, 'w', { error: 'rate limited', retryAt });
        expect(backedOff).toMatchObject({
          state: 'pending',
          attempts: 1,
          runAt: retryAt,
          lockedBy: null,
          lockedUntil: null,
          lastError: 'rate limited',
        });
        expect(await store.jobs.claim({ queue: 'retries', worker: 'w', leaseMs: LONG_LEASE })).toBeUndefined();

        // A retry time that has come: due again at once, without waiting.
        const { job: soon } = await store.jobs.enqueue({ queue: 'soon', key: 'flaky', payload: null, maxAttempts: 2 });
        await store.jobs.claim({ queue: 'soon', worker: 'w', leaseMs: LONG_LEASE });
        await store.jobs.fail(soon.id, 'w', { error: 'first failure', retryAt: anHourAgo() });
        expect(await store.jobs.claim({ queue: 'soon', worker: 'w', leaseMs: LONG_LEASE })).toMatchObject({
          id: soon.id,
          attempts: 2,
          lastError: 'first failure',
        });
        const exhausted = await store.jobs.fail(soon.id, 'w', { error: 'second failure', retryAt: anHourAgo() });
        expect(exhausted).toMatchObject({
          state: 'failed',
          attempts: 2,
          lockedBy: null,
          lockedUntil: null,
          lastError: 'second failure',
        });
        expect(await store.jobs.claim({ queue: 'soon', worker: 'w', leaseMs: LONG_LEASE })).toBeUndefined();

        const { job: fatal } = await store.jobs.enqueue({ queue: 'fatal', key: 'k', payload: null, maxAttempts: 5 });
        await store.jobs.claim({ queue: 'fatal', worker: 'w', leaseMs: LONG_LEASE });
        const longError = `Error: ${'stack frame\n'.repeat(2_000)}`;
        const failed = await store.jobs.fail(fatal.id, 'w', { error: longError });
        expect(failed).toMatchObject({ state: 'failed', attempts: 1 });
        // A long error is kept (at least its start): the worker must be able to say why it failed.
        expect(failed.lastError!.length).toBeGreaterThanOrEqual(1_000);
        expect(longError.startsWith(failed.lastError!)).toBe(true);
        expect(await store.jobs.get(fatal.id)).toEqual(failed);
      },
    },
    {
      name: 'attempts never exceed maxAttempts: a job whose last lease ran out is failed, not claimed again',
      timeoutMs: 20_000,
      async run({ store }) {
        const { job } = await store.jobs.enqueue({ queue: 'poison', key: 'k', payload: null, maxAttempts: 1 });
        const lease = await store.jobs.claim({ queue: 'poison', worker: 'doomed', leaseMs: 50 });
        await store.jobs.enqueue({ queue: 'poison', key: 'next', payload: null });
        await outlive(lease!);
        const next = await store.jobs.claim({ queue: 'poison', worker: 'survivor', leaseMs: LONG_LEASE });
        expect(next).toMatchObject({ key: 'next', attempts: 1 });
        expect(await store.jobs.get(job.id)).toMatchObject({
          state: 'failed',
          attempts: 1,
          lockedBy: null,
          lockedUntil: null,
          lastError: expect.stringMatching(/\S/),
        });
        await expectEngramError(() => store.jobs.complete(job.id, 'doomed'), 'JOB_LEASE_LOST');
      },
    },
    {
      name: 'jobs.retry puts a failed job back to pending now with attempts reset; other states CONFLICT, unknown ids NOT_FOUND',
      async run({ store }) {
        const { job } = await store.jobs.enqueue({
          queue: 'q',
          key: 'broken',
          payload: null,
          maxAttempts: 1,
          runAt: anHourAgo(),
        });
        await store.jobs.claim({ queue: 'q', worker: 'w', leaseMs: LONG_LEASE });
        await store.jobs.fail(job.id, 'w', { error: 'parser crashed' });
        const before = Date.now();
        const retried = await store.jobs.retry(job.id);
        expect(retried).toMatchObject({ id: job.id, state: 'pending', attempts: 0, lockedBy: null, lockedUntil: null });
        expect(Date.parse(retried.runAt)).toBeGreaterThanOrEqual(before - 1_000);
        expect(await store.jobs.claim({ queue: 'q', worker: 'w', leaseMs: LONG_LEASE })).toMatchObject({
          id: job.id,
          attempts: 1,
        });

        await expectEngramError(() => store.jobs.retry(job.id), 'CONFLICT');
        await store.jobs.complete(job.id, 'w');
        await expectEngramError(() => store.jobs.retry(job.id), 'CONFLICT');
        const { job: waiting } = await store.jobs.enqueue({ queue: 'q', key: 'waiting', payload: null });
        await expectEngramError(() => store.jobs.retry(waiting.id), 'CONFLICT');
        await expectEngramError(() => store.jobs.retry('job_missing'), 'NOT_FOUND');
        expect(await store.jobs.counts('q')).toEqual({ pending: 1, running: 0, done: 1, failed: 0 });
      },
    },
    {
      name: 'jobs.hasten makes the pending jobs of one queue due now, attempts kept; running, failed, done and other queues untouched',
      async run({ store }) {
        const { job: waiting } = await store.jobs.enqueue({ queue: 'q', key: 'backed-off', payload: null });
        await store.jobs.claim({ queue: 'q', worker: 'w', leaseMs: LONG_LEASE });
        const backedOff = await store.jobs.fail(waiting.id, 'w', { error: 'rate limited', retryAt: inAnHour() });
        const { job: later } = await store.jobs.enqueue({ queue: 'q', key: 'later', payload: null, runAt: inAnHour() });
        const { job: due } = await store.jobs.enqueue({ queue: 'q', key: 'due', payload: null, runAt: anHourAgo() });
        const { job: failed } = await store.jobs.enqueue({ queue: 'q', key: 'failed', payload: null, maxAttempts: 1 });
        const { job: elsewhere } = await store.jobs.enqueue({
          queue: 'other',
          key: 'x',
          payload: null,
          runAt: inAnHour(),
        });
        // `due` and `failed` are claimed by runAt: `failed` (now) comes after `due` (an hour ago).
        await store.jobs.claim({ queue: 'q', worker: 'w', leaseMs: LONG_LEASE });
        await store.jobs.claim({ queue: 'q', worker: 'w', leaseMs: LONG_LEASE });
        await store.jobs.fail(failed.id, 'w', { error: 'gave up' });
        const running = await store.jobs.get(due.id);
        expect(running).toMatchObject({ state: 'running' });
        expect(await store.jobs.claim({ queue: 'q', worker: 'w2', leaseMs: LONG_LEASE })).toBeUndefined();

        const before = Date.now();
        expect(await store.jobs.hasten('q')).toBe(2);
        for (const id of [waiting.id, later.id]) {
          const job = await store.jobs.get(id);
          expect(job?.state).toBe('pending');
          expect(Date.parse(job!.runAt)).toBeGreaterThanOrEqual(before - 1_000);
          expect(Date.parse(job!.runAt)).toBeLessThanOrEqual(Date.now() + 1_000);
        }
        expect((await store.jobs.get(waiting.id))?.attempts).toBe(backedOff.attempts);
        expect(await store.jobs.get(due.id)).toEqual(running);
        expect(await store.jobs.get(failed.id)).toMatchObject({ state: 'failed', lastError: 'gave up' });
        expect((await store.jobs.get(elsewhere.id))?.runAt).toBe(elsewhere.runAt);
        const claimed = new Set([
          (await store.jobs.claim({ queue: 'q', worker: 'w2', leaseMs: LONG_LEASE }))?.id,
          (await store.jobs.claim({ queue: 'q', worker: 'w2', leaseMs: LONG_LEASE }))?.id,
        ]);
        expect(claimed).toEqual(new Set([waiting.id, later.id]));
        // Nothing is waiting any more: a second call changes nothing.
        expect(await store.jobs.hasten('q')).toBe(0);
        expect(await store.jobs.hasten('empty')).toBe(0);
      },
    },
    {
      name: 'jobs.list and jobs.counts filter by queue and state, oldest first',
      async run({ store }) {
        const keys = ['j1', 'j2', 'j3', 'j4', 'j5'];
        for (const key of keys) await store.jobs.enqueue({ queue: 'alpha', key, payload: key });
        await store.jobs.enqueue({ queue: 'beta', key: 'b1', payload: null });
        await store.jobs.enqueue({ queue: 'beta', key: 'b2', payload: null });
        const first = await store.jobs.claim({ queue: 'alpha', worker: 'w', leaseMs: LONG_LEASE });
        await store.jobs.complete(first!.id, 'w');
        const second = await store.jobs.claim({ queue: 'alpha', worker: 'w', leaseMs: LONG_LEASE });
        await store.jobs.fail(second!.id, 'w', { error: 'no' });
        await store.jobs.claim({ queue: 'alpha', worker: 'w', leaseMs: LONG_LEASE });
        await store.jobs.claim({ queue: 'beta', worker: 'w', leaseMs: LONG_LEASE });

        const keysOf = (jobs: Job[]): string[] => jobs.map((job) => job.key);
        expect(keysOf(await store.jobs.list({}))).toEqual([...keys, 'b1', 'b2']);
        expect(keysOf(await store.jobs.list({ queue: 'alpha' }))).toEqual(keys);
        expect(keysOf(await store.jobs.list({ queue: 'alpha', states: ['pending'] }))).toEqual(['j4', 'j5']);
        expect(keysOf(await store.jobs.list({ states: ['running'] }))).toEqual(['j3', 'b1']);
        expect(keysOf(await store.jobs.list({ states: ['done', 'failed'] }))).toEqual(['j1', 'j2']);
        expect(keysOf(await store.jobs.list({ queue: 'alpha', limit: 2 }))).toEqual(['j1', 'j2']);
        expect(await store.jobs.list({ states: [] })).toEqual([]);
        expect(await store.jobs.list({ queue: 'gamma' })).toEqual([]);

        expect(await store.jobs.counts('alpha')).toEqual({ pending: 2, running: 1, done: 1, failed: 1 });
        expect(await store.jobs.counts('beta')).toEqual({ pending: 1, running: 1, done: 0, failed: 0 });
        expect(await store.jobs.counts('gamma')).toEqual({ pending: 0, running: 0, done: 0, failed: 0 });
        expect(await store.jobs.counts()).toEqual({ pending: 3, running: 2, done: 1, failed: 1 });
      },
    },
    ...jobInputCases,
  ],
});
