import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'vitest';
import { describeInput, expectEngramError, outcomeOf, storeCaseGroup } from '../store-suite-support.js';
import {
  collectStoreWriteWorker,
  runStoreWorkersTogether,
  spawnStoreWorker,
  unexpectedStderr,
} from '../store-write-worker-process.js';

const INCREMENTS_PER_PROCESS = 40;

/** A promise with its resolve function, to hold a lock until the case lets go. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

export const lockCases = storeCaseGroup({
  title: 'locks',
  roles: ['locks'],
  cases: [
    {
      name: 'locks.hold returns what fn returns, passes its error through unchanged, and releases the lock either way',
      async run({ store }) {
        expect(await store.locks.hold('memory-write:project:app', async () => ({ answer: 42 }))).toEqual({
          answer: 42,
        });
        const failure = new Error('fn failed on purpose');
        let caught: unknown;
        await store.locks
          .hold('memory-write:project:app', async () => {
            throw failure;
          })
          .catch((error: unknown) => {
            caught = error;
          });
        expect(caught).toBe(failure);
        // Released: a short wait is enough (a lock left held would make this time out).
        expect(await store.locks.hold('memory-write:project:app', async () => 'free again', { waitMs: 2_000 })).toBe(
          'free again',
        );
        // Different names nest; each is free again afterwards.
        const nested = await store.locks.hold('outer', async () => store.locks.hold('inner', async () => 'both held'));
        expect(nested).toBe('both held');
        expect(await store.locks.hold('outer', async () => 'outer free', { waitMs: 2_000 })).toBe('outer free');
      },
    },
    {
      name: 'overlapping locks.hold calls on one name run one at a time, in order; other names do not wait',
      async run({ store }) {
        let active = 0;
        let mostActive = 0;
        const order: number[] = [];
        const callers = Array.from({ length: 6 }, (_, index) =>
          store.locks.hold('memory-write:project:busy', async () => {
            active += 1;
            mostActive = Math.max(mostActive, active);
            order.push(index);
            await sleep(5);
            active -= 1;
            return index;
          }),
        );
        expect(await Promise.all(callers)).toEqual([0, 1, 2, 3, 4, 5]);
        expect(mostActive).toBe(1);
        expect(order).toHaveLength(6);
        expect([...order].sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5]);

        const held = gate();
        let holding!: () => void;
        const taken = new Promise<void>((resolve) => {
          holding = resolve;
        });
        const holder = store.locks.hold('memory-write:project:held', async () => {
          holding();
          await held.promise;
          return 'holder done';
        });
        await taken;
        expect(await store.locks.hold('memory-write:project:other', async () => 'not blocked', { waitMs: 2_000 })).toBe(
          'not blocked',
        );
        held.open();
        expect(await holder).toBe('holder done');
      },
    },
    {
      name: 'locks.hold rejects with LOCK_TIMEOUT without running fn when the lock stays held past waitMs',
      async run({ store }) {
        const held = gate();
        let holding!: () => void;
        const taken = new Promise<void>((resolve) => {
          holding = resolve;
        });
        const holder = store.locks.hold('schedule:aging', async () => {
          holding();
          await held.promise;
          return 'holder finished';
        });
        await taken;
        let ran = false;
        const error = await expectEngramError(
          () =>
            store.locks.hold(
              'schedule:aging',
              async () => {
                ran = true;
              },
              { waitMs: 150 },
            ),
          'LOCK_TIMEOUT',
        );
        expect(error.message).toContain('schedule:aging');
        expect(ran).toBe(false);
        await expectEngramError(
          () => store.locks.hold('schedule:aging', async () => undefined, { waitMs: 0 }),
          'LOCK_TIMEOUT',
        );
        held.open();
        expect(await holder).toBe('holder finished');
        // The callers that gave up left nothing behind.
        expect(await store.locks.hold('schedule:aging', async () => 'next', { waitMs: 2_000 })).toBe('next');
      },
    },
    {
      name: 'locks.hold refuses malformed names, functions and options with INVALID_INPUT without running anything',
      async run({ store }) {
        let ran = 0;
        const fn = async (): Promise<void> => {
          ran += 1;
        };
        const problems: string[] = [];
        const attempts: Array<[Record<string, unknown>, () => Promise<unknown>]> = [];
        for (const name of ['', null, undefined, 42, ['a'], 'n'.repeat(10_000), 'nul\u0000name', 'line\nbreak']) {
          attempts.push([{ name }, () => store.locks.hold(name as string, fn)]);
        }
        for (const notFunction of [null, undefined, 'fn', 42, {}]) {
          attempts.push([{ fn: notFunction }, () => store.locks.hold('lock', notFunction as never)]);
        }
        for (const options of [
          'fast',
          42,
          [],
          { waitMs: -1 },
          { waitMs: 1.5 },
          { waitMs: Number.NaN },
          { waitMs: Number.POSITIVE_INFINITY },
          { waitMs: '100' },
          { waitMs: 1e12 },
        ]) {
          attempts.push([{ options }, () => store.locks.hold('lock', fn, options as never)]);
        }
        for (const [input, attempt] of attempts) {
          const outcome = await outcomeOf(attempt);
          if (outcome !== 'INVALID_INPUT') problems.push(`locks.hold ${describeInput(input)}: ${outcome}`);
        }
        expect(problems).toEqual([]);
        expect(ran).toBe(0);
        expect(await store.locks.hold('lock', async () => 'usable', { waitMs: 2_000 })).toBe('usable');
      },
    },
    {
      name: 'a lock held by another process makes callers wait; once that process is killed the lock is free',
      timeoutMs: 60_000,
      async run({ store, url }) {
        const child = spawnStoreWorker({ url, task: { mode: 'hold-lock', lock: 'memory-write:project:shared' } });
        let locked!: () => void;
        const holding = new Promise<void>((resolve) => {
          locked = resolve;
        });
        const exited = collectStoreWriteWorker(child, (line) => {
          if (line === 'locked') locked();
        });
        await Promise.race([
          holding,
          exited.then((result) => expect.fail(`the holder exited early: ${result.stderr}`)),
        ]);

        await expectEngramError(
          () => store.locks.hold('memory-write:project:shared', async () => 'too soon', { waitMs: 300 }),
          'LOCK_TIMEOUT',
        );
        child.kill('SIGKILL');
        const result = await exited;
        expect({ signal: result.signal, stderr: unexpectedStderr(result.stderr) }).toEqual({
          signal: 'SIGKILL',
          stderr: '',
        });
        // A dead holder's lock goes with its process (closed connection, or a pid that no longer exists).
        expect(
          await store.locks.hold('memory-write:project:shared', async () => 'taken over', { waitMs: 10_000 }),
        ).toBe('taken over');
      },
    },
  ],
});

/** Locks held across processes around a read-then-write of a checkpoint. */
export const lockedCheckpointCases = storeCaseGroup({
  title: 'locks around checkpoints',
  roles: ['locks', 'checkpoints'],
  cases: [
    {
      name: `two processes incrementing one checkpoint ${INCREMENTS_PER_PROCESS} times each under locks.hold lose no update`,
      timeoutMs: 120_000,
      async run({ store, url }) {
        const results = await runStoreWorkersTogether(
          store,
          ['first', 'second'].map(() => ({
            url,
            task: {
              mode: 'lock-increment',
              lock: 'counter-lock',
              checkpoint: 'counter',
              count: INCREMENTS_PER_PROCESS,
            } as const,
          })),
        );
        for (const result of results) {
          expect({ exitCode: result.exitCode, signal: result.signal, stderr: unexpectedStderr(result.stderr) }).toEqual(
            { exitCode: 0, signal: null, stderr: '' },
          );
          expect(result.ids).toHaveLength(INCREMENTS_PER_PROCESS);
        }
        expect(await store.checkpoints.get('counter')).toBe(String(2 * INCREMENTS_PER_PROCESS));
        // Each value was written once, by one process: the increments never overlapped.
        const written = results.flatMap((result) => result.ids.map(Number)).sort((a, b) => a - b);
        expect(written).toEqual(Array.from({ length: 2 * INCREMENTS_PER_PROCESS }, (_, index) => index + 1));
      },
    },
  ],
});
