import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { closeSqlite, openSqlite } from '../../src/adapters/sqlite/sqlite-driver.js';
import { runDream } from '../../src/consolidation/run-dream.js';
import { readChangeSet, undoChangeSet } from '../../src/consolidation/change-sets.js';
import { resolveSyncConflict, syncStatus, syncStore } from '../../src/sync/node/sync-store.js';
import {
  bareRepository,
  cachesOf,
  memoryOn as get,
  objectsHolding,
  remoteLog,
  rememberOn as remember,
  syncedReport as synced,
  SYNC_TEST_TIMEOUT,
  useSyncWorlds,
} from '../support/sync-machines.js';

const worlds = useSyncWorlds();

describe('engram sync between machines through one git remote', () => {
  it(
    'the first sync of a store pushes its memories once, a new machine imports them, and sessions never leave',
    async () => {
      const [a, b] = worlds.three();
      const kept = await remember(a, 'The user writes British English.', { type: 'user' });
      const project = await remember(a, 'Deploys of the app go out on Tuesdays.');
      const session = await a.with((opened) =>
        opened.engram.remember({
          content: 'Scratch note of this session only: a rook sacrifice.',
          scope: 'session:s1',
        }),
      );
      const first = synced(await a.sync());
      expect(first).toMatchObject({ compared: 'full', pushed: { written: 2, tombstones: 0 } });
      const commits = remoteLog(worlds.current.remote);
      expect(commits).toHaveLength(1);
      expect(objectsHolding(worlds.current.remote, 'rook sacrifice')).toEqual([]);

      const imported = synced(await b.sync());
      expect(imported).toMatchObject({ compared: 'full', pulled: { written: 2 }, pushed: { written: 0 } });
      expect(await get(b, kept.id)).toMatchObject({
        content: kept.content,
        scope: kept.scope,
        updatedAt: kept.updatedAt,
      });
      expect(await get(b, project.id)).toMatchObject({ content: project.content });
      expect(await get(b, session.id)).toBeUndefined();

      // Idempotent: more syncs push nothing, write nothing, and read through the change feed.
      for (const machine of [a, b, a]) {
        const again = synced(await machine.sync());
        expect(again).toMatchObject({
          compared: 'changes',
          pushed: { written: 0, tombstones: 0 },
          pulled: { written: 0 },
        });
      }
      expect(remoteLog(worlds.current.remote)).toEqual(commits);
      expect((await b.with((opened) => opened.engram.store.history(kept.id))).map((entry) => entry.actor)).toEqual([
        'sync',
      ]);
    },
    SYNC_TEST_TIMEOUT,
  );

  it(
    'edits of different fields on two machines both stand; the same field keeps the later edit, lists the other, and resolves either way',
    async () => {
      const [a, b] = worlds.three();
      const memory = await remember(a, 'The staging database is PostgreSQL 14.');
      await a.sync();
      await b.sync();
      await a.with((opened) => opened.engram.update(memory.id, { importance: 0.9 }));
      await b.with((opened) => opened.engram.update(memory.id, { description: 'Staging database version' }));
      await a.sync();
      await b.sync();
      await a.sync();
      for (const machine of [a, b])
        expect(await get(machine, memory.id)).toMatchObject({
          importance: 0.9,
          description: 'Staging database version',
        });
      expect((await b.with((opened) => syncStatus({ opened }))).conflicts).toEqual([]);

      // The same field on both: B's edit is later.
      await a.with((opened) => opened.engram.update(memory.id, { content: 'The staging database is PostgreSQL 15.' }));
      await new Promise((resolve) => setTimeout(resolve, 5));
      await b.with((opened) => opened.engram.update(memory.id, { content: 'The staging database is PostgreSQL 16.' }));
      await b.sync();
      const found = synced(await a.sync());
      expect(found.conflicts).toHaveLength(1);
      await b.sync();
      for (const machine of [a, b])
        expect((await get(machine, memory.id))!.content).toBe('The staging database is PostgreSQL 16.');
      // The other edit is in the memory's history on the machine that found the conflict, and listed there.
      const history = await a.with((opened) => opened.engram.store.history(memory.id));
      expect(history.some((entry) => entry.after?.content === 'The staging database is PostgreSQL 15.')).toBe(true);
      const status = await a.with((opened) => syncStatus({ opened }));
      expect(status.conflicts).toMatchObject([
        {
          memoryId: memory.id,
          status: 'open',
          fields: [
            {
              group: 'content',
              kept: 'remote',
              keptValue: 'The staging database is PostgreSQL 16.',
              otherValue: 'The staging database is PostgreSQL 15.',
            },
          ],
        },
      ]);

      // Resolved for the other edit: written back, undoable, and it travels.
      const resolution = await a.with((opened) => resolveSyncConflict({ opened, memoryId: memory.id, keep: 'other' }));
      expect(resolution.changeId).toMatch(/^chg_/);
      expect((await get(a, memory.id))!.content).toBe('The staging database is PostgreSQL 15.');
      expect((await a.with((opened) => syncStatus({ opened }))).conflicts).toEqual([]);
      await a.with((opened) => opened.engram.undo(resolution.changeId!));
      expect((await get(a, memory.id))!.content).toBe('The staging database is PostgreSQL 16.');
      await a.with(async (opened) => opened.engram.undo((await opened.engram.store.history(memory.id)).at(-1)!.id));
      expect((await get(a, memory.id))!.content).toBe('The staging database is PostgreSQL 15.');
      await a.sync();
      await b.sync();
      expect((await get(b, memory.id))!.content).toBe('The staging database is PostgreSQL 15.');
      await expect(
        a.with((opened) => resolveSyncConflict({ opened, memoryId: memory.id, keep: 'kept' })),
      ).rejects.toMatchObject({
        code: 'NOT_FOUND',
      });
    },
    SYNC_TEST_TIMEOUT,
  );

  it(
    'an edit beats a concurrent delete; a delete of an unchanged memory travels; an invalidation arrives as an invalidation',
    async () => {
      const [a, b, c] = worlds.three();
      const edited = await remember(a, 'The CI runs on GitHub Actions.');
      const dropped = await remember(a, 'The team standup is at 9:30.');
      const replaced = await remember(a, 'The API is versioned by URL path.');
      const successor = await remember(a, 'The API is versioned by a header, Api-Version.');
      for (const machine of [a, b, c]) await machine.sync();
      await a.with((opened) => opened.engram.forget(edited.id, { hard: true }));
      await b.with((opened) =>
        opened.engram.update(edited.id, { content: 'The CI runs on GitHub Actions and Buildkite.' }),
      );
      await a.with((opened) => opened.engram.forget(dropped.id, { hard: true }));
      await c.with((opened) => opened.engram.invalidate(replaced.id, { supersededBy: successor.id }));
      for (const machine of [a, b, c, a, b, c]) await machine.sync();
      for (const machine of [a, b, c]) {
        expect((await get(machine, edited.id))?.content, machine.name).toBe(
          'The CI runs on GitHub Actions and Buildkite.',
        );
        expect(await get(machine, dropped.id), machine.name).toBeUndefined();
        expect(await get(machine, replaced.id), machine.name).toMatchObject({
          supersededBy: successor.id,
          invalidAt: expect.any(String),
        });
      }
      const history = await b.with((opened) => opened.engram.store.history(replaced.id));
      expect(history.at(-1)).toMatchObject({ action: 'invalidate', actor: 'sync' });
      expect((await b.with((opened) => opened.engram.store.history(dropped.id))).at(-1)).toMatchObject({
        action: 'delete',
      });
    },
    SYNC_TEST_TIMEOUT,
  );

  it(
    "a dream's change set travels as one change set under its id, and can be undone whole on another machine",
    async () => {
      const [a, b] = worlds.three();
      const now = new Date();
      const dated = await a.with((opened) =>
        opened.engram.remember({
          content: 'Yesterday the team moved the deploys to Fly.io.',
          createdAt: new Date(now.getTime() - 3 * 86_400_000).toISOString(),
        }),
      );
      await a.sync();
      await b.sync();
      const report = await a.with((opened) =>
        runDream(
          { store: opened.engram.store, settings: opened.loaded.settings, now: () => new Date() },
          { trigger: 'manual', scopes: [dated.scope] },
        ),
      );
      expect(report.status).toBe('applied');
      const after = (await get(a, dated.id))!;
      expect(after.content).not.toBe(dated.content);
      const pushed = synced(await a.sync());
      expect(pushed.pushed.changeSets).toBe(1);
      const pulled = synced(await b.sync());
      expect(pulled.pulled.changeSets).toBe(1);
      expect((await get(b, dated.id))!.content).toBe(after.content);
      const record = await b.with((opened) => readChangeSet(opened.engram.store, report.changeSetId!));
      expect(record).toMatchObject({ id: report.changeSetId, actor: 'dream', stampedAt: after.updatedAt });
      await b.with((opened) =>
        undoChangeSet(opened.engram.store, {
          id: report.changeSetId!,
          scopes: [dated.scope],
          actor: 'cli',
          now: () => new Date(),
        }),
      );
      expect((await get(b, dated.id))!.content).toBe(dated.content);
      await b.sync();
      await a.sync();
      expect((await get(a, dated.id))!.content).toBe(dated.content);
    },
    SYNC_TEST_TIMEOUT,
  );

  it(
    'a purge travels as a tombstone without text, and after the next sync no object of the remote or of any cache holds the text',
    async () => {
      const [a, b, c] = worlds.three();
      const secret = 'The vault unseal phrase is purple-otter-7731-quartz.';
      const purged = await remember(a, secret);
      const other = await remember(a, 'The vault runs on three nodes.');
      await a.with((opened) => opened.engram.update(purged.id, { content: `${secret} Rotated monthly.` }));
      for (const machine of [a, b, c]) await machine.sync();
      expect(objectsHolding(worlds.current.remote, 'purple-otter').length).toBeGreaterThan(0);
      await b.with((opened) => opened.engram.purge(purged.id));
      const report = synced(await b.sync());
      expect(report).toMatchObject({ historyRewritten: true, pushed: { tombstones: 1 } });
      expect(remoteLog(worlds.current.remote)).toHaveLength(1);
      expect(objectsHolding(worlds.current.remote, 'purple-otter')).toEqual([]);
      for (const machine of [a, c]) {
        const pulled = synced(await machine.sync());
        expect(pulled.pulled.purged, machine.name).toBe(1);
      }
      for (const machine of [a, b, c]) {
        expect(await get(machine, purged.id)).toBeUndefined();
        expect(
          (await machine.with((opened) => opened.engram.store.history(purged.id))).map((entry) => entry.action),
        ).toEqual(['purge']);
        expect(await get(machine, other.id)).toBeDefined();
        for (const cache of cachesOf(machine.home))
          expect(objectsHolding(cache, 'purple-otter', { all: true }), `${machine.name} ${cache}`).toEqual([]);
      }
      // Syncs after the rewrite go on from the rewritten history.
      const later = await remember(c, 'The vault is backed up nightly.');
      await c.sync();
      await a.sync();
      expect(await get(a, later.id)).toBeDefined();
      expect(objectsHolding(worlds.current.remote, 'purple-otter')).toEqual([]);
    },
    SYNC_TEST_TIMEOUT,
  );

  it(
    'a memory the privacy layer flags stays on this machine with a warning; the rest syncs',
    async () => {
      const [a, b] = worlds.three();
      const token = `AKIA${'Q'.repeat(16)}`;
      const clean = await remember(a, 'The build cache lives in S3.');
      // A secret the write path would have redacted, in the file itself (a store an older engram filled).
      const leaky = await remember(a, 'The deploy key is kept in the vault.', { name: 'deploy-key' });
      const database = openSqlite(join(a.home, 'engram.db'));
      database.prepare('UPDATE memories SET content = ? WHERE id = ?').run(`The deploy key is ${token}.`, leaky.id);
      closeSqlite(database);
      const report = synced(await a.sync());
      expect(report.heldBack).toEqual([{ subject: leaky.id, reason: expect.stringContaining('privacy') }]);
      expect(report.pushed.written).toBe(1);
      expect(objectsHolding(worlds.current.remote, token)).toEqual([]);
      await b.sync();
      expect(await get(b, leaky.id)).toBeUndefined();
      expect(await get(b, clean.id)).toBeDefined();
      const status = await a.with((opened) => syncStatus({ opened }));
      expect(status.remotes[0]).toMatchObject({ heldBackCount: 1, heldBack: [{ subject: leaky.id }] });
    },
    SYNC_TEST_TIMEOUT,
  );

  it(
    "a project's team remote named in .engram.json gets its memories once accepted; personal ones never; a project cannot choose the personal remote",
    async () => {
      const [a, b] = worlds.three();
      const team = bareRepository(join(worlds.current.root, 'team.git'));
      const attacker = bareRepository(join(worlds.current.root, 'attacker.git'));
      for (const machine of [a, b]) {
        writeFileSync(
          join(machine.cwd, '.engram.json'),
          JSON.stringify({ sync: { projectRemote: team, remote: attacker } }),
        );
        // The personal remote from the user's own config file this time, not the environment.
        writeFileSync(join(machine.home, 'config.json'), JSON.stringify({ sync: { remote: worlds.current.remote } }));
        machine.env.ENGRAM_SYNC_REMOTE = '';
      }
      const personal = await remember(a, 'The user prefers dark mode.', { type: 'user', scope: 'global' });
      const shared = await remember(a, 'The service uses port 8443 in staging.');
      // Background sync does not start sending a project somewhere on its own.
      const background = await a.with((opened) => syncStore({ opened, cwd: a.cwd, background: true }));
      expect(background.notices.join('\n')).toMatch(/run "engram sync" in the project/);
      expect(background.notices.join('\n')).toMatch(/Ignored sync.remote/);
      expect(remoteLog(team)).toEqual([]);
      const report = await a.sync();
      expect(report.remotes.map((remote) => remote.scopes)).toEqual([
        expect.stringContaining('not project:demo'),
        'project:demo',
      ]);
      expect(objectsHolding(team, 'port 8443').length).toBeGreaterThan(0);
      expect(objectsHolding(team, 'dark mode')).toEqual([]);
      expect(objectsHolding(worlds.current.remote, 'port 8443')).toEqual([]);
      expect(objectsHolding(worlds.current.remote, 'dark mode').length).toBeGreaterThan(0);
      expect(remoteLog(attacker)).toEqual([]);
      await b.sync();
      expect(await get(b, shared.id)).toBeDefined();
      expect(await get(b, personal.id)).toBeDefined();
    },
    SYNC_TEST_TIMEOUT,
  );

  it(
    'a machine offline for a month comes back: its failures are recorded with a back-off, then it converges, across a history rewrite',
    async () => {
      const [a, b] = worlds.three();
      const base = await remember(a, 'The on-call rotation is weekly.');
      await a.sync();
      await b.sync();
      const offline = { ENGRAM_SYNC_REMOTE: join(worlds.current.root, 'unreachable.git') };
      const aWrites: string[] = [];
      for (let day = 0; day < 30; day += 1) {
        aWrites.push((await remember(a, `Offline note for day ${day}: the runbook step ${day} was checked.`)).id);
        if (day % 10 === 0) {
          const failed = await a.sync({ env: offline });
          expect(failed.remotes[0]).toMatchObject({ status: 'failed', error: { code: 'REMOTE_UNAVAILABLE' } });
        }
      }
      await a.with((opened) => opened.engram.update(base.id, { importance: 0.8 }));
      const bWrite = await remember(b, 'The pager is PagerDuty.');
      const gone = await remember(b, 'Temporary secret-ish note: cobalt-lantern-55.');
      await b.sync();
      await b.with((opened) => opened.engram.purge(gone.id));
      await b.with((opened) => opened.engram.update(base.id, { description: 'On-call rotation' }));
      await b.sync();
      const state = await a.with((opened) => syncStatus({ opened, cwd: a.cwd }), offline);
      expect(state.remotes[0]).toMatchObject({
        failures: 3,
        nextAttemptAt: expect.any(String),
        lastError: { code: 'REMOTE_UNAVAILABLE' },
      });
      const back = synced(await a.sync());
      expect(back.complete).toBe(true);
      await b.sync();
      for (const machine of [a, b]) {
        for (const id of [...aWrites, bWrite.id]) expect(await get(machine, id), `${machine.name} ${id}`).toBeDefined();
        expect(await get(machine, gone.id)).toBeUndefined();
        expect(await get(machine, base.id)).toMatchObject({ importance: 0.8, description: 'On-call rotation' });
      }
      expect(objectsHolding(worlds.current.remote, 'cobalt-lantern')).toEqual([]);
      expect((await a.with((opened) => syncStatus({ opened }))).remotes[0]).toMatchObject({ failures: 0 });
    },
    SYNC_TEST_TIMEOUT,
  );
});
