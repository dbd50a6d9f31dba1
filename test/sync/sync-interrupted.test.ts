import { hostname } from 'node:os';
import { describe, expect, it } from 'vitest';
import type { Memory } from '../../src/memory/memory.js';
import type { OpenedEngram } from '../../src/node/open-engram.js';
import { GitSyncRemote } from '../../src/sync/node/git-sync-remote.js';
import { cacheDirectory, resolveRoutes } from '../../src/sync/node/sync-routes.js';
import { syncStatus } from '../../src/sync/node/sync-store.js';
import { conflictsOf, saveConflict } from '../../src/sync/sync-conflicts.js';
import { runSync } from '../../src/sync/sync-run.js';
import type { SyncRunInput } from '../../src/sync/sync-run-input.js';
import type { SyncRemote } from '../../src/sync/sync-remote.js';
import { useSyncWorlds, type Machine } from '../support/sync-machines.js';

const worlds = useSyncWorlds();

/** The engine over the machine's real git cache, with `around` given the chance to act between its steps. */
async function syncWith(opened: OpenedEngram, cwd: string, wrap: (remote: SyncRemote) => SyncRemote) {
  const { routes } = await resolveRoutes(opened, { acceptProjectRemote: true, cwd, now: () => new Date() });
  const route = routes[0]!;
  const remote = new GitSyncRemote({
    directory: cacheDirectory(opened.loaded.home, opened.loaded.settings.store.url, route),
    url: route.url,
    branch: 'engram',
    timeoutMs: 60_000,
    machine: hostname(),
    now: () => new Date(),
  });
  await remote.open();
  const input: SyncRunInput = {
    store: opened.engram.store,
    remote: wrap(remote),
    route,
    actor: 'sync',
    machine: 'test',
    now: () => new Date(),
    maxFileBytes: 1 << 20,
    purge: async (id, scope) => void (await opened.engram.purge(id, { actor: 'sync', scopes: [scope] })),
  };
  return runSync(input);
}

function intercept(remote: SyncRemote, afterPush: () => Promise<void>): SyncRemote {
  return {
    fetch: () => remote.fetch(),
    has: (commit) => remote.has(commit),
    list: (commit) => remote.list(commit),
    diff: (from, to) => remote.diff(from, to),
    entries: (commit, paths) => remote.entries(commit, paths),
    read: (objects, max) => remote.read(objects, max),
    commit: (input) => remote.commit(input),
    push: async (commit, expected) => {
      const result = await remote.push(commit, expected);
      await afterPush();
      return result;
    },
    keep: (commit) => remote.keep(commit),
    scrub: () => remote.scrub(),
  };
}

/** Two machines that both hold, after a sync each, the one memory `a` wrote. */
async function bothHolding(content: string): Promise<{ a: Machine; b: Machine; memory: Memory }> {
  const [a, b] = worlds.make(2).machines as [Machine, Machine];
  const memory = await a.with((opened) => opened.engram.remember({ content }));
  await a.sync();
  await b.sync();
  return { a, b, memory };
}

