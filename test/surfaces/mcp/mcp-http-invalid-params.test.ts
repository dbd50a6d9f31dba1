import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectMcpOverHttp } from '../../support/mcp-http-client.js';
import { expectEveryToolRefusesBadParams } from '../../support/mcp-invalid-params.js';
import { startViewerFixture, type ViewerFixture } from '../../support/viewer-support.js';

// Issue 17 item 14: MCP over HTTP (POST /mcp) answers params that do not fit the method with
// -32602 (Invalid params), as `engram mcp` over stdio does; the SDK alone answers -32603.

const TOKEN = 'mcp-http-params-token-0123456789';
let fixture: ViewerFixture;
let client: Client;

beforeAll(async () => {
  fixture = await startViewerFixture({ token: TOKEN });
  client = await connectMcpOverHttp(fixture.server.url, { token: TOKEN, name: 'engram-http-params-test' });
});

afterAll(async () => {
  await client?.close();
  await fixture?.close();
});

/** One raw JSON-RPC POST to /mcp, as a client that does not use the SDK would send it. */
async function post(body: unknown): Promise<{ status: number; json: any }> {
  const response = await fetch(`${fixture.server.url}/mcp`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${TOKEN}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, json: text === '' ? undefined : JSON.parse(text) };
}

describe('MCP over HTTP: invalid params', () => {
  it('every tool answers arguments that are not an object with -32602, and wrong argument types name -32602', async () => {
    await expectEveryToolRefusesBadParams(client);
  });

  it('raw requests: params of the wrong shape are -32602 with the request id; a good request in the same server still works', async () => {
    const cases: Array<[unknown, string]> = [
      [{ jsonrpc: '2.0', id: 6, method: 'tools/list', params: [1] }, 'params an array'],
      [{ jsonrpc: '2.0', id: 7, method: 'tools/call' }, 'tools/call without params'],
      [{ jsonrpc: '2.0', id: 'x', method: 'tools/call', params: { name: 5 } }, 'tool name a number'],
      [{ jsonrpc: '2.0', id: 9, method: 'resources/read', params: { uri: 42 } }, 'uri a number'],
      [{ jsonrpc: '2.0', id: 10, method: 'tools/call', params: 'memory_list' }, 'params a string'],
    ];
    for (const [body, label] of cases) {
      const { status, json } = await post(body);
      expect(json, label).toMatchObject({
        jsonrpc: '2.0',
        id: (body as { id: unknown }).id,
        error: { code: -32602 },
      });
      expect(json.error.message, label).toMatch(/Invalid params/);
      expect(status, label).toBe(200);
    }
    const good = await post({ jsonrpc: '2.0', id: 11, method: 'tools/list' });
    expect(good.json.result.tools.length).toBeGreaterThan(5);
  });

  it('a batch with one bad request answers that one with -32602 and the others normally', async () => {
    const { json } = await post([
      { jsonrpc: '2.0', id: 21, method: 'tools/list', params: [1] },
      { jsonrpc: '2.0', id: 22, method: 'ping' },
    ]);
    const answers = Array.isArray(json) ? json : [json];
    const byId = (id: number) => answers.find((answer: { id: unknown }) => answer.id === id);
    expect(byId(21)?.error?.code).toBe(-32602);
    expect(answers.every((answer: { error?: { code: number } }) => answer.error?.code !== -32603)).toBe(true);
  });
});
