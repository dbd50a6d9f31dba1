import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'vitest';
import type { StoreWith } from '../../contracts/memory-store.js';
import type { Job, JobState, NewJob } from '../../contracts/memory-store-jobs.js';
import { describeInput, expectEngramError, outcomeOf, storeCaseGroup } from '../store-suite-support.js';
import {
  collectStoreWriteWorker,
  runStoreWorkersTogether,
  spawnStoreWorker,
  unexpectedStderr,
} from '../store-write-worker-process.js';

const LONG_LEASE = 60_000;
const JOBS_FOR_TWO_WORKERS = 300;

const inAnHour = (): string => new Date(Date.now() + 3_600_000).toISOString();
const anHourAgo = (): string => new Date(Date.now() - 3_600_000).toISOString();

/** Waits until the store's own clock is surely past a job's lease (lockedUntil), plus a margin. */
async function outlive(job: Job): Promise<void> {
  await sleep(Math.max(0, Date.parse(job.lockedUntil!) - Date.now()) + 60);
}

/** A short label for a hostile input, even one JSON cannot print (a cycle, deep nesting). */
function label(input: unknown): string {
  try {
    return describeInput({ input }).slice(0, 100);
  } catch {
    return typeof input;
  }
}

/** Everything a refused job call must leave as it was. */
async function jobsFingerprint(store: StoreWith<'jobs'>): Promise<{ jobs: Job[]; counts: Record<JobState, number> }> {
  return { jobs: await store.jobs.list({}), counts: await store.jobs.counts() };
}

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
    {
      name: 'job calls refuse malformed, oversized and hostile input with INVALID_INPUT and change nothing',
      async run({ store }) {
        const { job } = await store.jobs.enqueue({ queue: 'q', key: 'kept', payload: { keep: true } });
        await store.jobs.enqueue({ queue: 'q', key: 'leased', payload: null });
        const leased = (await store.jobs.claim({ queue: 'q', worker: 'w', leaseMs: LONG_LEASE }))!;
        const before = await jobsFingerprint(store);

        const cycle: Record<string, unknown> = { a: 1 };
        cycle.self = cycle;
        let deep: unknown = 'bottom';
        for (let level = 0; level < 10_000; level += 1) deep = [deep];
        const valid = { queue: 'q', key: 'new', payload: null };
        const badJobs: unknown[] = [
          null,
          'job',
          [],
          {},
          { ...valid, queue: '' },
          { ...valid, queue: 42 },
          { ...valid, queue: 'q'.repeat(10_000) },
          { ...valid, queue: 'q\u0000' },
          { ...valid, key: '' },
          { ...valid, key: null },
          { ...valid, key: 'k'.repeat(100_000) },
          { ...valid, key: 'line\nbreak' },
          { queue: 'q', key: 'no-payload' },
          { ...valid, payload: undefined },
          { ...valid, payload: () => 1 },
          { ...valid, payload: { when: new Date() } },
          { ...valid, payload: { big: 10n } },
          { ...valid, payload: Number.NaN },
          { ...valid, payload: [1, Number.POSITIVE_INFINITY] },
          { ...valid, payload: { missing: undefined } },
          { ...valid, payload: new Map([['a', 1]]) },
          { ...valid, payload: cycle },
          { ...valid, payload: deep },
          { ...valid, payload: 'x'.repeat(2 * 1024 * 1024) },
          { ...valid, maxAttempts: 0 },
          { ...valid, maxAttempts: -1 },
          { ...valid, maxAttempts: 1.5 },
          { ...valid, maxAttempts: '3' },
          { ...valid, maxAttempts: Number.POSITIVE_INFINITY },
          { ...valid, maxAttempts: 1e9 },
          { ...valid, runAt: 'tomorrow-ish' },
          { ...valid, runAt: 1_700_000_000_000 },
        ];
        const problems: string[] = [];
        const refused = async (label: string, action: () => Promise<unknown>): Promise<void> => {
          const outcome = await outcomeOf(action);
          if (outcome !== 'INVALID_INPUT') problems.push(`${label}: ${outcome}`);
        };
        for (const [index, input] of badJobs.entries())
          await refused(`enqueue #${index} ${label(input)}`, () => store.jobs.enqueue(input as NewJob));

        const claim = { queue: 'q', worker: 'w2', leaseMs: 1_000 };
        const badClaims: unknown[] = [
          null,
          { ...claim, queue: '' },
          { ...claim, queue: 7 },
          { ...claim, worker: '' },
          { ...claim, worker: 'w'.repeat(10_000) },
          { ...claim, worker: undefined },
          { ...claim, leaseMs: 0 },
          { ...claim, leaseMs: -5 },
          { ...claim, leaseMs: 2.5 },
          { ...claim, leaseMs: Number.NaN },
          { ...claim, leaseMs: Number.POSITIVE_INFINITY },
          { ...claim, leaseMs: 1e15 },
          { ...claim, leaseMs: '1000' },
        ];
        for (const options of badClaims)
          await refused(`claim ${describeInput({ options: options as Record<string, unknown> })}`, () =>
            store.jobs.claim(options as never),
          );

        const call = store.jobs as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
        const badCalls: Array<[string, unknown[]]> = [
          ['complete', [leased.id, '']],
          ['complete', [leased.id, 42]],
          ['complete', [42, 'w']],
          ['complete', ['', 'w']],
          ['fail', [leased.id, 'w', null]],
          ['fail', [leased.id, 'w', { error: 42 }]],
          ['fail', [leased.id, 'w', {}]],
          ['fail', [leased.id, 'w', { error: 'x', retryAt: 'soon' }]],
          ['fail', [leased.id, 'w', { error: 'x', retryAt: 5 }]],
          ['fail', [leased.id, '', { error: 'x' }]],
          ['retry', [42]],
          ['retry', ['']],
          ['hasten', [42]],
          ['hasten', ['']],
          ['hasten', [null]],
          ['get', [null]],
          ['get', ['x'.repeat(10_000)]],
          ['list', [null]],
          ['list', [{ states: ['pending', 'sleeping'] }]],
          ['list', [{ states: 'pending' }]],
          ['list', [{ queue: '' }]],
          ['list', [{ limit: -1 }]],
          ['list', [{ limit: 1.5 }]],
          ['counts', [42]],
          ['counts', ['']],
        ];
        for (const [method, args] of badCalls)
          await refused(`${method} ${describeInput({ args: JSON.stringify(args).slice(0, 80) })}`, () =>
            call[method]!.apply(store.jobs, args),
          );
        expect(problems).toEqual([]);

        expect(await jobsFingerprint(store)).toEqual(before);
        expect(await store.jobs.get(job.id)).toEqual(before.jobs.find((entry) => entry.id === job.id));
        // The lease survived the hostile calls: its worker can still finish the job.
        expect(await store.jobs.complete(leased.id, 'w')).toMatchObject({ state: 'done' });
      },
    },
  ],
});

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
