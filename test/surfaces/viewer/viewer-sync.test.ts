import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { OpenedEngram } from '../../../src/node/open-engram.js';
import { startServer, type RunningServer } from '../../../src/surfaces/http/http-server.js';
import { librarySyncCalls } from '../../../src/surfaces/http/http-sync-route.js';
import { syncStatus } from '../../../src/sync/node/sync-store.js';
import { makeSyncWorld, type Machine, type SyncWorld } from '../../support/sync-machines.js';
import { chromiumAvailable, launchChromium, watchPage } from '../../support/viewer-support.js';

/**
 * The viewer's Sync page in real Chromium over a machine of a real sync (two machines, a bare
 * remote): it shows the remote and a real conflict, and "Keep the other" resolves it through the
 * same library call as `engram sync resolve`. A server that does not sync answers `configured: false`.
 */

let world: SyncWorld;
let browser: Browser;
let machine: Machine;
let opened: OpenedEngram;
let server: RunningServer;
let bare: RunningServer;
let memoryId: string;

async function serve(sync: boolean): Promise<RunningServer> {
  return startServer({
    engram: opened.engram,
    host: '127.0.0.1',
    port: 0,
    maxBodyBytes: 1 << 20,
    version: '0.0.0-viewer-sync-test',
    mcpScopes: [opened.engram.defaultScope, 'global'],
    ...(sync && { sync: librarySyncCalls(opened, machine.cwd) }),
    log: () => undefined,
  });
}

describe.skipIf(!chromiumAvailable)('the viewer shows sync and resolves a conflict', () => {
  beforeAll(async () => {
    world = makeSyncWorld(2);
    const [a, b] = world.machines as [Machine, Machine];
    machine = b;
    memoryId = (await a.with((o) => o.engram.remember({ content: 'The release train leaves on Tuesdays.' }))).id;
    await a.sync();
    await b.sync();
    await a.with((o) => o.engram.update(memoryId, { content: 'The release train leaves on Wednesdays.' }));
    await a.sync();
    await new Promise((resolve) => setTimeout(resolve, 20));
    await b.with((o) => o.engram.update(memoryId, { content: 'The release train leaves on Thursdays.' }));
    await b.sync();
    opened = await b.open();
    server = await serve(true);
    bare = await serve(false);
    browser = await launchChromium();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await bare?.close();
    await opened?.close();
    world?.cleanup();
  });

  it('GET /v1/sync of a service that does not sync is 200 with configured: false; a bad resolve is a 400 that changes nothing', async () => {
    const answer = await fetch(`${bare.url}/v1/sync`);
    expect(answer.status).toBe(200);
    expect(await answer.json()).toEqual({ configured: false, remotes: [], conflicts: [], notices: [] });
    const bad = await fetch(`${server.url}/v1/sync/conflicts/${memoryId}/resolve`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ keep: 'both' }),
    });
    expect(bad.status).toBe(400);
    expect((await syncStatus({ opened, cwd: machine.cwd })).conflicts).toHaveLength(1);
  });

  it('lists the remote and the conflict, and "Keep the other" brings back the other machine\'s edit', async () => {
    const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
    const { problems } = watchPage(page);
    await page.goto(`${server.url}/#/sync`);
    await page.waitForSelector('main[data-ready="sync"]');
    const remotes = page.getByRole('list', { name: 'Remotes' });
    expect(await remotes.textContent()).toContain('Last sync');
    expect(await remotes.textContent()).toContain('0 memories held back');
    const conflict = page.locator(`li[data-conflict="${memoryId}"]`);
    const text = await conflict.textContent();
    expect(text).toContain('Thursdays');
    expect(text).toContain('Wednesdays');
    expect(text).toContain("(this machine's)");
    await conflict.getByRole('button', { name: 'Keep the other' }).click();
    await page.waitForSelector('#no-conflicts');
    expect(await page.locator('#notice').textContent()).toContain(`Resolved ${memoryId}`);
    expect((await opened.engram.store.get(memoryId))?.content).toBe('The release train leaves on Wednesdays.');
    expect((await syncStatus({ opened, cwd: machine.cwd })).conflicts).toEqual([]);
    expect(problems).toEqual([]);
    await page.close();
  });

  it('a service without a remote says so on the page', async () => {
    const page = await browser.newPage();
    const { problems } = watchPage(page);
    await page.goto(`${bare.url}/#/sync`);
    await page.waitForSelector('main[data-ready="sync"]');
    expect(await page.locator('#sync-not-configured').textContent()).toContain('engram sync --remote');
    expect(problems).toEqual([]);
    await page.close();
  });
});
