import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqliteMemoryStore } from '../../../src/adapters/sqlite/sqlite-memory-store.js';
import { Engram } from '../../../src/engram.js';
import { startServer, type RunningServer } from '../../../src/surfaces/http/http-server.js';
import { MEMORY_FILE_TOOL_NAMES } from '../../support/mcp-invalid-params.js';
import { useTemporaryFolder } from '../../support/per-test.js';
import { connectMcpOverHttp } from '../../support/mcp-http-client.js';

const PROJECT_A = 'project:github.com/acme/alpha';
const PROJECT_B = 'project:github.com/acme/bravo';
const TOOL_NAMES = ['memory_forget', 'memory_get', 'memory_list', 'memory_save', 'memory_search', 'memory_update'];

const directory = useTemporaryFolder('engram-mcp-');

function text(result: unknown): string {
  const content = (result as CallToolResult).content;
  return content.map((part) => (part.type === 'text' ? part.text : '')).join('\n');
}

async function call(client: Client, name: string, args: Record<string, unknown>): Promise<CallToolResult> {
  return (await client.callTool({ name, arguments: args })) as CallToolResult;
}

function expectToolError(result: CallToolResult, code: string): void {
  expect(result.isError, text(result)).toBe(true);
  expect(text(result).startsWith(`${code}: `), text(result)).toBe(true);
  expect(text(result)).not.toMatch(/\bat .+\.(?:ts|js):\d+/);
}

