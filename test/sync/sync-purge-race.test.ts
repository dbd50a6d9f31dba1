import { chmodSync, existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ENGRAM_BINARY } from '../support/cli-harness.js';
import { killedSync } from '../support/sync-kill.js';
import {
  cachesOf,
  memoryOn as get,
  objectsHolding,
  remoteLog,
  rememberOn as remember,
  syncedReport as synced,
  type Machine,
  SYNC_TEST_TIMEOUT,
  useSyncWorlds,
} from '../support/sync-machines.js';

/**
 * A purge's history rewrite against what can happen around it, made to happen deterministically:
 * the purging sync killed right after its push (before it cleared its cache), and another
 * machine's push landing while the rewrite is on its way to the remote (a `pre-receive` hook of the
 * bare remote runs that machine's `engram sync` once, before the remote takes the rewrite), in
 * both directions. Afterwards no object reachable on the remote, and none in any cache, holds a
 * purged text; nothing else anyone wrote is lost.
 */

const worlds = useSyncWorlds();

/** Texts found in the remote's reachable objects or in any object of any machine's cache. */
function copiesOf(texts: readonly string[], machines: readonly Machine[]): string[] {
  const found: string[] = [];
  for (const text of texts) {
    if (objectsHolding(worlds.current.remote, text).length > 0) found.push(`${text} on the remote`);
    for (const machine of machines)
      for (const cache of cachesOf(machine.home))
        if (objectsHolding(cache, text, { all: true }).length > 0) found.push(`${text} in ${machine.name}'s cache`);
  }
  return found;
}

/**
 * Arms the remote: the next push it receives first waits for `machine`'s `engram sync` (a process
 * of its own, with that machine's environment only), so that sync's push lands in between.
 */
function armInterleavedSync(machine: Machine): string {
  const done = join(worlds.current.root, `interleaved-${machine.name}.json`);
  const arm = join(worlds.current.root, 'armed');
  const env = Object.entries(machine.env)
    .map(([name, value]) => `${name}=${shellQuote(value)}`)
    .join(' ');
  writeFileSync(arm, '');
  const hook = join(worlds.current.remote, 'hooks', 'pre-receive');
  writeFileSync(
    hook,
    `#!/bin/sh
cat >/dev/null
# Once: the first push after arming. The sync's own push comes back here and finds it disarmed.
rm ${shellQuote(arm)} 2>/dev/null || exit 0
cd ${shellQuote(machine.cwd)} && env -i ${env} ${shellQuote(process.execPath)} ${shellQuote(ENGRAM_BINARY)} sync --json > ${shellQuote(done)} 2>&1
exit 0
`,
  );
  chmodSync(hook, 0o755);
  return done;
}

function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

