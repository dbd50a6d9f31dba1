import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordMemoryMcpAnswers } from '../../../src/surfaces/mcp/memory-mcp-snapshot-maker.js';
import { snapshotServer } from '../../../src/surfaces/mcp/memory-mcp-snapshot.js';
import type { MemoryMcpSnapshot } from '../../../src/surfaces/mcp/memory-mcp-snapshot-types.js';
import { rawMcpSession, type RawMcpSession } from '../../support/mcp-stdio.js';

// `engram mcp` gives its first answers (initialize, the lists, ping, Method not found) from the real
// server's recorded answers before the SDK and the store load. They must be the real server's, for
// any project scope; and what needs the store waits for it, or says why it cannot have it.

const SCOPES = ['project:github.com/acme/app', 'project:/home/ana/work/app@2+b;c$d'] as const;
const VERSION = '9.9.9-test';

describe('the recorded first answers are the real server’s', () => {
  it.each(SCOPES)(
    'for %s: initialize, tools/list, resources/list, resources/templates/list, ping, unknown methods',
    async (scope) => {
      const real: MemoryMcpSnapshot = await recordMemoryMcpAnswers([scope, 'global'], VERSION);
      const fast = snapshotServer({ scopes: [scope, 'global'], version: VERSION })!;
      expect(fast).toBeDefined();
      const reply = (message: object) => fast.answer({ jsonrpc: '2.0', ...message })?.reply;

      for (const [method, result] of Object.entries(real.lists))
        expect(
          reply({ id: method, method }),
          `${method} (if this fails: npx tsx scripts/write-mcp-snapshot.ts)`,
        ).toEqual({
          jsonrpc: '2.0',
          id: method,
          result,
        });
      const clientInfo = { name: 'test', version: '1' };
      for (const asked of [...real.protocolVersions, '1999-01-01'])
        expect(
          reply({ id: 1, method: 'initialize', params: { protocolVersion: asked, capabilities: {}, clientInfo } }),
        ).toEqual({
          jsonrpc: '2.0',
          id: 1,
          result: {
            protocolVersion: real.protocolVersions.includes(asked) ? asked : real.latestProtocolVersion,
            ...real.initialize,
          },
        });
      expect(reply({ id: 2, method: 'ping' })).toEqual({ jsonrpc: '2.0', id: 2, result: {} });
      for (const method of ['server/discover', 'prompts/list', 'logging/setLevel', 'completion/complete'])
        expect(real.methods).not.toContain(method);
      for (const method of ['server/discover', 'prompts/list', 'logging/setLevel'])
        expect(reply({ id: 3, method })).toEqual({
          jsonrpc: '2.0',
          id: 3,
          error: { code: -32601, message: 'Method not found' },
        });
    },
  );

  it('leaves to the real server what it cannot answer as it would: tool calls, reads, malformed requests, pages', () => {
    const fast = snapshotServer({ scopes: [SCOPES[0], 'global'], version: VERSION })!;
    for (const message of [
      { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'memory_list', arguments: {} } },
      { jsonrpc: '2.0', id: 1, method: 'resources/read', params: { uri: 'memory://index' } },
      { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: 5 } },
      { jsonrpc: '2.0', id: 1, method: 'initialize' },
      { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { cursor: 'next' } },
      { jsonrpc: '2.0', id: 1, method: 'tools/list', params: 'not an object' },
      { jsonrpc: '1.0', id: 1, method: 'tools/list' },
      { jsonrpc: '2.0', id: 1.5, method: 'ping' },
      { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1 } },
      { jsonrpc: '2.0', id: 1, result: {} },
      [{ jsonrpc: '2.0', id: 1, method: 'ping' }],
      'tools/list',
      null,
    ])
      expect(fast.answer(message), JSON.stringify(message)).toBeUndefined();
    // Another shape of scopes than `engram mcp` serves: nothing is answered from the recording.
    expect(snapshotServer({ scopes: ['global'], version: VERSION })).toBeUndefined();
    expect(snapshotServer({ scopes: ['user:ana', 'global'], version: VERSION })).toBeUndefined();
  });
});

