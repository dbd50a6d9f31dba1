import { expect } from 'vitest';
import type { StoreWith } from '../../contracts/memory-store.js';
import type { Job } from '../../contracts/memory-store-jobs.js';
import type { CheckpointRecord, ExportPage, StoreRecords } from '../../contracts/memory-store-records.js';
import {
  describeInput,
  expectEngramError,
  outcomeOf,
  storeCaseGroup,
  unexpectedOutcomes,
} from '../store-suite-support.js';

// Copying a store whole moves its jobs (any state, with attempts, leases and errors) and its
// checkpoints (extraction cursors and the like) too: export pages by key in byte order, and
// records.restore writing them verbatim. As in record-copy-cases.ts, one store per case: a round
// trip restores the store's own export under new keys, then again unchanged (all skipped).

const QUEUE = 'copy-queue';
/** Names whose byte order (UTF-8) differs from JavaScript's (UTF-16) order and from a locale's. */
const NAMES = [
  'cursor:B',
  'cursor:a',
  'cursor-1',
  'cursor.2',
  'CURSOR:3',
  'cursor:\u{1F680}',
  'cursor:\uFF5E',
  'cursor:é',
];
const byteOrder = (left: string, right: string): number =>
  Buffer.compare(Buffer.from(left, 'utf8'), Buffer.from(right, 'utf8'));

/** A store with a job in every state and checkpoints under awkward names; returns the job ids by state. */
async function seedJobs(
  store: StoreWith<'jobs' | 'checkpoints'>,
): Promise<Record<'pending' | 'running' | 'done' | 'failed' | 'retrying', string>> {
  const enqueue = async (key: string, payload: unknown, maxAttempts = 3): Promise<string> =>
    (await store.jobs.enqueue({ queue: QUEUE, key, payload, maxAttempts })).job.id;
  const done = await enqueue('turn-1', { session: 's-1', turns: [1, 2, 3] });
  const failed = await enqueue('turn-2', "'); DROP TABLE jobs; --", 1);
  const retrying = await enqueue('turn-3', { nested: { deep: [null, true, 1.5, 'café 東京 🚀'] } });
  const running = await enqueue('turn-4', null);
  const pending = await enqueue('turn-5', 42);
  const claim = async (): Promise<Job> =>
    (await store.jobs.claim({ queue: QUEUE, worker: 'copy-worker', leaseMs: 60_000 }))!;
  expect((await claim()).id).toBe(done);
  await store.jobs.complete(done, 'copy-worker');
  expect((await claim()).id).toBe(failed);
  await store.jobs.fail(failed, 'copy-worker', { error: 'gave up: "quoted" \\ and \'single\'' });
  expect((await claim()).id).toBe(retrying);
  await store.jobs.fail(retrying, 'copy-worker', { error: 'try later', retryAt: '2099-01-01T00:00:00.000Z' });
  expect((await claim()).id).toBe(running);
  for (const [index, name] of NAMES.entries())
    await store.checkpoints.set(name, `value ${index}: "x'); DROP TABLE checkpoints; --"`);
  return { pending, running, done, failed, retrying };
}

/** Every record of one kind, page by page, each page in byte order and continuing where the last stopped. */
async function readAll<T>(
  read: (page: ExportPage) => Promise<T[]>,
  key: (record: T) => string,
  limit: number,
): Promise<T[]> {
  const all: T[] = [];
  let after: string | undefined;
  for (;;) {
    const page = await read({ limit, ...(after !== undefined && { after }) });
    expect(page.length).toBeLessThanOrEqual(limit);
    for (const record of page) {
      if (after !== undefined) expect(byteOrder(after, key(record)), `${key(record)} comes after ${after}`).toBe(-1);
      after = key(record);
      all.push(record);
    }
    if (page.length < limit) break;
  }
  return all;
}

interface ExportedCoordination {
  jobs: Job[];
  checkpoints: CheckpointRecord[];
}