describe('a purge and the pushes around it', () => {
  it(
    'a purging sync killed right after its push leaves no old copy in its cache once it syncs again',
    async () => {
      const [a, b] = worlds.three();
      const secret = await remember(a, 'The launch codename is heron-lantern-5521.');
      const kept = await remember(a, 'Deploys run from the main branch only.');
      await a.sync();
      await b.sync();
      expect(copiesOf(['heron-lantern'], []).length).toBeGreaterThan(0);
      await a.with((opened) => opened.engram.purge(secret.id));
      const killed = await killedSync(
        a,
        { when: 'after-command', command: 'push' },
        { root: worlds.current.root, remoteGitDir: worlds.current.remote },
      );
      expect(killed).toMatchObject({ killed: true, pushed: true });
      expect(copiesOf(['heron-lantern'], [])).toEqual([]);
      // The rewrite landed, but the killed sync never cleared its cache of the old history.
      expect(copiesOf(['heron-lantern'], [a]).length).toBeGreaterThan(0);
      const again = synced(await a.sync());
      expect(again.heldBack).toEqual([]);
      await b.sync();
      expect(copiesOf(['heron-lantern'], [a, b])).toEqual([]);
      expect(await get(b, secret.id)).toBeUndefined();
      expect(await get(b, kept.id)).toBeDefined();
    },
    SYNC_TEST_TIMEOUT,
  );

  it(
    "another machine's push that lands while the rewrite is on its way (its edit of the purged memory, a new memory, another edit) brings no purged text back and loses nothing",
    async () => {
      const [a, b, c] = worlds.three();
      const secret = await remember(a, 'The billing partner is called ember-quarry-8812.');
      const shared = await remember(a, 'Invoices are sent on the first of the month.');
      for (const machine of [a, b, c]) await machine.sync();
      await b.with((opened) =>
        opened.engram.update(secret.id, { content: 'The billing partner is called nutmeg-pylon-3390.' }),
      );
      const added = await remember(b, 'Refunds need a second approver.');
      synced(await c.sync());
      expect(copiesOf(['ember-quarry'], []).length).toBeGreaterThan(0);
      expect((await get(b, secret.id))?.content).toContain('nutmeg-pylon');
      await b.with((opened) => opened.engram.update(shared.id, { description: 'invoice day' }));
      await a.with((opened) => opened.engram.purge(secret.id));
      const done = armInterleavedSync(b);
      const report = synced(await a.sync());
      expect(existsSync(done)).toBe(true);
      // b's push landed first: a's rewrite was refused, read b's push and was made again.
      expect(report.attempts).toBeGreaterThan(1);
      expect(report.historyRewritten).toBe(true);
      expect(remoteLog(worlds.current.remote)).toHaveLength(1);
      for (const machine of [b, c, a]) synced(await machine.sync());
      expect(copiesOf(['ember-quarry', 'nutmeg-pylon'], [a, b, c])).toEqual([]);
      for (const machine of [a, b, c]) {
        expect(await get(machine, secret.id), machine.name).toBeUndefined();
        expect((await get(machine, added.id))?.content, machine.name).toBe('Refunds need a second approver.');
        expect((await get(machine, shared.id))?.description, machine.name).toBe('invoice day');
      }
    },
    SYNC_TEST_TIMEOUT,
  );

  it(
    "a rewrite that lands while another machine's push of an edit to the purged memory is on its way: that push is refused and the edit purged, not written back",
    async () => {
      const [a, b] = worlds.three();
      const secret = await remember(a, 'The backup bucket is named saffron-kiln-4417.');
      await a.sync();
      await b.sync();
      await b.with((opened) =>
        opened.engram.update(secret.id, { content: 'The backup bucket is named cobalt-otter-6603.' }),
      );
      const other = await remember(b, 'Backups are kept for ninety days.');
      expect(copiesOf(['saffron-kiln'], []).length).toBeGreaterThan(0);
      expect((await get(b, secret.id))?.content).toContain('cobalt-otter');
      await a.with((opened) => opened.engram.purge(secret.id));
      const done = armInterleavedSync(a);
      const report = synced(await b.sync());
      expect(existsSync(done)).toBe(true);
      expect(report.attempts).toBeGreaterThan(1);
      expect(report.pulled.purged).toBe(1);
      synced(await a.sync());
      expect(copiesOf(['saffron-kiln', 'cobalt-otter'], [a, b])).toEqual([]);
      for (const machine of [a, b]) {
        expect(await get(machine, secret.id), machine.name).toBeUndefined();
        expect(await get(machine, other.id), machine.name).toBeDefined();
      }
    },
    SYNC_TEST_TIMEOUT,
  );

  it(
    'two purges of different memories racing each other both leave nothing behind',
    async () => {
      const [a, b] = worlds.three();
      const first = await remember(a, 'The staging host is velvet-ridge-1204.');
      const second = await remember(a, 'The metrics host is juniper-vortex-7788.');
      const stays = await remember(a, 'Staging resets every Sunday.');
      await a.sync();
      await b.sync();
      expect(copiesOf(['velvet-ridge', 'juniper-vortex'], []).length).toBe(2);
      await a.with((opened) => opened.engram.purge(first.id));
      await b.with((opened) => opened.engram.purge(second.id));
      armInterleavedSync(b);
      synced(await a.sync());
      synced(await b.sync());
      synced(await a.sync());
      expect(copiesOf(['velvet-ridge', 'juniper-vortex'], [a, b])).toEqual([]);
      for (const machine of [a, b]) {
        expect(await get(machine, first.id)).toBeUndefined();
        expect(await get(machine, second.id)).toBeUndefined();
        expect(await get(machine, stays.id)).toBeDefined();
      }
    },
    SYNC_TEST_TIMEOUT,
  );
});
