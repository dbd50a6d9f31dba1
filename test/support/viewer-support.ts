import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { SqliteMemoryStore } from '../../src/adapters/sqlite/sqlite-memory-store.js';
import { Engram } from '../../src/engram.js';
import { startServer, type RunningServer } from '../../src/surfaces/http/http-server.js';

/** Debian's Chromium, which the viewer's tests and bench drive (CI installs it). */
export const CHROMIUM_PATH = '/usr/bin/chromium';
export const chromiumAvailable = existsSync(CHROMIUM_PATH);

export const VIEWER_PROJECT = 'project:github.com/acme/app';

/** Chromium as the tests run it: no sandbox (containers), and nothing that phones home. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

export interface ViewerFixture {
  directory: string;
  store: SqliteMemoryStore;
  engram: Engram;
  server: RunningServer;
  close(): Promise<void>;
}

/** A SQLite store in a temporary folder and the HTTP service over it, on loopback unless `host` says otherwise. */
export async function startViewerFixture(options: { host?: string; token?: string } = {}): Promise<ViewerFixture> {
  const directory = mkdtempSync(join(tmpdir(), 'engram-viewer-'));
  const store = new SqliteMemoryStore({ path: join(directory, 'engram.db') });
  await store.open();
  const engram = new Engram({
    store,
    defaultScope: VIEWER_PROJECT,
    readScopes: [VIEWER_PROJECT, 'global'],
    onWarning: () => undefined,
  });
  const server = await startServer({
    engram,
    host: options.host ?? '127.0.0.1',
    port: 0,
    maxBodyBytes: 1 << 20,
    version: '0.0.0-viewer-test',
    mcpScopes: [VIEWER_PROJECT, 'global'],
    ...(options.token !== undefined && { token: options.token }),
    log: () => undefined,
  });
  return {
    directory,
    store,
    engram,
    server,
    async close() {
      await server.close();
      await store.close();
      rmSync(directory, { recursive: true, force: true });
    },
  };
}

/** Everything the service could change in the fixture's store, as JSON to compare: the stats, every memory of the project and global, every job. */
export async function fixtureSnapshot(fixture: ViewerFixture): Promise<string> {
  const { store } = fixture;
  const memories = await store.list({ scopes: [VIEWER_PROJECT, 'global'], archived: 'include', invalid: 'include' });
  return JSON.stringify({ stats: await store.stats(), memories, jobs: await store.jobs.list({}) });
}

/**
 * Watches a page for what the tests forbid: console errors, uncaught exceptions, and any request
 * to a host other than loopback.
 */
export function watchPage(page: Page): { problems: string[] } {
  const problems: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console error: ${message.text()}`);
  });
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  page.on('request', (request) => {
    const url = new URL(request.url());
    if (url.protocol === 'data:' || url.protocol === 'about:') return;
    if (!['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname))
      problems.push(`request left loopback: ${request.url()}`);
  });
  return { problems };
}