let root: string;

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'engram-mcp-fast-'));
});

afterAll(() => {
  rmSync(root, { recursive: true, force: true });
});

/** Writes lines to a fresh `engram mcp`, ends stdin, and collects the answers until it exits. */
function session(home: string, lines: readonly object[]): Promise<RawMcpSession> {
  return rawMcpSession(
    { PATH: process.env.PATH, ENGRAM_HOME: home, ENGRAM_PROJECT: 'fast-start', ENGRAM_MODEL_PROVIDER: 'none' },
    lines.map((line) => `${JSON.stringify(line)}\n`),
  );
}

const INITIALIZE = {
  jsonrpc: '2.0',
  id: 'init',
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
};
const INITIALIZED = { jsonrpc: '2.0', method: 'notifications/initialized' };

describe('engram mcp answers before its store is open', () => {
  it('piped calls after initialize and tools/list are all answered from the store before it exits, the save kept', async () => {
    const home = join(root, 'piped');
    const { answers, code } = await session(home, [
      { jsonrpc: '2.0', id: 'discover', method: 'server/discover' },
      INITIALIZE,
      INITIALIZED,
      { jsonrpc: '2.0', id: 'list', method: 'tools/list' },
      {
        jsonrpc: '2.0',
        id: 'save',
        method: 'tools/call',
        params: { name: 'memory_save', arguments: { content: 'Deploys go out on Tuesdays.' } },
      },
    ]);
    expect(code).toBe(0);
    const byId = new Map(answers.map((answer) => [answer.id, answer]));
    expect(byId.get('discover').error.code).toBe(-32601);
    expect(byId.get('init').result.protocolVersion).toBe('2025-06-18');
    expect(byId.get('list').result.tools.map((tool: { name: string }) => tool.name)).toContain('memory_save');
    expect(byId.get('save').result.isError).toBeFalsy();
    // Exactly one answer per request: the initialize the real server was given again is not answered twice.
    expect(answers).toHaveLength(4);

    // Calls run side by side, as the SDK runs them: the next session reads what this one saved.
    const next = await session(home, [
      INITIALIZE,
      INITIALIZED,
      {
        jsonrpc: '2.0',
        id: 'search',
        method: 'tools/call',
        params: { name: 'memory_search', arguments: { query: 'when do deploys go out' } },
      },
      { jsonrpc: '2.0', id: 'index', method: 'resources/read', params: { uri: 'memory://index' } },
    ]);
    const read = new Map(next.answers.map((answer) => [answer.id, answer]));
    expect(JSON.stringify(read.get('search').result)).toContain('Deploys go out on Tuesdays.');
    expect(JSON.stringify(read.get('index').result)).toContain('deploys');
    expect(next.answers).toHaveLength(3);
  });

  it('a store that cannot open: initialize and tools/list are answered, then each call gets an error saying why, and the exit code says it failed', async () => {
    const home = join(root, 'corrupt');
    mkdirSync(home, { recursive: true });
    writeFileSync(join(home, 'engram.db'), 'this is not a SQLite database'.repeat(100));
    const { answers, code, stderr } = await session(home, [
      INITIALIZE,
      INITIALIZED,
      { jsonrpc: '2.0', id: 'list', method: 'tools/list' },
      { jsonrpc: '2.0', id: 'call', method: 'tools/call', params: { name: 'memory_list', arguments: {} } },
    ]);
    const byId = new Map(answers.map((answer) => [answer.id, answer]));
    expect(byId.get('init').result.serverInfo.name).toBe('engram');
    expect(byId.get('list').result.tools.length).toBeGreaterThan(5);
    expect(byId.get('call').error).toMatchObject({
      code: -32603,
      message: expect.stringMatching(/not an engram database/),
    });
    expect(stderr).toMatch(/could not start its memory/);
    expect(code).not.toBe(0);
  });
});