/** The same behaviour, whatever the transport: confinement, every tool's round trip, the index. */
function describeMemoryTools(
  connect: () => Promise<{ client: Client; store: SqliteMemoryStore; scopes: { own: string; foreign: string } }>,
): void {
  let client: Client;
  let store: SqliteMemoryStore;
  let own: string;
  let foreign: string;
  let foreignId: string;

  beforeAll(async () => {
    ({
      client,
      store,
      scopes: { own, foreign },
    } = await connect());
    foreignId = (await store.list({ scopes: [foreign] }))[0]!.id;
  });

  async function foreignState(): Promise<string> {
    return JSON.stringify(await store.list({ scopes: [foreign], archived: 'include', invalid: 'include' }));
  }

  it('lists the six tools with descriptions and input schemas, and the index resource', async () => {
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual([...TOOL_NAMES, ...MEMORY_FILE_TOOL_NAMES].sort());
    for (const tool of tools) {
      expect(tool.description!.length).toBeGreaterThan(40);
      expect(tool.inputSchema.type).toBe('object');
    }
    const save = tools.find((tool) => tool.name === 'memory_save')!;
    expect(save.inputSchema.required).toEqual(['content']);
    expect(tools.find((tool) => tool.name === 'memory_search')!.annotations?.readOnlyHint).toBe(true);
    const { resources } = await client.listResources();
    expect(resources).toEqual([
      expect.objectContaining({ uri: 'memory://index', name: 'memory-index', mimeType: 'text/markdown' }),
    ]);
  });

  it('memory_save stores in the first scope by default, or a named allowed scope', async () => {
    const saved = await call(client, 'memory_save', {
      content: 'The alpha service is deployed with Terraform on AWS.',
      type: 'project',
      name: 'alpha-deploys',
      importance: 0.9,
    });
    expect(saved.isError).toBeFalsy();
    const memory = (saved.structuredContent as any).memory;
    expect(memory).toMatchObject({ scope: own, type: 'project', name: 'alpha-deploys', importance: 0.9 });
    expect(text(saved)).toContain(memory.id);
    expect(await store.get(memory.id)).toMatchObject({
      content: 'The alpha service is deployed with Terraform on AWS.',
    });

    const global = await call(client, 'memory_save', {
      content: 'The user writes commit messages in English.',
      type: 'user',
      scope: 'global',
    });
    expect((global.structuredContent as any).memory.scope).toBe('global');
  });

  it('memory_search finds memories of the allowed scopes only', async () => {
    const found = await call(client, 'memory_search', { query: 'how is alpha deployed?' });
    expect(found.isError).toBeFalsy();
    const memories = (found.structuredContent as any).memories;
    expect(memories[0]).toMatchObject({ name: 'alpha-deploys', scope: own });
    expect(memories[0].score).toBeGreaterThan(0);
    expect(text(found)).toContain('Terraform');

    const secret = await call(client, 'memory_search', { query: 'bravo codename bluebird flyio deploys' });
    expect(text(secret)).not.toContain('Bluebird');
    expect((secret.structuredContent as any).memories.every((entry: any) => entry.scope !== foreign)).toBe(true);

    const hostile = await call(client, 'memory_search', { query: '"foo AND (' });
    expect(hostile.isError).toBeFalsy();
  });

  it('memory_search shows what was true then with asOf or includeInvalid, and refuses a bad date', async () => {
    const older = await call(client, 'memory_save', {
      content: 'The nightly export job writes CSV files to the archive.',
    });
    const newer = await call(client, 'memory_save', {
      content: 'The nightly export job writes Parquet files to the archive now.',
    });
    const olderId = (older.structuredContent as any).memory.id;
    const newerId = (newer.structuredContent as any).memory.id;
    await store.invalidate(olderId, { supersededBy: newerId }, { actor: 'test' });
    const ids = (result: CallToolResult): string[] =>
      (result.structuredContent as any).memories.map((entry: any) => entry.id);
    const query = 'nightly export job archive files';
    expect(ids(await call(client, 'memory_search', { query }))).not.toContain(olderId);
    const all = await call(client, 'memory_search', { query, includeInvalid: true });
    expect(all.isError, text(all)).toBeFalsy();
    expect(ids(all)).toEqual(expect.arrayContaining([olderId, newerId]));
    expect(text(all)).toContain('superseded by');
    const later = await call(client, 'memory_search', { query, asOf: '2999-12-31' });
    expect(ids(later)).toContain(newerId);
    expect(ids(later)).not.toContain(olderId);
    const before = JSON.stringify(await store.stats());
    for (const asOf of ['2026-02-30', 'yesterday', '9 March 2026', 'x'.repeat(100), 42]) {
      // The SDK checks the schema before our code runs: an isError result (or, for a stricter server, -32602).
      const refused = await call(client, 'memory_search', { query, asOf }).catch((error: { code?: number }) => error);
      if ('code' in refused && refused.code !== undefined) expect(refused.code).toBe(-32602);
      else expect((refused as CallToolResult).isError).toBe(true);
    }
    expect(JSON.stringify(await store.stats())).toBe(before);
  });

  it('memory_get reads a memory in full; one of another project does not exist', async () => {
    const [memory] = await store.list({ scopes: [own] });
    const got = await call(client, 'memory_get', { id: memory!.id });
    expect((got.structuredContent as any).memory.id).toBe(memory!.id);
    expect(text(got)).toContain(memory!.content);

    expectToolError(await call(client, 'memory_get', { id: foreignId }), 'NOT_FOUND');
    expectToolError(await call(client, 'memory_get', { id: 'mem_nothing' }), 'NOT_FOUND');
    expectToolError(await call(client, 'memory_get', { id: '../../etc/passwd' }), 'NOT_FOUND');
  });

  it("memory_update changes fields; another project's memory is not found and stays unchanged", async () => {
    const [memory] = await store.list({ scopes: [own] });
    const updated = await call(client, 'memory_update', {
      id: memory!.id,
      importance: 0.3,
      description: 'Changed through MCP',
    });
    expect((updated.structuredContent as any).memory).toMatchObject({
      importance: 0.3,
      description: 'Changed through MCP',
    });
    expect((await store.history(memory!.id)).at(-1)).toMatchObject({ action: 'update' });

    const before = await foreignState();
    expectToolError(await call(client, 'memory_update', { id: foreignId, content: 'Hijacked.' }), 'NOT_FOUND');
    expectToolError(await call(client, 'memory_update', { id: memory!.id }), 'INVALID_INPUT');
    expectToolError(await call(client, 'memory_update', { id: memory!.id, content: 'bell \u0007' }), 'INVALID_INPUT');
    expect(await foreignState()).toBe(before);
  });

  it('memory_forget with purge erases the memory and its history (also after a hard delete); never across projects', async () => {
    const saved = (await call(client, 'memory_save', { content: 'Private: the user sees Dr. Zqxvortex on Fridays.' }))
      .structuredContent as any;
    await call(client, 'memory_update', { id: saved.memory.id, importance: 0.2 });
    const purged = await call(client, 'memory_forget', { id: saved.memory.id, purge: true });
    expect(purged.isError, text(purged)).toBeFalsy();
    expect(purged.structuredContent).toMatchObject({ deleted: true, purged: true, historyEntriesRemoved: 2 });
    expect(await store.get(saved.memory.id)).toBeUndefined();
    expect(
      (await store.history(saved.memory.id)).map(({ action, before, after }) => ({ action, before, after })),
    ).toEqual([{ action: 'purge', before: null, after: null }]);
    expectToolError(await call(client, 'memory_forget', { id: saved.memory.id, purge: true }), 'NOT_FOUND');

    const deleted = (await call(client, 'memory_save', { content: 'Private: the user banks with Zqxbank.' }))
      .structuredContent as any;
    await call(client, 'memory_forget', { id: deleted.memory.id, hard: true });
    const purgedAfterDelete = await call(client, 'memory_forget', { id: deleted.memory.id, purge: true });
    expect(purgedAfterDelete.structuredContent).toMatchObject({ purged: true, memoryRemoved: false });
    expect(JSON.stringify(await store.history(deleted.memory.id))).not.toContain('Zqxbank');

    const before = await foreignState();
    expectToolError(await call(client, 'memory_forget', { id: foreignId, purge: true }), 'NOT_FOUND');
    expect(await foreignState()).toBe(before);
    expect((await store.history(foreignId)).map((entry) => entry.action)).not.toContain('purge');
  });

  it('memory_forget archives by default and deletes with hard; never across projects', async () => {
    const saved = (await call(client, 'memory_save', { content: 'Temporary: the demo runs on port 4000.' }))
      .structuredContent as any;
    const archived = await call(client, 'memory_forget', { id: saved.memory.id });
    expect(archived.structuredContent).toMatchObject({ deleted: false, memory: { archived: true } });
    expect((await store.get(saved.memory.id))!.archived).toBe(true);
    const deleted = await call(client, 'memory_forget', { id: saved.memory.id, hard: true });
    expect(deleted.structuredContent).toMatchObject({ deleted: true });
    expect(await store.get(saved.memory.id)).toBeUndefined();

    const before = await foreignState();
    expectToolError(await call(client, 'memory_forget', { id: foreignId, hard: true }), 'NOT_FOUND');
    expectToolError(await call(client, 'memory_forget', { id: foreignId }), 'NOT_FOUND');
    expect(await foreignState()).toBe(before);
  });

  it('memory_list lists the allowed scopes, filtered by type, scope and archived', async () => {
    const listed = await call(client, 'memory_list', {});
    const memories = (listed.structuredContent as any).memories as any[];
    expect(memories.length).toBeGreaterThan(1);
    expect(new Set(memories.map((memory) => memory.scope))).toEqual(new Set([own, 'global']));
    expect(text(listed)).not.toContain(foreignId);

    const users = (await call(client, 'memory_list', { type: 'user' })).structuredContent as any;
    expect(users.memories.every((memory: any) => memory.type === 'user')).toBe(true);
    const globalOnly = (await call(client, 'memory_list', { scope: 'global' })).structuredContent as any;
    expect(globalOnly.memories.every((memory: any) => memory.scope === 'global')).toBe(true);
    const paged = (await call(client, 'memory_list', { limit: 1 })).structuredContent as any;
    expect(paged.memories).toHaveLength(1);
    expect(paged.total).toBe(memories.length);
  });

  it('refuses scopes outside its own, and bad arguments, as isError results that change nothing', async () => {
    const before = JSON.stringify(await store.stats());
    for (const scope of [foreign, 'user:someone', 'team:red']) {
      expectToolError(await call(client, 'memory_save', { content: 'Planted.', scope }), 'INVALID_SCOPE');
      expectToolError(await call(client, 'memory_search', { query: 'deploys', scope }), 'INVALID_SCOPE');
      expectToolError(await call(client, 'memory_list', { scope }), 'INVALID_SCOPE');
    }
    expectToolError(await call(client, 'memory_save', { content: 'x'.repeat(70 * 1024) }), 'PAYLOAD_TOO_LARGE');
    expectToolError(await call(client, 'memory_save', { content: 'escape \u001b[2J' }), 'INVALID_INPUT');
    expectToolError(await call(client, 'memory_save', { content: 'ok', name: '../../etc' }), 'INVALID_INPUT');
    // Schema violations are caught by the SDK before our code runs; still an isError result.
    const importance = await call(client, 'memory_save', { content: 'Importance seven.', importance: 7 });
    expect(importance.isError).toBe(true);
    expect(text(importance)).toMatch(/importance/);
    expect(JSON.stringify(await store.stats())).toBe(before);
  });

  it('serves MEMORY.md for its scopes as the index resource', async () => {
    const result = await client.readResource({ uri: 'memory://index' });
    const [content] = result.contents;
    expect(content).toMatchObject({ uri: 'memory://index', mimeType: 'text/markdown' });
    const index = (content as { text: string }).text;
    expect(index.startsWith('# Memory index\n')).toBe(true);
    expect(index).toContain('[alpha-deploys](alpha-deploys.md)');
    expect(index).not.toMatch(/bravo|bluebird/i);
  });
}