describe('sync never overwrites an edit made while it runs, and finishes what an interruption left', () => {
  it('a memory edited here between the push and the local writes keeps the edit; the next sync merges both', async () => {
    const { a, b, memory } = await bothHolding('The queue is RabbitMQ.');
    await b.with((opened) => opened.engram.update(memory.id, { importance: 0.95 }));
    await b.with((opened) => opened.engram.remember({ content: 'The cache is Redis.' }));
    await b.sync();
    await a.with((opened) => opened.engram.update(memory.id, { description: 'Message queue' }));
    const report = await a.with((opened) =>
      syncWith(opened, a.cwd, (remote) =>
        intercept(remote, async () => {
          await opened.engram.update(memory.id, { content: 'The queue is RabbitMQ 3.13.' });
        }),
      ),
    );
    expect(report.complete).toBe(false);
    // The person's edit stands; what the remote brought for that memory waits for the next sync.
    expect(await a.with((opened) => opened.engram.store.get(memory.id))).toMatchObject({
      content: 'The queue is RabbitMQ 3.13.',
      description: 'Message queue',
      importance: 0.5,
    });
    await a.sync();
    await b.sync();
    for (const machine of [a, b])
      expect(await machine.with((opened) => opened.engram.store.get(memory.id))).toMatchObject({
        content: 'The queue is RabbitMQ 3.13.',
        description: 'Message queue',
        importance: 0.95,
      });
    expect((await a.with((opened) => syncStatus({ opened }))).conflicts).toEqual([]);
  }, 120_000);

  it('a conflict whose remote state was written but not the merge is finished by the next sync', async () => {
    const { a, b, memory } = await bothHolding('The linter is ESLint.');
    await b.with((opened) => opened.engram.update(memory.id, { content: 'The linter is Biome.' }));
    await b.sync();
    await new Promise((resolve) => setTimeout(resolve, 5));
    await a.with((opened) => opened.engram.update(memory.id, { content: 'The linter is oxlint.' }));
    // The sync is stopped right after the remote's state was set aside here (as a SIGKILL would).
    let stop = false;
    await a
      .with((opened) =>
        syncWith(opened, a.cwd, (remote) =>
          intercept(remote, async () => {
            const store = opened.engram.store;
            const original = store.importMany.bind(store);
            store.importMany = async (...args) => {
              const result = await original(...args);
              if (args[0][0]?.content === 'The linter is Biome.') {
                stop = true;
                throw new Error('killed');
              }
              return result;
            };
          }),
        ),
      )
      .catch((error: Error) => expect(error.message).toBe('killed'));
    expect(stop).toBe(true);
    expect((await a.with((opened) => opened.engram.store.get(memory.id)))!.content).toBe('The linter is Biome.');
    expect(await a.with((opened) => conflictsOf(opened.engram.store, memory.id))).toMatchObject([
      { status: 'applying' },
    ]);
    await a.sync();
    await b.sync();
    for (const machine of [a, b])
      expect((await machine.with((opened) => opened.engram.store.get(memory.id)))!.content).toBe(
        'The linter is oxlint.',
      );
    const records = await a.with((opened) => conflictsOf(opened.engram.store, memory.id));
    expect(records).toMatchObject([
      { status: 'open', fields: [{ group: 'content', kept: 'local', otherValue: 'The linter is Biome.' }] },
    ]);
    expect(records[0]).not.toHaveProperty('pending');
    // Both edits are in this machine's history.
    const contents = (await a.with((opened) => opened.engram.store.history(memory.id))).map(
      (entry) => entry.after?.content,
    );
    expect(contents).toEqual(expect.arrayContaining(['The linter is Biome.', 'The linter is oxlint.']));
    void saveConflict;
  }, 120_000);

  for (const removal of ['forget --hard', 'purge'] as const)
    it(`a memory pulled by a sync stopped before it recorded its base still follows a ${removal} made elsewhere`, async () => {
      const world = worlds.make(2);
      const [a, b] = world.machines as [Machine, Machine];
      const memory = await a.with((opened) => opened.engram.remember({ content: 'The runner is Bun zq-stopped.' }));
      const untouched = await a.with((opened) => opened.engram.remember({ content: 'The shell is fish.' }));
      await a.sync();
      // b writes what it pulled, then stops before its sync state (the base) is written, as a SIGKILL would.
      await b
        .with((opened) => {
          const store = opened.engram.store;
          const original = store.importMany.bind(store);
          store.importMany = async (...args) => {
            await original(...args);
            throw new Error('killed');
          };
          return syncWith(opened, b.cwd, (remote) => remote);
        })
        .catch((error: Error) => expect(error.message).toBe('killed'));
      expect(await b.with((opened) => opened.engram.store.get(memory.id))).toBeDefined();
      await b.with((opened) => opened.engram.update(untouched.id, { content: 'The shell is zsh.' }));
      await a.with(async (opened) => {
        if (removal === 'purge') await opened.engram.purge(memory.id);
        else await opened.engram.forget(memory.id, { hard: true });
      });
      await a.with((opened) => opened.engram.forget(untouched.id, { hard: true }));
      await a.sync();
      const report = await b.sync();
      // The remote held the memory (b had it from there): its tombstone applies; b's own edit still beats a delete.
      expect(await b.with((opened) => opened.engram.store.get(memory.id))).toBeUndefined();
      expect(report.remotes[0]).toMatchObject({ status: 'synced' });
      const outcome = report.remotes[0]!;
      if (outcome.status === 'synced')
        expect(outcome.report.heldBack.map((problem) => problem.subject)).not.toContain(memory.id);
      expect((await b.with((opened) => opened.engram.store.get(untouched.id)))?.content).toBe('The shell is zsh.');
      await a.sync();
      expect((await a.with((opened) => opened.engram.store.get(untouched.id)))?.content).toBe('The shell is zsh.');
    }, 120_000);
});
