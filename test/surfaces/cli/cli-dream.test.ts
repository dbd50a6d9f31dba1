import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { SqliteMemoryStore } from '../../../src/adapters/sqlite/sqlite-memory-store.js';
import { storeSnapshot } from '../../support/store-snapshot.js';
import { withSqliteStore } from '../../support/temporary-store.js';
import { useSuiteWorkspace } from '../../support/cli-harness.js';

const workspace = useSuiteWorkspace();
let project: string;

beforeAll(() => {
  project = `project:${workspace.cwd}`;
});
function withStore<T>(work: (store: SqliteMemoryStore) => Promise<T>): Promise<T> {
  return withSqliteStore(join(workspace.home, 'engram.db'), work);
}

function snapshot(): Promise<string> {
  return withStore((store) => storeSnapshot(store, [project]));
}

describe('engram dream', () => {
  it('dry-run prints a diff and changes nothing; apply prints the change set; undo reverts it; recall and show read the chain', async () => {
    await withStore((store) =>
      store.importMany(
        [
          {
            id: 'm-old',
            scope: project,
            content: 'The staging database runs PostgreSQL 14.',
            createdAt: '2026-03-01T10:00:00Z',
          },
          {
            id: 'm-new',
            scope: project,
            content: 'The staging database runs PostgreSQL 16.',
            createdAt: '2026-03-05T10:00:00Z',
          },
          {
            id: 'm-date',
            scope: project,
            content: 'The user migrated the billing cron yesterday.',
            createdAt: '2026-03-10T10:00:00Z',
          },
          { id: 'm-a', scope: project, content: 'Alice reports to Bob.', createdAt: '2026-03-01T10:00:00Z' },
          { id: 'm-b', scope: project, content: 'Bob reports to Alice.', createdAt: '2026-03-02T10:00:00Z' },
        ],
        { onExisting: 'fail' },
        { actor: 'seed' },
      ),
    );
    const before = await snapshot();
    const dry = await workspace.run(['dream', '--dry-run']);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toContain('+ content: The user migrated the billing cron on 9 March 2026.');
    expect(dry.stdout).toContain('m-old');
    expect(dry.stdout.trim().split('\n').at(-1)).toBe('improved 2 memories');
    expect(await snapshot()).toBe(before);

    const applied = await workspace.json(['dream']);
    expect(applied.status).toBe('applied');
    expect(applied.summary).toBe('improved 2 memories');
    const changeSetId: string = applied.changeSetId;
    expect(changeSetId).toMatch(/^cs_/);
    expect(applied.diffs.map((diff: { memoryId: string }) => diff.memoryId).sort()).toEqual(['m-date', 'm-old']);

    // Recall reads current facts; --include-invalid and --as-of show what was true then.
    const current = await workspace.json(['recall', 'staging database PostgreSQL']);
    expect(current.memories.map((entry: { memory: { id: string } }) => entry.memory.id)).toEqual(['m-new']);
    const all = await workspace.json(['recall', 'staging database PostgreSQL', '--include-invalid']);
    expect(all.memories.map((entry: { memory: { id: string } }) => entry.memory.id).sort()).toEqual(['m-new', 'm-old']);
    const then = await workspace.json(['recall', 'staging database PostgreSQL', '--as-of', '2026-03-03']);
    expect(then.memories.map((entry: { memory: { id: string } }) => entry.memory.id)).toEqual(['m-old']);
    expect((await workspace.run(['recall', 'x', '--as-of', 'not-a-date'])).code).not.toBe(0);

    const shown = await workspace.json(['show', 'm-new']);
    expect(shown.chain.replaces).toEqual([
      expect.objectContaining({ from: 'm-old', to: 'm-new', why: 'overturned', by: 'dream' }),
    ]);

    const undone = await workspace.run(['undo', changeSetId]);
    expect(undone.code).toBe(0);
    expect(undone.stdout).toContain('2 memories back as they were');
    const restored = JSON.parse(await snapshot()) as { memories: Array<Record<string, unknown>> };
    const original = JSON.parse(before) as { memories: Array<Record<string, unknown>> };
    // Recall's hits moved access bookkeeping, and every change moves the version stamp: the rest is as before.
    const strip = ({
      updatedAt: _updatedAt,
      hitCount: _hits,
      lastAccessedAt: _accessed,
      ...rest
    }: Record<string, unknown>) => rest;
    expect(restored.memories.map(strip)).toEqual(original.memories.map(strip));
    expect((await workspace.run(['undo', 'cs_00000000000000000000zz'])).code).not.toBe(0);
  });

  it('undo finds a change set or a change by its id alone, wherever its scopes are; --scope still confines it', async () => {
    const other = 'project:acme/other-service';
    await withStore((store) =>
      store.importMany(
        [
          { id: 'x-old', scope: other, content: 'The queue runs RabbitMQ 3.11.', createdAt: '2026-03-01T10:00:00Z' },
          { id: 'x-new', scope: other, content: 'The queue runs RabbitMQ 3.13.', createdAt: '2026-03-06T10:00:00Z' },
          {
            id: 'h-date',
            scope: project,
            content: 'The user rotated the staging certificate yesterday.',
            createdAt: '2026-03-10T10:00:00Z',
          },
        ],
        { onExisting: 'fail' },
        { actor: 'seed' },
      ),
    );
    // One dream over two projects (as the service runs it over every scope of the store): one change set.
    const applied = await workspace.json(['dream', '--scope', `${project},${other}`]);
    expect(applied.status).toBe('applied');
    const changeSetId: string = applied.changeSetId;
    const changed = await withStore(async (store) => (await store.get('x-old'))?.invalidAt);
    expect(changed).not.toBeNull();
    // Named by a scope it does not cover whole: refused, nothing undone.
    const confined = await workspace.run(['undo', changeSetId, '--scope', project]);
    expect(confined.code).not.toBe(0);
    expect(await withStore(async (store) => (await store.get('x-old'))?.invalidAt)).toBe(changed);
    // From this project, with no --scope: the id is enough.
    const undone = await workspace.json(['undo', changeSetId]);
    expect(undone.scopes.sort()).toEqual([other, project].sort());
    expect(await withStore(async (store) => (await store.get('x-old'))?.invalidAt)).toBeNull();
    // A single change of another project's memory, by its id alone.
    const edit = await withStore((store) =>
      store.update('x-new', { content: 'The queue runs RabbitMQ 4.0.' }, { actor: 'seed' }),
    );
    const change = await withStore(async (store) => (await store.history(edit.id)).at(-1)!.id);
    expect((await workspace.run(['undo', change, '--scope', project])).code).not.toBe(0);
    const single = await workspace.run(['undo', change]);
    expect(single.code).toBe(0);
    expect(single.stdout).toContain(other);
    expect(await withStore(async (store) => (await store.get('x-new'))?.content)).toBe('The queue runs RabbitMQ 3.13.');
    expect((await workspace.run(['undo', 'chg_does_not_exist'])).code).not.toBe(0);
  });
});
