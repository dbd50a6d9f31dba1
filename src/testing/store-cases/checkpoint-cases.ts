import { expect } from 'vitest';
import { describeInput, outcomeOf, storeCaseGroup } from '../store-suite-support.js';

export const checkpointCases = storeCaseGroup({
  title: 'checkpoints',
  roles: ['checkpoints'],
  cases: [
    {
      name: 'a checkpoint is undefined until set, then reads back exactly what was set last; names are distinct',
      async run({ store }) {
        expect(await store.checkpoints.get('extraction:session-1')).toBeUndefined();
        expect(await store.checkpoints.set('extraction:session-1', 'msg_0001')).toBe(true);
        expect(await store.checkpoints.get('extraction:session-1')).toBe('msg_0001');
        expect(await store.checkpoints.set('extraction:session-1', 'msg_0002')).toBe(true);
        expect(await store.checkpoints.get('extraction:session-1')).toBe('msg_0002');

        const values = [
          '',
          ' ',
          'ü, 日本語, emoji 🚀',
          '{"cursor":"msg_9","at":"2025-01-01T00:00:00.000Z"}',
          "'; DROP TABLE checkpoints; --",
          'line\nbreak\ttab',
          'x'.repeat(100_000),
        ];
        for (const [index, value] of values.entries()) {
          expect(await store.checkpoints.set(`value-${index}`, value)).toBe(true);
          expect(await store.checkpoints.get(`value-${index}`)).toBe(value);
        }
        await store.checkpoints.set('Cursor', 'upper');
        await store.checkpoints.set('cursor', 'lower');
        await store.checkpoints.set('cursor ', 'trailing space');
        expect([
          await store.checkpoints.get('Cursor'),
          await store.checkpoints.get('cursor'),
          await store.checkpoints.get('cursor '),
        ]).toEqual(['upper', 'lower', 'trailing space']);
        expect(await store.checkpoints.get('extraction:session-1')).toBe('msg_0002');
      },
    },
    {
      name: 'checkpoints.set with expected is a compare-and-set: a stale expectation returns false and changes nothing',
      async run({ store }) {
        expect(await store.checkpoints.set('schedule:aging', 'run-1', { expected: 'run-0' })).toBe(false);
        expect(await store.checkpoints.get('schedule:aging')).toBeUndefined();
        expect(await store.checkpoints.set('schedule:aging', 'run-1', { expected: null })).toBe(true);
        expect(await store.checkpoints.set('schedule:aging', 'run-1b', { expected: null })).toBe(false);
        expect(await store.checkpoints.get('schedule:aging')).toBe('run-1');

        expect(await store.checkpoints.set('schedule:aging', 'run-2', { expected: 'run-0' })).toBe(false);
        expect(await store.checkpoints.set('schedule:aging', 'run-2', { expected: 'RUN-1' })).toBe(false);
        expect(await store.checkpoints.set('schedule:aging', 'run-2', { expected: '' })).toBe(false);
        expect(await store.checkpoints.get('schedule:aging')).toBe('run-1');
        expect(await store.checkpoints.set('schedule:aging', 'run-2', { expected: 'run-1' })).toBe(true);
        expect(await store.checkpoints.get('schedule:aging')).toBe('run-2');
        // Setting the value it already holds, as expected, succeeds.
        expect(await store.checkpoints.set('schedule:aging', 'run-2', { expected: 'run-2' })).toBe(true);
        // No expectation: a plain set.
        expect(await store.checkpoints.set('schedule:aging', 'run-3', {})).toBe(true);
        expect(await store.checkpoints.get('schedule:aging')).toBe('run-3');

        // Of many callers that all read the same value, exactly one moves it on.
        const outcomes = await Promise.all(
          Array.from({ length: 8 }, (_, index) =>
            store.checkpoints.set('schedule:aging', `run-4-by-${index}`, { expected: 'run-3' }),
          ),
        );
        expect(outcomes.filter(Boolean)).toHaveLength(1);
        expect(await store.checkpoints.get('schedule:aging')).toBe(`run-4-by-${outcomes.indexOf(true)}`);
      },
    },
    {
      name: 'checkpoint calls refuse malformed, oversized and hostile input with INVALID_INPUT and change nothing',
      async run({ store }) {
        await store.checkpoints.set('kept', 'original');
        const problems: string[] = [];
        const refused = async (label: string, action: () => Promise<unknown>): Promise<void> => {
          const outcome = await outcomeOf(action);
          if (outcome !== 'INVALID_INPUT') problems.push(`${label}: ${outcome}`);
        };
        const badNames: unknown[] = ['', null, undefined, 42, ['kept'], 'n'.repeat(10_000), 'kept\u0000', 'tab\there'];
        for (const name of badNames) {
          await refused(`checkpoints.get ${describeInput({ name })}`, () => store.checkpoints.get(name as string));
          await refused(`checkpoints.set ${describeInput({ name })}`, () =>
            store.checkpoints.set(name as string, 'value'),
          );
        }
        const badValues: unknown[] = [
          null,
          undefined,
          42,
          { cursor: 1 },
          'nul\u0000inside',
          'v'.repeat(2 * 1024 * 1024),
        ];
        for (const value of badValues) {
          await refused(
            `checkpoints.set value ${describeInput({ value: typeof value === 'string' ? value.slice(0, 20) : value })}`,
            () => store.checkpoints.set('kept', value as string),
          );
        }
        const badOptions: unknown[] = ['original', 42, [], { expected: 42 }, { expected: { value: 'original' } }];
        for (const options of badOptions) {
          await refused(`checkpoints.set options ${describeInput({ options })}`, () =>
            store.checkpoints.set('kept', 'changed', options as never),
          );
        }
        expect(problems).toEqual([]);
        expect(await store.checkpoints.get('kept')).toBe('original');
      },
    },
  ],
});
