import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

/** An SDK MCP client connected to engram's POST /mcp at `serverUrl`, with the bearer `token` when there is one. */
export async function connectMcpOverHttp(
  serverUrl: string,
  options: { token?: string; name?: string } = {},
): Promise<Client> {
  const client = new Client({ name: options.name ?? 'engram-test', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(
      new URL(`${serverUrl}/mcp`),
      options.token === undefined ? {} : { requestInit: { headers: { authorization: `Bearer ${options.token}` } } },
    ),
  );
  return client;
}
