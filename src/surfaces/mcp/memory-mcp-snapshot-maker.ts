import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/sdk/types.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { SqliteMemoryStore } from '../../adapters/sqlite/sqlite-memory-store.js';
import { Engram } from '../../engram.js';
import type { Scope } from '../../memory/scope.js';
import { createMemoryMcpServer } from './memory-mcp-server.js';
import type { MemoryMcpSnapshot } from './memory-mcp-snapshot-types.js';

// What the memory MCP server answers before any tool runs, read off the real server (the SDK's
// McpServer over an in-memory store): `engram mcp` gives these answers itself while the SDK and the
// store load (stdio-mcp-server.ts). scripts/write-mcp-snapshot.ts writes them into
// memory-mcp-snapshot-data.ts; test/surfaces/mcp/mcp-fast-start.test.ts checks they still match.

/** Request methods an MCP client may send (the spec's client requests): the snapshot notes which the server handles. */
const CLIENT_REQUEST_METHODS = [
  'initialize',
  'ping',
  'completion/complete',
  'logging/setLevel',
  'prompts/get',
  'prompts/list',
  'resources/list',
  'resources/templates/list',
  'resources/read',
  'resources/subscribe',
  'resources/unsubscribe',
  'tools/call',
  'tools/list',
  'tasks/get',
  'tasks/result',
  'tasks/list',
  'tasks/cancel',
] as const;

/** The answers of the real server for these scopes and version, recorded on the wire. */
export async function recordMemoryMcpAnswers(scopes: readonly Scope[], version: string): Promise<MemoryMcpSnapshot> {
  const store = new SqliteMemoryStore({ path: ':memory:' });
  await store.open();
  const engram = new Engram({ store, defaultScope: scopes[0]!, readScopes: [...scopes] });
  const server = createMemoryMcpServer(engram, { scopes, version, log: () => undefined });
  const [client, serverSide] = InMemoryTransport.createLinkedPair();
  const answers = new Map<string | number, JSONRPCMessage>();
  client.onmessage = (message) => {
    if ('id' in message && message.id !== undefined) answers.set(message.id, message);
  };
  await server.connect(serverSide);
  await client.start();
  let next = 0;
  const request = async (method: string, params?: Record<string, unknown>): Promise<Record<string, unknown>> => {
    const id = `snapshot-${next++}`;
    await client.send({ jsonrpc: '2.0', id, method, ...(params && { params }) } as JSONRPCMessage);
    for (let turn = 0; !answers.has(id) && turn < 1_000; turn += 1)
      await new Promise((resolve) => setImmediate(resolve));
    const answer = answers.get(id) as Record<string, unknown> | undefined;
    if (!answer) throw new Error(`The MCP server did not answer ${method}.`);
    return answer;
  };
  try {
    const initialize = await request('initialize', {
      protocolVersion: LATEST_PROTOCOL_VERSION,
      capabilities: {},
      clientInfo: { name: 'engram-snapshot', version },
    });
    await client.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    const result = (answer: Record<string, unknown>): Record<string, unknown> => {
      if (!('result' in answer)) throw new Error(`Expected a result, got ${JSON.stringify(answer)}`);
      return answer.result as Record<string, unknown>;
    };
    const methods: string[] = [];
    for (const method of CLIENT_REQUEST_METHODS) {
      const answer = await request(method);
      if ((answer.error as { code?: number } | undefined)?.code !== -32601) methods.push(method);
    }
    const initialized = result(initialize);
    return {
      protocolVersions: [...SUPPORTED_PROTOCOL_VERSIONS],
      latestProtocolVersion: LATEST_PROTOCOL_VERSION,
      initialize: {
        capabilities: initialized.capabilities as Record<string, unknown>,
        serverInfo: initialized.serverInfo as Record<string, unknown>,
        ...(typeof initialized.instructions === 'string' && { instructions: initialized.instructions }),
      },
      lists: {
        'tools/list': result(await request('tools/list')),
        'resources/list': result(await request('resources/list')),
        'resources/templates/list': result(await request('resources/templates/list')),
      },
      methods,
    };
  } finally {
    await server.close();
    await store.close();
  }
}
