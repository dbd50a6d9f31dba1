import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startGitHttpServer } from '../support/git-http-server.js';
import { startGitDaemon } from '../support/git-daemon.js';
import { makeSyncWorld, objectsHolding, type Machine, type SyncWorld } from '../support/sync-machines.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const TRANSPORTS = {
  'git http-backend (smart HTTP)': async (root: string) => {
    const server = await startGitHttpServer(root, { receivePack: true });
    return { url: `${server.url}/remote.git`, close: () => server.close() };
  },
  'git daemon (git://)': async (root: string) => {
    const daemon = await startGitDaemon(root);
    return { url: `${daemon.url}/remote.git`, close: () => daemon.close() };
  },
};

describe('sync over a real git server on loopback', () => {
  for (const [name, start] of Object.entries(TRANSPORTS)) {
    it(`${name}: machines converge, and a purge leaves no reachable copy on the server`, async () => {
      // The world's bare repository is served; the machines reach it only through the server.
      const world: SyncWorld = makeSyncWorld(2, { remote: 'placeholder' });
      cleanups.push(() => world.cleanup());
      const server = await start(world.root);
      cleanups.push(() => server.close());
      for (const machine of world.machines) machine.env.ENGRAM_SYNC_REMOTE = server.url;
      const [a, b] = world.machines as [Machine, Machine];
      const kept = await a.with((opened) => opened.engram.remember({ content: 'The office wifi is on VLAN 40.' }));
      const purged = await a.with((opened) => opened.engram.remember({ content: 'Door code is velvet-anchor-9921.' }));
      expect((await a.sync()).remotes[0]).toMatchObject({ status: 'synced', report: { pushed: { written: 2 } } });
      expect((await b.sync()).remotes[0]).toMatchObject({ status: 'synced', report: { pulled: { written: 2 } } });
      await b.with((opened) => opened.engram.update(kept.id, { importance: 0.7 }));
      await b.with((opened) => opened.engram.purge(purged.id));
      expect((await b.sync()).remotes[0]).toMatchObject({ status: 'synced', report: { historyRewritten: true } });
      expect((await a.sync()).remotes[0]).toMatchObject({ status: 'synced', report: { pulled: { purged: 1 } } });
      expect(await a.with((opened) => opened.engram.store.get(kept.id))).toMatchObject({ importance: 0.7 });
      expect(await a.with((opened) => opened.engram.store.get(purged.id))).toBeUndefined();
      expect(objectsHolding(join(world.root, 'remote.git'), 'velvet-anchor')).toEqual([]);
    }, 120_000);
  }
});
