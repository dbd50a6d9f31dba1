import { beforeEach, describe, expect, it } from 'vitest';
import type { Memory } from '../../src/memory/memory.js';
import { Engram } from '../../src/engram.js';
import { everyMemory, storeSnapshot } from '../support/store-snapshot.js';
import { engramOver, useTemporaryStore } from '../support/temporary-store.js';
import type { AgingReport } from '../../src/maintenance/age-memories.js';
import { MAX_TIMER_MS, startAgingSchedule, type IntervalTimers } from '../../src/maintenance/aging-schedule.js';

const PROJECT = 'project:github.com/acme/app';
const OTHER = 'project:github.com/acme/other';
const DAY = 86_400_000;
const NOW = Date.parse('2025-06-01T12:00:00.000Z');

let engram: Engram;

const opened = useTemporaryStore(NOW);

beforeEach(() => {
  engram = engramOver(opened, { defaultScope: PROJECT, readScopes: [PROJECT, 'global'], actor: 'test' });
});

/** What a user could observe, minus updatedAt (an undo is itself a change, so it moves that clock). */
async function observable(): Promise<unknown> {
  const memories = await everyMemory(opened.store, [PROJECT, OTHER, 'global']);
  return memories.map(({ updatedAt: _updatedAt, ...rest }) => rest);
}

const snapshot = (): Promise<string> => storeSnapshot(opened.store, [PROJECT, OTHER, 'global']);

async function writeAt(
  daysAgo: number,
  content: string,
  fields: { importance?: number; scope?: string } = {},
): Promise<Memory> {
  opened.clock.now = NOW - daysAgo * DAY;
  const memory = await engram.save({ content, ...fields }, { dedupe: false });
  opened.clock.now = NOW;
  return memory.memory;
}

describe('engram dedupe (library)', () => {
  async function seed(): Promise<{
    oldest: Memory;
    middle: Memory;
    newest: Memory;
    apart: Memory;
    elsewhere: Memory;
    contradiction: Memory;
  }> {
    const oldest = await writeAt(30, 'Always run the linter before committing.', { importance: 0.4 });
    const middle = await writeAt(20, 'Always run the linter before committing changes.', { importance: 0.8 });
    const newest = await writeAt(10, 'Always run the linter before committing changes!', { importance: 0.3 });
    const apart = await writeAt(9, 'Bugs are tracked in Linear.');
    const elsewhere = await writeAt(8, 'Always run the linter before committing.', { scope: OTHER });
    const contradiction = await writeAt(7, 'Never run the linter before committing.');
    return { oldest, middle, newest, apart, elsewhere, contradiction };
  }

  it('a dry run reports the groups and changes nothing', async () => {
    const { oldest, middle, newest } = await seed();
    const before = await snapshot();
    const report = await engram.dedupe({ scopes: [PROJECT, OTHER] });
    expect(await snapshot()).toBe(before);
    expect(report).toMatchObject({ applied: false, merged: 2, changes: [] });
    expect(report.groups).toHaveLength(1);
    const [group] = report.groups;
    expect(group!.keeper.id).toBe(oldest.id);
    expect(group!.duplicates.map(({ memory }) => memory.id)).toEqual([middle.id, newest.id]);
    expect(group!.patch).toEqual({
      content: 'Always run the linter before committing changes!',
      description: 'Always run the linter before committing changes!',
      importance: 0.8,
    });
  });

  it('--apply merges into the oldest, invalidates the rest with a link, and undo reverses every change', async () => {
    const { oldest, middle, newest, apart, elsewhere, contradiction } = await seed();
    const before = await observable();
    const report = await engram.dedupe({ scopes: [PROJECT, OTHER], apply: true });
    expect(report.applied).toBe(true);
    expect(report.changes.map((change) => [change.memoryId, change.action])).toEqual([
      [oldest.id, 'update'],
      [middle.id, 'invalidate'],
      [newest.id, 'invalidate'],
    ]);
    const keeper = await engram.get(oldest.id);
    expect(keeper).toMatchObject({
      content: 'Always run the linter before committing changes!',
      importance: 0.8,
      invalidAt: null,
    });
    for (const id of [middle.id, newest.id])
      expect(await engram.get(id)).toMatchObject({ supersededBy: oldest.id, invalidAt: new Date(NOW).toISOString() });
    for (const id of [apart.id, elsewhere.id, contradiction.id])
      expect((await opened.store.get(id))!.invalidAt).toBeNull();
    for (const change of report.changes)
      expect((await opened.store.getChange(change.changeId))!.actor).toBe('test (dedupe)');

    const recalled = await engram.recall('run the linter before committing', { recordAccess: false, minScore: 0 });
    expect(recalled.memories.map(({ memory }) => memory.id)).not.toContain(middle.id);
    expect((await engram.dedupe({ scopes: [PROJECT, OTHER] })).groups).toEqual([]);

    for (const change of [...report.changes].reverse()) await engram.undo(change.changeId);
    expect(await observable()).toEqual(before);
  });

  it('refuses a threshold outside (0, 1] and changes nothing', async () => {
    await seed();
    const before = await snapshot();
    for (const threshold of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, '0.5' as unknown as number]) {
      await expect(engram.dedupe({ apply: true, lexicalThreshold: threshold })).rejects.toMatchObject({
        code: 'INVALID_INPUT',
      });
    }
    await expect(engram.dedupe({ apply: true, scopes: ['project:'] })).rejects.toMatchObject({ code: 'INVALID_SCOPE' });
    await expect(engram.dedupe({ apply: true, scopes: [] })).rejects.toMatchObject({ code: 'INVALID_SCOPE' });
    expect(await snapshot()).toBe(before);
  });
});