async function exportCoordination(store: StoreWith<'records'>, limit = 1_000): Promise<ExportedCoordination> {
  return {
    jobs: await readAll(
      (page) => store.records.exportJobs(page),
      (job) => job.id,
      limit,
    ),
    checkpoints: await readAll(
      (page) => store.records.exportCheckpoints(page),
      (checkpoint) => checkpoint.name,
      limit,
    ),
  };
}

/** The same jobs and checkpoints under new keys (jobs in another queue, so queue and key stay unique). */
function renamed(records: ExportedCoordination): ExportedCoordination {
  return {
    jobs: records.jobs.map((job) => ({ ...job, id: `copy.${job.id}`, queue: `copy.${job.queue}` })),
    checkpoints: records.checkpoints.map((checkpoint) => ({ ...checkpoint, name: `copy.${checkpoint.name}` })),
  };
}

const counts = (jobs: number, checkpoints: number) => ({ memories: 0, history: 0, vectors: 0, jobs, checkpoints });

export const jobRecordCopyCases = storeCaseGroup({
  title: 'copying jobs and checkpoints',
  roles: ['records', 'jobs', 'checkpoints'],
  cases: [
    {
      name: 'export pages list every job and checkpoint once, by key in byte order, in any page size',
      async run({ store }) {
        const ids = await seedJobs(store);
        const small = await exportCoordination(store, 2);
        expect(await exportCoordination(store, 3)).toEqual(small);
        expect(await exportCoordination(store, 10_000)).toEqual(small);

        expect(small.jobs.map((job) => job.id)).toEqual(Object.values(ids).sort(byteOrder));
        for (const job of small.jobs) expect(job).toEqual(await store.jobs.get(job.id));
        expect(small.jobs.map((job) => job.state).sort()).toEqual(['done', 'failed', 'pending', 'pending', 'running']);
        expect(small.jobs.find((job) => job.id === ids.running)).toMatchObject({
          lockedBy: 'copy-worker',
          lockedUntil: expect.any(String),
          attempts: 1,
        });
        expect(small.jobs.find((job) => job.id === ids.retrying)).toMatchObject({
          state: 'pending',
          lastError: 'try later',
          runAt: '2099-01-01T00:00:00.000Z',
        });

        expect(small.checkpoints.map((checkpoint) => checkpoint.name)).toEqual([...NAMES].sort(byteOrder));
        for (const checkpoint of small.checkpoints) {
          expect(checkpoint.value).toBe(await store.checkpoints.get(checkpoint.name));
          expect(Date.parse(checkpoint.updatedAt)).not.toBeNaN();
        }
        // "after" is a plain value, never query text.
        const hostile = "'); DROP TABLE jobs; --";
        expect((await store.records.exportJobs({ limit: 100, after: hostile })).map((job) => job.id)).toEqual(
          small.jobs.map((job) => job.id).filter((id) => byteOrder(id, hostile) > 0),
        );
        expect(await store.records.exportCheckpoints({ limit: 100, after: 'cursor:\u{1F680}' })).toEqual([]);
        expect(await store.records.exportCheckpoints({ limit: 100, after: 'x'.repeat(500) })).toEqual([]);
      },
    },
    {
      name: 'an empty store exports no jobs or checkpoints, and malformed pages are refused with INVALID_INPUT',
      async run({ store }) {
        expect(await store.records.exportJobs({ limit: 10 })).toEqual([]);
        expect(await store.records.exportCheckpoints({ limit: 10 })).toEqual([]);
        const pages: Array<[string, unknown]> = [
          ['both', null],
          ['both', []],
          ['both', {}],
          ['both', { limit: 0 }],
          ['both', { limit: 1.5 }],
          ['both', { limit: '10' }],
          ['both', { limit: 10_001 }],
          ['both', { limit: 10, after: 5 }],
          ['both', { limit: 10, after: 'a\u0000b' }],
          ['exportJobs', { limit: 10, after: 'x'.repeat(201) }],
          ['exportCheckpoints', { limit: 10, after: 'x'.repeat(501) }],
        ];
        const unexpected: string[] = [];
        for (const [which, page] of pages) {
          for (const [method, read] of [
            ['exportJobs', store.records.exportJobs.bind(store.records)],
            ['exportCheckpoints', store.records.exportCheckpoints.bind(store.records)],
          ] as const) {
            if (which !== 'both' && which !== method) continue;
            const outcome = await outcomeOf(() => read(page as ExportPage));
            if (outcome !== 'INVALID_INPUT') unexpected.push(`${method}(${describeInput({ page })}) → ${outcome}`);
          }
        }
        expect(unexpected).toEqual([]);
      },
    },
    {
      name: 'records.restore writes jobs and checkpoints verbatim, skips identical ones, and restored jobs run like enqueued ones',
      async run({ store }) {
        await seedJobs(store);
        const original = await exportCoordination(store);
        const copy = renamed(original);

        expect(
          await store.records.restore({ jobs: copy.jobs.slice(0, 2), checkpoints: copy.checkpoints.slice(0, 3) }),
        ).toEqual({ written: counts(2, 3), skipped: counts(0, 0) });
        // A resumed page: the part already there is skipped, the rest written.
        expect(await store.records.restore(copy)).toEqual({
          written: counts(copy.jobs.length - 2, copy.checkpoints.length - 3),
          skipped: counts(2, 3),
        });
        expect(await store.records.restore(original)).toEqual({
          written: counts(0, 0),
          skipped: counts(original.jobs.length, original.checkpoints.length),
        });

        for (const job of copy.jobs) expect(await store.jobs.get(job.id)).toEqual(job);
        for (const checkpoint of copy.checkpoints)
          expect(await store.checkpoints.get(checkpoint.name)).toBe(checkpoint.value);
        const after = await exportCoordination(store);
        expect(after.jobs.filter((job) => job.id.startsWith('copy.'))).toEqual(copy.jobs);
        expect(after.checkpoints.filter((checkpoint) => checkpoint.name.startsWith('copy.'))).toEqual(copy.checkpoints);
        expect(await store.jobs.counts(`copy.${QUEUE}`)).toEqual(await store.jobs.counts(QUEUE));

        // The restored queue works: the pending job is claimed (not the one waiting for 2099), the failed one can be retried.
        const claimed = await store.jobs.claim({ queue: `copy.${QUEUE}`, worker: 'after-copy', leaseMs: 1_000 });
        expect(claimed?.key).toBe('turn-5');
        expect(
          await store.jobs.claim({ queue: `copy.${QUEUE}`, worker: 'after-copy', leaseMs: 1_000 }),
        ).toBeUndefined();
        const failed = copy.jobs.find((job) => job.state === 'failed')!;
        expect((await store.jobs.retry(failed.id)).state).toBe('pending');
        // Enqueueing a restored job's key again finds it rather than making a second one.
        expect(await store.jobs.enqueue({ queue: `copy.${QUEUE}`, key: 'turn-1', payload: null })).toMatchObject({
          created: false,
          job: { id: copy.jobs.find((job) => job.key === 'turn-1')!.id },
        });
        expect(
          await store.checkpoints.set(copy.checkpoints[0]!.name, 'next', { expected: copy.checkpoints[0]!.value }),
        ).toBe(true);
      },
    },
    {
      name: 'records.restore refuses a job or checkpoint that differs from the stored one with CONFLICT, and writes nothing',
      async run({ store }) {
        await seedJobs(store);
        const exported = await exportCoordination(store);
        const fresh = renamed(exported);
        const job = exported.jobs[0]!;
        const checkpoint = exported.checkpoints[0]!;
        const attempts: Array<[string, StoreRecords]> = [
          [
            'job with another state',
            { jobs: [fresh.jobs[0]!, { ...job, state: job.state === 'done' ? 'pending' : 'done' }] },
          ],
          ['job with another payload', { jobs: [fresh.jobs[0]!, { ...job, payload: { other: true } }] }],
          ['job with more attempts', { jobs: [{ ...job, attempts: job.attempts + 1 }] }],
          ['another job under a stored queue and key', { jobs: [{ ...job, id: 'job-elsewhere' }] }],
          ['two jobs with one queue and key', { jobs: [fresh.jobs[0]!, { ...fresh.jobs[0]!, id: 'copy.twin' }] }],
          ['the same job twice', { jobs: [fresh.jobs[1]!, { ...fresh.jobs[1]! }] }],
          [
            'checkpoint with another value',
            { checkpoints: [fresh.checkpoints[0]!, { ...checkpoint, value: 'changed' }] },
          ],
          [
            'checkpoint set at another time',
            { checkpoints: [{ ...checkpoint, updatedAt: '2001-01-01T00:00:00.000Z' }] },
          ],
          ['the same checkpoint twice', { checkpoints: [fresh.checkpoints[1]!, { ...fresh.checkpoints[1]! }] }],
          [
            'a conflict after good memories',
            { memories: [], jobs: [fresh.jobs[2]!], checkpoints: [{ ...checkpoint, value: 'changed' }] },
          ],
        ];
        for (const [label, records] of attempts) {
          const error = await expectEngramError(() => store.records.restore(records), 'CONFLICT');
          expect(error.message, label).toMatch(/\S/);
          expect(await exportCoordination(store), label).toEqual(exported);
        }
      },
    },
    {
      name: 'records.restore refuses malformed jobs and checkpoints and changes nothing; hostile text is stored verbatim',
      async run({ store }) {
        const job: Job = {
          id: 'job-restored-1',
          queue: 'extraction',
          key: 'session-1:turn-9',
          payload: { sessionId: 'session-1' },
          state: 'running',
          attempts: 1,
          maxAttempts: 5,
          runAt: '2024-01-02T03:04:05.006Z',
          lockedBy: 'worker-1',
          lockedUntil: '2024-01-02T03:05:05.006Z',
          lastError: null,
          createdAt: '2024-01-02T03:04:05.006Z',
          updatedAt: '2024-01-02T03:04:06.000Z',
        };
        const checkpoint: CheckpointRecord = {
          name: 'extraction-cursor:session-1',
          value: 'msg-9',
          updatedAt: '2024-01-02T03:04:07.000Z',
        };
        await store.checkpoints.set('already-here', 'yes');
        const before = await exportCoordination(store);
        const { payload: _payload, ...withoutPayload } = job;
        const cases: Array<[string, unknown, string]> = [
          ['jobs not an array', { jobs: job }, 'INVALID_INPUT'],
          ['a job that is null', { jobs: [null] }, 'INVALID_INPUT'],
          ['a job without payload', { jobs: [withoutPayload] }, 'INVALID_INPUT'],
          ['a job with an unknown field', { jobs: [{ ...job, seq: 1 }] }, 'INVALID_INPUT'],
          ['a job with an unknown state', { jobs: [{ ...job, state: 'paused' }] }, 'INVALID_INPUT'],
          ['a job with negative attempts', { jobs: [{ ...job, attempts: -1 }] }, 'INVALID_INPUT'],
          ['a job with fractional attempts', { jobs: [{ ...job, attempts: 1.5 }] }, 'INVALID_INPUT'],
          ['a job with no attempts allowed', { jobs: [{ ...job, maxAttempts: 0 }] }, 'INVALID_INPUT'],
          ['a job with an empty queue', { jobs: [{ ...job, queue: '' }] }, 'INVALID_INPUT'],
          ['a job key with a control character', { jobs: [{ ...job, key: 'a\u0007b' }] }, 'INVALID_INPUT'],
          ['a job id too long', { jobs: [{ ...job, id: 'j'.repeat(201) }] }, 'INVALID_INPUT'],
          ['a job with a bad time', { jobs: [{ ...job, runAt: 'soon' }] }, 'INVALID_INPUT'],
          ['a job with a bad lease end', { jobs: [{ ...job, lockedUntil: 'later' }] }, 'INVALID_INPUT'],
          ['a job with a worker that is not a name', { jobs: [{ ...job, lockedBy: 7 }] }, 'INVALID_INPUT'],
          ['a job with an error too long', { jobs: [{ ...job, lastError: 'e'.repeat(4_001) }] }, 'INVALID_INPUT'],
          [
            'a job whose payload JSON cannot hold',
            { jobs: [{ ...job, payload: { at: Number.NaN } }] },
            'INVALID_INPUT',
          ],
          [
            'a job payload over the size limit',
            { jobs: [{ ...job, payload: 'x'.repeat(2 * 1024 * 1024) }] },
            'INVALID_INPUT',
          ],
          [
            'more jobs than one call takes',
            {
              jobs: Array.from({ length: 10_001 }, (_, index) => ({ ...job, id: `bulk-${index}`, key: `k-${index}` })),
            },
            'PAYLOAD_TOO_LARGE',
          ],
          ['a checkpoint that is a string', { checkpoints: ['cursor'] }, 'INVALID_INPUT'],
          [
            'a checkpoint without updatedAt',
            { checkpoints: [{ name: checkpoint.name, value: checkpoint.value }] },
            'INVALID_INPUT',
          ],
          ['a checkpoint with an unknown field', { checkpoints: [{ ...checkpoint, id: 1 }] }, 'INVALID_INPUT'],
          ['a checkpoint value that is not text', { checkpoints: [{ ...checkpoint, value: 5 }] }, 'INVALID_INPUT'],
          ['a checkpoint value with NUL', { checkpoints: [{ ...checkpoint, value: 'a\u0000b' }] }, 'INVALID_INPUT'],
          [
            'a checkpoint value over 256 KiB',
            { checkpoints: [{ ...checkpoint, value: 'v'.repeat(256 * 1024 + 1) }] },
            'INVALID_INPUT',
          ],
          ['a checkpoint name too long', { checkpoints: [{ ...checkpoint, name: 'n'.repeat(501) }] }, 'INVALID_INPUT'],
          ['a checkpoint with a bad time', { checkpoints: [{ ...checkpoint, updatedAt: 'now' }] }, 'INVALID_INPUT'],
          [
            'a good job beside a bad checkpoint',
            { jobs: [job], checkpoints: [{ ...checkpoint, updatedAt: 'now' }] },
            'INVALID_INPUT',
          ],
        ];
        const restores = cases.map(
          ([label, records, code]) => [label, () => store.records.restore(records as StoreRecords), code] as const,
        );
        expect(await unexpectedOutcomes(restores)).toEqual([]);
        expect(await exportCoordination(store)).toEqual(before);

        // SQL in every text field is data.
        const hostileJob: Job = {
          ...job,
          id: 'job-hostile',
          queue: "q'); DROP TABLE jobs; --",
          key: '$1 $$ :name ? %s',
          payload: { sql: "'; DELETE FROM checkpoints; --", markup: '<script>alert(1)</script>' },
          lockedBy: "w' OR '1'='1",
          lastError: "x'); DROP TABLE memories; --",
        };
        const hostileCheckpoint: CheckpointRecord = {
          name: "c'); DROP TABLE checkpoints; --",
          value: '$$ \\x00 "quoted"',
          updatedAt: checkpoint.updatedAt,
        };
        const report = await store.records.restore({
          jobs: [job, hostileJob],
          checkpoints: [checkpoint, hostileCheckpoint],
        });
        expect(report.written).toEqual(counts(2, 2));
        expect(await store.jobs.get('job-hostile')).toEqual(hostileJob);
        expect(await store.jobs.get(job.id)).toEqual(job);
        expect(await store.checkpoints.get(hostileCheckpoint.name)).toBe(hostileCheckpoint.value);
        expect((await exportCoordination(store)).checkpoints).toHaveLength(3);
      },
    },
  ],
});
