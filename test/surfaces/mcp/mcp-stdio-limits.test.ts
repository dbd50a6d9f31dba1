import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectEveryToolRefusesBadParams, toolText } from '../../support/mcp-invalid-params.js';
import { ENGRAM_BINARY } from '../../support/cli-harness.js';
import { rawMcpSession, type RawMcpSession } from '../../support/mcp-stdio.js';

// Issue 17 item 7: `engram mcp` over stdio answers a line over 10 MB with a JSON-RPC error and
// keeps serving; params that do not fit a method are -32602 (Invalid params), never -32603.

const home = mkdtempSync(join(tmpdir(), 'engram-mcp-limits-'));
const environment = { ...getDefaultEnvironment(), ENGRAM_HOME: home, ENGRAM_PROJECT: 'mcp-limits' };
let client: Client;

beforeAll(async () => {
  client = new Client({ name: 'engram-limits-test', version: '1.0.0' });
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [ENGRAM_BINARY, 'mcp'],
      env: environment,
      stderr: 'pipe',
    }),
  );
});

afterAll(async () => {
  await client?.close();
  rmSync(home, { recursive: true, force: true });
});

/** Writes raw lines to a fresh `engram mcp` and collects the answers until stdin ends and it exits. */
function rawSession(lines: ReadonlyArray<string | Buffer>): Promise<RawMcpSession> {
  return rawMcpSession(environment, lines);
}

const INITIALIZE = `${JSON.stringify({
  jsonrpc: '2.0',
  id: 'init',
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
})}\n${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`;

describe('engram mcp over stdio: oversized lines and invalid params', () => {
  it('answers a tool call over 10 MB with -32600 and serves the next calls', async () => {
    const huge = client.callTool({ name: 'memory_save', arguments: { content: 'x'.repeat(11 * 1024 * 1024) } });
    await expect(huge).rejects.toMatchObject({ code: -32600, message: expect.stringMatching(/over the limit/) });
    const saved = (await client.callTool({
      name: 'memory_save',
      arguments: { content: 'The user prefers tabs.' },
    })) as CallToolResult;
    expect(saved.isError, toolText(saved)).toBeFalsy();
    expect((await client.listTools()).tools.length).toBeGreaterThan(5);
  }, 60_000);

  it('every tool answers params that are not an object with -32602, and bad arguments name -32602, never -32603', async () => {
    await expectEveryToolRefusesBadParams(client);
  });

  it('raw lines: oversized without an id, not JSON, not JSON-RPC, each answered; the session goes on and exits 0', async () => {
    const oversized = Buffer.alloc(12 * 1024 * 1024, 'y');
    const { answers, code } = await rawSession([
      INITIALIZE,
      oversized,
      '\n',
      'not json at all\n',
      '{"jsonrpc":"1.0","id":5,"method":"ping"}\n',
      '{"jsonrpc":"2.0","id":6,"method":"tools/list","params":[1]}\n',
      '{"jsonrpc":"2.0","id":7,"method":"tools/call"}\n',
      '{"jsonrpc":"2.0","id":8,"method":"ping"}\n',
    ]);
    expect(code).toBe(0);
    const byId = (id: unknown) => answers.filter((answer) => answer.id === id);
    expect(byId('init')[0].result.serverInfo.name).toBe('engram');
    expect(byId(null).map((answer) => answer.error.code)).toEqual([-32600, -32700]);
    expect(byId(5)[0].error.code).toBe(-32600);
    expect(byId(6)[0].error.code).toBe(-32602);
    expect(byId(7)[0].error.code).toBe(-32602);
    expect(byId(8)[0]).toEqual({ jsonrpc: '2.0', id: 8, result: {} });
    expect(answers.every((answer) => answer.error?.code !== -32603)).toBe(true);
  }, 60_000);
});
