import type { IncomingMessage, ServerResponse } from 'node:http';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { Scope } from '../../memory/scope.js';
import type { Engram } from '../../engram.js';
import { ErrorCode, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { createMemoryMcpServer } from '../mcp/memory-mcp-server.js';
import { checkMcpMessage, type McpRequestProblem } from '../mcp/mcp-request-check.js';

export interface McpEndpointOptions {
  engram: Engram;
  scopes: readonly Scope[];
  version: string;
}

/**
 * Answers one POST /mcp in stateless mode: a fresh MCP server and transport per request, so no
 * session state lives between requests and nothing outlives the response. A request whose params
 * do not fit its method is answered -32602 with its id (the check `engram mcp` over stdio uses).
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
  const { forwarded, problems } = setAsideInvalidParams(body);
  await server.connect(transport);
  if (problems.size > 0) {
    // The set-aside requests reach the transport as pings (so it waits for their answers) and are
    // answered here with their error instead of reaching the server.
    const deliver = transport.onmessage;
    transport.onmessage = (message, extra) => {
      const id = 'id' in message ? message.id : undefined;
      const problem = id === undefined ? undefined : problems.get(id);
      if (!problem || id === undefined) return deliver?.(message, extra);
      const answer: JSONRPCMessage = { jsonrpc: '2.0', id, error: { code: problem.code, message: problem.message } };
      void transport.send(answer, { relatedRequestId: id }).catch(() => undefined);
    };
  }
  await transport.handleRequest(request, response, forwarded);
}

/** The body with each request whose params do not fit its method replaced by a ping of the same id, and those problems by id. */
function setAsideInvalidParams(body: unknown): {
  forwarded: unknown;
  problems: Map<string | number, McpRequestProblem>;
} {
  const problems = new Map<string | number, McpRequestProblem>();
  const setAside = (message: unknown): unknown => {
    const problem = checkMcpMessage(message);
    if (!problem || problem.code !== ErrorCode.InvalidParams || problem.id === null) return message;
    problems.set(problem.id, problem);
    return { jsonrpc: '2.0', id: problem.id, method: 'ping' };
  };
  const forwarded = Array.isArray(body) ? body.map(setAside) : setAside(body);
  return { forwarded, problems };
}
