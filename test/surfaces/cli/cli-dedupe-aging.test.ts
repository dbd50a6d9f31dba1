import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { SqliteMemoryStore } from '../../../src/adapters/sqlite/sqlite-memory-store.js';
import { storeSnapshot } from '../../support/store-snapshot.js';
import { withSqliteStore } from '../../support/temporary-store.js';
import { useSuiteWorkspace } from '../../support/cli-harness.js';

const DAY = 86_400_000;

const workspace = useSuiteWorkspace();
let project: string;

beforeAll(() => {
  project = `project:${workspace.cwd}`;
});

/** Opens the workspace's store directly, with a clock of our choosing, to write memories "in the past". */
function withStore<T>(now: number, work: (store: SqliteMemoryStore) => Promise<T>): Promise<T> {
  return withSqliteStore(join(workspace.home, 'engram.db'), work, () => new Date(now));
}

/** Everything observable in the store: every memory, every history entry, the stats. */
function snapshot(): Promise<string> {
  return withStore(Date.now(), (store) => storeSnapshot(store, [project, 'global', 'project:other']));
}

describe('engram remember dedupes', () => {
  it('updates an existing memory for a near-duplicate and says so; --no-dedupe adds it anyway', async () => {
    const first = await workspace.json(['remember', 'Always run the linter before committing.']);
    expect(first).toMatchObject({ action: 'created' });
    const human = await workspace.run([
      'remember',
      'Always run the linter before committing changes.',
      '--importance',
      '0.8',
    ]);
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(
      new RegExp(`^Updated existing memory ${first.memory.id} \\(.*similarity 0\\.83\\).*engram undo chg_`),
    );
    const shown = await workspace.json(['show', first.memory.id]);
    expect(shown.memory).toMatchObject({
      content: 'Always run the linter before committing changes.',
      importance: 0.8,
    });

    const forced = await workspace.json([
      'remember',
      'Always run the linter before committing changes.',
      '--no-dedupe',
    ]);
    expect(forced.action).toBe('created');
    expect(forced.memory.id).not.toBe(first.memory.id);

    // A changed value is a new fact, not a duplicate.
    await workspace.json(['remember', 'The staging database runs PostgreSQL 15.']);
    expect((await workspace.json(['remember', 'The staging database runs PostgreSQL 16.'])).action).toBe('created');
  });

  it('refuses a --no-dedupe with a value and changes nothing', async () => {
    const before = await snapshot();
    for (const args of [['--no-dedupe=false'], ['--no-dedupe=0'], ['--dedupe']]) {
      const result = await workspace.run(['remember', 'Something to remember.', ...args]);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stderr.length).toBeGreaterThan(10);
    }
    expect(await snapshot()).toBe(before);
  });
});

describe('engram dedupe', () => {
  it('dry run by default changes nothing; --apply merges; undo reverses each change', async () => {
    await workspace.json(['remember', 'Pipeline bugs are tracked in Linear project INGEST.', '--scope', 'global']);
    await workspace.json([
      'remember',
      'Pipeline bugs are tracked in the Linear project INGEST.',
      '--scope',
      'global',
      '--no-dedupe',
    ]);
    await workspace.json([
      'remember',
      'Pipeline bugs are tracked in Linear project INGEST.',
      '--scope',
      'project:other',
    ]);
    const before = await snapshot();

    const dry = await workspace.run(['dedupe']);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toMatch(/Dry run: 2 memories in 2 groups would be merged/);
    expect(await snapshot()).toBe(before);
    const dryJson = await workspace.json(['dedupe']);
    expect(dryJson).toMatchObject({ applied: false, merged: 2, changes: [] });
    // One group per scope: the project's linter pair and the global pair; project:other is not read.
    expect(dryJson.groups.map((group: any) => group.scope).sort()).toEqual(['global', project].sort());

    const applied = await workspace.json(['dedupe', '--apply']);
    expect(applied).toMatchObject({ applied: true, merged: 2 });
    expect(applied.changes.map((change: any) => change.action).sort()).toEqual(['invalidate', 'invalidate', 'update']);
    expect((await workspace.json(['dedupe'])).groups).toEqual([]);

    for (const change of [...applied.changes].reverse()) await workspace.json(['undo', change.changeId]);
    const after = JSON.parse(await snapshot()) as { memories: Array<Record<string, unknown>> };
    const strip = (memories: Array<Record<string, unknown>>) =>
      memories.map(({ updatedAt: _updatedAt, ...rest }) => rest);
    expect(strip(after.memories)).toEqual(strip((JSON.parse(before) as typeof after).memories));
  });

  it('refuses bad flags with exit 2 and changes nothing', async () => {
    const before = await snapshot();
    for (const args of [
      ['--threshold', 'abc'],
      ['--threshold', '2'],
      ['--threshold', '0'],
      ['--threshold', '-0.5'],
      ['--threshold'],
      ['extra'],
      ['--apply=yes'],
      ['--scope', 'project:'],
      ['--bogus'],
    ]) {
      const result = await workspace.run(['dedupe', '--apply', ...args]);
      expect(result.code, args.join(' ')).toBe(2);
    }
    expect(await snapshot()).toBe(before);
  });
});

describe('engram age', () => {
  it('archives old, unimportant memories (dry run first), counts them in stats, and restore brings one back', async () => {
    const now = Date.now();
    const [old, young, important] = await withStore(now - 91 * DAY, async (store) => [
      await store.create(
        { scope: project, content: 'An unimportant note from long ago.', importance: 0.2 },
        { actor: 'seed' },
      ),
      await withStore(now - 89 * DAY, (recent) =>
        recent.create({ scope: project, content: 'A note from 89 days ago.', importance: 0.2 }, { actor: 'seed' }),
      ),
      await store.create(
        { scope: project, content: 'An important note from long ago.', importance: 0.5 },
        { actor: 'seed' },
      ),
    ]);
    const before = await snapshot();
    const dry = await workspace.run(['age', '--dry-run']);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toMatch(/^Dry run: would archive 1 memory in /);
    expect(dry.stdout).toContain(old!.id);
    expect(await snapshot()).toBe(before);

    const report = await workspace.json(['age']);
    expect(report).toMatchObject({ dryRun: false, archived: [old!.id] });
    expect(report.candidates[0]).toEqual({
      id: old!.id,
      scope: project,
      name: old!.name,
      importance: 0.2,
      lastAccessedAt: null,
      createdAt: old!.createdAt,
    });
    const stats = await workspace.json(['stats']);
    expect(stats.archived).toBe(1);
    const listed = await workspace.json(['list', '--archived']);
    expect(listed.memories.map((memory: any) => memory.id)).toEqual([old!.id]);
    expect((await workspace.json(['list'])).memories.map((memory: any) => memory.id)).toEqual(
      expect.arrayContaining([young!.id, important!.id]),
    );

    expect((await workspace.json(['restore', old!.id])).memory.archived).toBe(false);
    expect((await workspace.run(['age'])).stdout).toMatch(/^Nothing to archive/);
  });

  it('refuses bad flags with exit 2 and changes nothing', async () => {
    const before = await snapshot();
    for (const args of [['now'], ['--dry-run=yes'], ['--days', '3'], ['--scope', 'nonsense'], ['--all', '--scope']]) {
      const result = await workspace.run(['age', ...args]);
      expect(result.code, args.join(' ')).toBe(2);
    }
    expect(await snapshot()).toBe(before);
  });
});
