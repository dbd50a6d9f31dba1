import type { IncomingMessage, ServerResponse } from 'node:http';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { Scope } from '../../memory/scope.js';
import type { Engram } from '../../engram.js';
import { createMemoryMcpServer } from '../mcp/memory-mcp-server.js';

export interface McpEndpointOptions {
  engram: Engram;
  scopes: readonly Scope[];
  version: string;
}

/**
 * Answers one POST /mcp in stateless mode: a fresh MCP server and transport per request, so no
 * session state lives between requests and nothing outlives the response.
 */
export async function handleMcpPost(
  request: IncomingMessage,
  response: ServerResponse,
  body: unknown,
  options: McpEndpointOptions,
): Promise<void> {
  const server = createMemoryMcpServer(options.engram, {
    scopes: options.scopes,
    version: options.version,
    actor: 'mcp-http',
  });
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  response.on('close', () => {
    void transport.close().catch(() => undefined);
    void server.close().catch(() => undefined);
  });
  await server.connect(transport);
  await transport.handleRequest(request, response, body);
}