async function seed(store: SqliteMemoryStore, own: string, foreign: string): Promise<void> {
  await store.create(
    { scope: own, content: 'The alpha database is PostgreSQL 15.', type: 'project', name: 'alpha-database' },
    { actor: 'test' },
  );
  await store.create(
    { scope: 'global', content: 'The user prefers tabs over spaces.', type: 'user', name: 'tabs' },
    { actor: 'test' },
  );
  await store.create(
    {
      scope: foreign,
      content: 'Bravo deploys with Fly.io; codename Bluebird.',
      type: 'project',
      name: 'bravo-bluebird',
    },
    { actor: 'test' },
  );
}

describe('MCP over Streamable HTTP (/mcp)', () => {
  let store: SqliteMemoryStore;
  let server: RunningServer;
  let client: Client;

  describeMemoryTools(async () => {
    store = new SqliteMemoryStore({ path: join(directory(), 'http.db') });
    await store.open();
    await seed(store, PROJECT_A, PROJECT_B);
    const engram = new Engram({ store, defaultScope: PROJECT_A });
    server = await startServer({
      engram,
      host: '127.0.0.1',
      port: 0,
      token: 'mcp-test-token',
      maxBodyBytes: 1024 * 1024,
      version: '1.2.3',
      mcpScopes: [PROJECT_A, 'global'],
    });
    client = await connectMcpOverHttp(server.url, { token: 'mcp-test-token' });
    expect(client.getServerVersion()).toMatchObject({ name: 'engram', version: '1.2.3' });
    return { client, store, scopes: { own: PROJECT_A, foreign: PROJECT_B } };
  });

  it('refuses a client without the token', async () => {
    const stranger = new Client({ name: 'stranger', version: '1.0.0' });
    await expect(stranger.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`)))).rejects.toThrow();
  });

  afterAll(async () => {
    await client?.close();
    await server?.close();
    await store?.close();
  });
});

describe('MCP over stdio (engram mcp)', () => {
  const home = (): string => join(directory(), 'stdio-home');
  const own = 'project:stdio-test';
  let client: Client;
  let transport: StdioClientTransport;
  let stderr = '';
  let store: SqliteMemoryStore;

  describeMemoryTools(async () => {
    // Seed the database the child process will open, then let the child own it while it runs.
    const seeding = new SqliteMemoryStore({ path: join(home(), 'engram.db') });
    await seeding.open();
    await seed(seeding, own, PROJECT_B);
    await seeding.close();

    transport = new StdioClientTransport({
      command: process.execPath,
      args: [fileURLToPath(new URL('../../fixtures/stdio-mcp.mjs', import.meta.url))],
      cwd: directory(),
      env: { ...getDefaultEnvironment(), ENGRAM_HOME: home(), ENGRAM_PROJECT: 'stdio-test' },
      stderr: 'pipe',
    });
    transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    client = new Client({ name: 'engram-test', version: '1.0.0' });
    await client.connect(transport);
    // The test reads the same file alongside (WAL allows it) to check what the tools did.
    store = new SqliteMemoryStore({ path: join(home(), 'engram.db') });
    await store.open();
    return { client, store, scopes: { own, foreign: PROJECT_B } };
  });

  it('closes its store and exits when stdin ends', async () => {
    await client.close();
    expect(stderr).toContain('stdio fixture: store closed');
    expect(stderr).not.toMatch(/Error|at .+\.js:\d+/);
    const memories = await store.list({ scopes: [own, 'global'] });
    expect(memories.some((memory) => memory.name === 'alpha-deploys')).toBe(true);
  });

  afterAll(async () => {
    await client?.close();
    await store?.close();
  });
});
