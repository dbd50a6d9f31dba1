// The job queue fed malformed, oversized and hostile input: every call refuses it with
// INVALID_INPUT and leaves the queue as it was.
import { expect } from 'vitest';
import type { StoreWith } from '../../contracts/memory-store.js';
import type { Job, JobState, NewJob } from '../../contracts/memory-store-jobs.js';
import { describeInput, outcomeOf, type StoreCaseDefinition } from '../store-suite-support.js';
import { LONG_LEASE } from './job-case-support.js';

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

/** Hostile input to every job call; the job queue group runs it last. */
export const jobInputCases: ReadonlyArray<StoreCaseDefinition<'jobs'>> = [
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
];
