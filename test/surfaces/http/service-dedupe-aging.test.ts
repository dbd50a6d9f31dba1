import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqliteMemoryStore } from '../../../src/adapters/sqlite/sqlite-memory-store.js';
import { Engram } from '../../../src/engram.js';
import type { AgingReport } from '../../../src/maintenance/age-memories.js';
import type { IntervalTimers } from '../../../src/maintenance/aging-schedule.js';
import { startServer, type RunningServer } from '../../../src/surfaces/http/http-server.js';
import { runServeCommand } from '../../../src/surfaces/http/http-service.js';
import { serveInProcess } from '../../support/serve-in-process.js';
import { useTemporaryFolder } from '../../support/per-test.js';

const PROJECT = 'project:github.com/acme/app';
const DAY = 86_400_000;
const NOW = Date.parse('2025-06-01T12:00:00.000Z');

const directory = useTemporaryFolder('engram-service-');

async function until(condition: () => boolean, what: string): Promise<void> {
  for (let attempt = 0; attempt < 500; attempt += 1) {
    if (condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe('POST /v1/memories and memory_save with dedupe', () => {
  let store: SqliteMemoryStore;
  let server: RunningServer;

  beforeAll(async () => {
    store = new SqliteMemoryStore({ path: join(directory(), 'http.db') });
    await store.open();
    const engram = new Engram({ store, defaultScope: PROJECT, readScopes: [PROJECT, 'global'] });
    server = await startServer({
      engram,
      host: '127.0.0.1',
      port: 0,
      maxBodyBytes: 1 << 20,
      version: 'test',
      mcpScopes: [PROJECT, 'global'],
      log: () => undefined,
    });
  });

  afterAll(async () => {
    await server.close();
    await store.close();
  });

  const post = (body: unknown) =>
    fetch(`${server.url}/v1/memories`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });

  async function state(): Promise<string> {
    const memories = await store.list({ scopes: [PROJECT, 'global'], archived: 'include', invalid: 'include' });
    return JSON.stringify({ memories, history: await Promise.all(memories.map((memory) => store.history(memory.id))) });
  }

  it('answers 201 created, then 200 merged for a near-duplicate, and 201 again with dedupe: false', async () => {
    const created = await post({ content: 'The user prefers dark mode in every editor.', importance: 0.4 });
    expect(created.status).toBe(201);
    const first = (await created.json()) as any;
    expect(first).toMatchObject({ action: 'created', warnings: [] });
    expect(created.headers.get('location')).toBe(`/v1/memories/${first.memory.id}`);

    const merged = await post({ content: 'The user prefers dark mode in every editor they use.', importance: 0.6 });
    expect(merged.status).toBe(200);
    const body = (await merged.json()) as any;
    expect(body).toMatchObject({
      action: 'merged',
      mergedInto: first.memory.id,
      method: 'lexical',
      memory: { id: first.memory.id, importance: 0.6 },
    });
    expect(body.changeId).toMatch(/^chg_/);
    expect(merged.headers.get('content-location')).toBe(`/v1/memories/${first.memory.id}`);

    const forced = await post({ content: 'The user prefers dark mode in every editor they use.', dedupe: false });
    expect(forced.status).toBe(201);
    expect(((await forced.json()) as any).memory.id).not.toBe(first.memory.id);
  });

  it('refuses a dedupe field that is not a boolean, and changes nothing', async () => {
    await post({ content: 'Pipeline bugs are tracked in Linear project INGEST.' });
    const before = await state();
    for (const dedupe of ['false', 0, null, { off: true }, []]) {
      const response = await post({ content: 'Pipeline bugs are tracked in Linear project INGEST!', dedupe });
      expect(response.status, JSON.stringify(dedupe)).toBe(400);
      expect(((await response.json()) as any).error).toMatchObject({ code: 'INVALID_INPUT' });
    }
    const proto = await post('{"content": "Pipeline bugs are tracked in Linear.", "__proto__": {"dedupe": false}}');
    expect(proto.status).toBe(400);
    expect(await state()).toBe(before);
  });

  it('memory_save says when it updated an existing memory', async () => {
    const client = new Client({ name: 'engram-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`)));
    try {
      const save = async (content: string) =>
        (await client.callTool({ name: 'memory_save', arguments: { content } })) as CallToolResult;
      const first = await save('Staging runs on Kubernetes in eu-west-1.');
      expect(first.structuredContent).toMatchObject({ action: 'created' });
      const again = await save('In eu-west-1, staging runs on Kubernetes.');
      const id = (first.structuredContent as any).memory.id;
      expect(again.structuredContent).toMatchObject({ action: 'merged', mergedInto: id });
      expect((again.content[0] as { text: string }).text).toMatch(new RegExp(`^Updated existing memory \`${id}\``));
    } finally {
      await client.close();
    }
  });
});

describe('the service ages memories daily', () => {
  it('runs aging at start and on each tick of its timer, in every scope, and stops the timer on shutdown', async () => {
    const home = join(directory(), 'serve-home');
    let clock = new Date(NOW - 100 * DAY);
    const seed = new SqliteMemoryStore({ path: join(home, 'engram.db'), now: () => clock });
    await seed.open();
    const oldGlobal = await seed.create(
      { scope: 'global', content: 'An old global note.', importance: 0.2 },
      { actor: 'seed' },
    );
    const oldElsewhere = await seed.create(
      { scope: 'project:elsewhere', content: 'An old note of another project.', importance: 0.2 },
      { actor: 'seed' },
    );
    await seed.create({ scope: 'global', content: 'An old but important note.', importance: 0.9 }, { actor: 'seed' });
    await seed.close();
    clock = new Date(NOW);

    let tick: (() => void) | undefined;
    let interval = 0;
    let cleared = false;
    const timers: IntervalTimers = {
      setInterval(callback, milliseconds) {
        tick = callback;
        interval = milliseconds;
        return 'aging-timer';
      },
      clearInterval(handle) {
        if (handle === 'aging-timer') cleared = true;
      },
    };
    const reports: AgingReport[] = [];
    const serving = await serveInProcess({
      cwd: directory(),
      env: { ENGRAM_HOME: home, ENGRAM_PORT: '0', ENGRAM_HOST: '127.0.0.1', ENGRAM_PROJECT: 'aging-test' },
      now: () => clock,
      agingTimers: timers,
      onAging: (report) => reports.push(report),
    });
    const url = serving.url;

    await until(() => reports.length === 1, 'the aging run at start');
    expect(interval).toBe(24 * 3_600_000);
    expect(reports[0]!.scopes).toBe('all');
    expect(reports[0]!.archived).toEqual([oldGlobal.id, oldElsewhere.id]);
    expect(serving.stderr()).toContain('aging archived 2 memories');

    // A memory written "100 days ago" through the service, then a day passes: the next tick archives it.
    clock = new Date(NOW - 100 * DAY);
    const response = await fetch(`${url}/v1/memories`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ content: 'Written long ago.', importance: 0.1, scope: 'global' }),
    });
    const written = ((await response.json()) as any).memory;
    clock = new Date(NOW + DAY);
    tick!();
    await until(() => reports.length === 2, 'the second aging run');
    expect(reports[1]!.archived).toEqual([written.id]);
    const stats = (await (await fetch(`${url}/v1/stats?scope=global,project:elsewhere`)).json()) as any;
    expect(stats.stats.archived).toBe(3);

    await serving.stop();
    expect(cleared).toBe(true);
    tick!();
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(reports).toHaveLength(2);
  });

  it('does not age at all when aging.intervalHours is 0', async () => {
    const home = join(directory(), 'serve-off');
    let started = false;
    const controller = new AbortController();
    const serving = runServeCommand({
      cwd: directory(),
      env: { ENGRAM_HOME: home, ENGRAM_PORT: '0', ENGRAM_HOST: '127.0.0.1', ENGRAM_PROJECT: 'aging-off' },
      flags: { 'aging.intervalHours': '0' },
      agingTimers: { setInterval: () => ((started = true), 'x'), clearInterval: () => undefined },
      stdout: new PassThrough(),
      stderr: new PassThrough(),
      signal: controller.signal,
      onListening: () => controller.abort(),
    });
    await serving;
    expect(started).toBe(false);
  });
});
