import { expect } from 'vitest';
import { storeCaseGroup } from '../store-suite-support.js';

const LATER = () => new Date(Date.now() + 60_000).toISOString();
const EARLIER = '2000-01-01T00:00:00.000Z';

export const jobCleanupCases = storeCaseGroup({
  title: 'cleaning up jobs',
  roles: ['jobs'],
  cases: [
    {
      name: 'jobs.delete removes finished jobs of one queue changed before the instant, never pending or running ones',
      async run({ store }) {
        const keys = ['done-1', 'done-2', 'failed-1', 'pending-1', 'running-1'];
        for (const key of keys)
          await store.jobs.enqueue({ queue: 'extraction', key, payload: { key }, maxAttempts: 1 });
        await store.jobs.enqueue({ queue: 'other', key: 'done-elsewhere', payload: null });
        const finish = async (queue: string, outcome: 'done' | 'failed' | 'running') => {
          const job = (await store.jobs.claim({ queue, worker: 'w', leaseMs: 60_000 }))!;
          if (outcome === 'done') await store.jobs.complete(job.id, 'w');
          if (outcome === 'failed') await store.jobs.fail(job.id, 'w', { error: 'boom' });
        };
        await finish('extraction', 'done');
        await finish('extraction', 'done');
        await finish('extraction', 'failed');
        await finish('other', 'done');
        // pending-1 stays pending; running-1 is claimed last and kept running.
        const pending = (await store.jobs.list({ queue: 'extraction', states: ['pending'] })).map((job) => job.key);
        expect(pending).toEqual(['pending-1', 'running-1']);
        await store.jobs.claim({ queue: 'extraction', worker: 'w', leaseMs: 60_000 });

        expect(await store.jobs.delete({ queue: 'extraction', states: ['done'], updatedBefore: EARLIER })).toBe(0);
        expect(await store.jobs.delete({ queue: 'extraction', states: ['done'], updatedBefore: LATER() })).toBe(2);
        expect(await store.jobs.counts('extraction')).toEqual({ pending: 1, running: 1, done: 0, failed: 1 });
        expect(
          await store.jobs.delete({ queue: 'extraction', states: ['done', 'failed'], updatedBefore: LATER() }),
        ).toBe(1);
        expect(await store.jobs.counts('extraction')).toEqual({ pending: 1, running: 1, done: 0, failed: 0 });
        expect(await store.jobs.counts('other')).toMatchObject({ done: 1 });
        // A deleted job's key can be queued again: it is a new job.
        expect((await store.jobs.enqueue({ queue: 'extraction', key: 'done-1', payload: null })).created).toBe(true);

        for (const bad of [
          { queue: 'extraction', states: ['pending'], updatedBefore: LATER() },
          { queue: 'extraction', states: [], updatedBefore: LATER() },
          { queue: '', states: ['done'], updatedBefore: LATER() },
          { queue: 'extraction', states: ['done'], updatedBefore: 'yesterday' },
          null,
        ]) {
          await expect(store.jobs.delete(bad as never)).rejects.toMatchObject({ code: 'INVALID_INPUT' });
        }
        expect(await store.jobs.counts('extraction')).toEqual({ pending: 2, running: 1, done: 0, failed: 0 });
      },
    },
  ],
});

export const checkpointCleanupCases = storeCaseGroup({
  title: 'cleaning up checkpoints',
  roles: ['checkpoints'],
  cases: [
    {
      name: 'checkpoints.delete removes names with the literal prefix set before the instant, and nothing else',
      async run({ store }) {
        const names = [
          'extraction-turn:s1:m1',
          'extraction-turn:s1:m2',
          'extraction-turn%:x',
          'extraction-turnX',
          'extraction-cursor:s1',
          'EXTRACTION-TURN:s1',
        ];
        for (const name of names) await store.checkpoints.set(name, 'v');
        expect(await store.checkpoints.delete({ prefix: 'extraction-turn:', updatedBefore: EARLIER })).toBe(0);
        expect(await store.checkpoints.delete({ prefix: 'extraction-turn:', updatedBefore: LATER() })).toBe(2);
        const left = await Promise.all(names.map(async (name) => [name, await store.checkpoints.get(name)]));
        expect(Object.fromEntries(left)).toEqual({
          'extraction-turn:s1:m1': undefined,
          'extraction-turn:s1:m2': undefined,
          'extraction-turn%:x': 'v',
          'extraction-turnX': 'v',
          'extraction-cursor:s1': 'v',
          'EXTRACTION-TURN:s1': 'v',
        });
        // Wildcards are literal: '%' matches only a name that starts with '%'.
        expect(await store.checkpoints.delete({ prefix: '%', updatedBefore: LATER() })).toBe(0);
        for (const bad of [
          { prefix: '', updatedBefore: LATER() },
          { prefix: 'x', updatedBefore: 42 },
          { prefix: 'a\u0000', updatedBefore: LATER() },
          [],
        ]) {
          await expect(store.checkpoints.delete(bad as never)).rejects.toMatchObject({ code: 'INVALID_INPUT' });
        }
        expect(await store.checkpoints.get('extraction-cursor:s1')).toBe('v');
      },
    },
  ],
});