describe('aging', () => {
  async function seed(): Promise<Record<string, Memory>> {
    return {
      old: await writeAt(91, 'Old and unimportant.', { importance: 0.3 }),
      young: await writeAt(89, 'Nearly old but not yet.', { importance: 0.3 }),
      exactly: await writeAt(90, 'Exactly ninety days old.', { importance: 0.3 }),
      important: await writeAt(91, 'Old but important enough.', { importance: 0.5 }),
      justBelow: await writeAt(91, 'Old and just below the bar.', { importance: 0.49 }),
      recalled: await writeAt(200, 'Old but recalled ten days ago.', { importance: 0.1 }),
      elsewhere: await writeAt(120, 'Old, in another project.', { importance: 0.1, scope: OTHER }),
      invalid: await writeAt(120, 'Old and already invalid.', { importance: 0.1 }),
    };
  }

  it('archives exactly the memories not used for more than 90 days with importance below 0.5', async () => {
    const memories = await seed();
    await opened.store.recordAccess([memories.recalled!.id], new Date(NOW - 10 * DAY).toISOString());
    await engram.invalidate(memories.invalid!.id);

    const before = await snapshot();
    const dry = await engram.age({ dryRun: true });
    expect(await snapshot()).toBe(before);
    expect(dry.candidates.map((memory) => memory.id)).toEqual([memories.old!.id, memories.justBelow!.id]);
    expect(dry).toMatchObject({
      dryRun: true,
      archived: [],
      cutoff: new Date(NOW - 90 * DAY).toISOString(),
      scopes: [PROJECT, 'global'],
    });

    const report = await engram.age();
    expect(report.archived).toEqual([memories.old!.id, memories.justBelow!.id]);
    expect((await engram.get(memories.old!.id)).archived).toBe(true);
    expect((await opened.store.history(memories.old!.id)).at(-1)).toMatchObject({
      action: 'archive',
      actor: 'test (aging)',
    });
    for (const key of ['young', 'exactly', 'important', 'recalled', 'elsewhere'])
      expect((await opened.store.get(memories[key]!.id))!.archived, key).toBe(false);
    expect((await engram.stats([PROJECT])).archived).toBe(2);
    const recalled = await engram.recall('old unimportant', { recordAccess: false, minScore: 0 });
    expect(recalled.memories.map(({ memory }) => memory.id)).not.toContain(memories.old!.id);

    // Idempotent, and every scope of the store when asked.
    expect((await engram.age()).archived).toEqual([]);
    expect((await engram.age({ allScopes: true })).archived).toEqual([memories.elsewhere!.id]);

    // A restored memory is back in recall, and a restore counts as use: the next run leaves it alone...
    await engram.restore(memories.old!.id);
    expect(
      (await engram.recall('old unimportant', { minScore: 0, recordAccess: false })).memories.map(
        ({ memory }) => memory.id,
      ),
    ).toContain(memories.old!.id);
    expect((await engram.age()).archived).toEqual([]);
    // ...until it goes unused for another 90 days.
    opened.clock.now = NOW + 91 * DAY;
    expect((await engram.age()).archived).toEqual([
      memories.recalled!.id,
      memories.old!.id,
      memories.exactly!.id,
      memories.young!.id,
    ]);
  });
});

/** Fake interval timers: the test fires the callback itself. */
function fakeTimers(): IntervalTimers & { fire(): void; active: boolean; milliseconds: number } {
  let callback: (() => void) | undefined;
  const timers = {
    active: false,
    milliseconds: 0,
    setInterval(next: () => void, milliseconds: number) {
      callback = next;
      timers.active = true;
      timers.milliseconds = milliseconds;
      return 'handle';
    },
    clearInterval(handle: unknown) {
      if (handle === 'handle') timers.active = false;
    },
    fire() {
      if (timers.active) callback?.();
    },
  };
  return timers;
}

describe('aging schedule', () => {
  const report = { archived: [] } as unknown as AgingReport;

  it('runs at start and on every tick, one run at a time, and stops cleanly', async () => {
    const timers = fakeTimers();
    let runs = 0;
    let release: () => void = () => undefined;
    const schedule = startAgingSchedule({
      run: async () => {
        runs += 1;
        await new Promise<void>((resolve) => (release = resolve));
        return report;
      },
      intervalMs: 24 * 3_600_000,
      timers,
      log: () => undefined,
    });
    expect(runs).toBe(1);
    expect(timers.milliseconds).toBe(24 * 3_600_000);
    timers.fire();
    expect(runs).toBe(1); // the first run is still going: the tick is skipped, not queued
    release();
    await new Promise((resolve) => setImmediate(resolve));
    timers.fire();
    expect(runs).toBe(2);
    const stopped = schedule.stop();
    expect(timers.active).toBe(false);
    release();
    await stopped;
    timers.fire();
    expect(runs).toBe(2);
  });

  it('logs a failed run and keeps going; caps intervals Node cannot honour', async () => {
    const timers = fakeTimers();
    const logged: string[] = [];
    let runs = 0;
    const schedule = startAgingSchedule({
      run: async () => {
        runs += 1;
        if (runs === 1) throw new Error('database is locked');
        return report;
      },
      intervalMs: 1_000 * 3_600_000,
      timers,
      log: (message) => logged.push(message),
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(logged).toEqual(['engram: aging run failed: database is locked']);
    expect(timers.milliseconds).toBe(MAX_TIMER_MS);
    timers.fire();
    await schedule.stop();
    expect(runs).toBe(2);
  });
});
