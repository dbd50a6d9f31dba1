import type { JsonReply, SyncRouteCalls, TurnExtractor } from './http-route-context.js';
import type { JobOutcome } from '../../extraction/extraction-report.js';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { EngramError } from '../../kernel/errors.js';
import { assertScope, type Scope } from '../../memory/scope.js';
import type { Engram } from '../../engram.js';
import { toWireError } from './http-errors.js';
import { isPublicRoute, matchRoute } from './http-routes.js';
import {
  assertBearerToken,
  assertLoopbackHostHeader,
  assertSafeBinding,
  assertSameOrigin,
  isLoopbackHost,
} from './http-security.js';
import { SECURITY_HEADERS } from '../viewer/viewer-assets.js';

export interface StartServerOptions {
  engram: Engram;
  host: string;
  /** 0 picks a free port. */
  port: number;
  /** When set (non-empty), every request needs `Authorization: Bearer <token>`. */
  token?: string;
  maxBodyBytes: number;
  version: string;
  /** The scopes the MCP tools at /mcp are confined to. */
  mcpScopes: readonly Scope[];
  /** Queues finished turns for background extraction (`POST /v1/turns`); without it that route answers 503. */
  extractor?: TurnExtractor;
  /** Recorded in history for REST writes (default `http`). */
  actor?: string;
  /** How long `close()` waits for in-flight requests before cutting connections (default 10 s). */
  shutdownGraceMs?: number;
  /** Where unexpected errors are reported, with their stack; default stderr. */
  log?: (message: string) => void;
  /** The extraction runs finished lately, newest first, for the viewer's Activity page (GET /v1/jobs). */
  recentExtractions?: () => readonly JobOutcome[];
  /** Sync's status and conflict resolution, for `/v1/sync` (the service passes the library's calls). */
  sync?: SyncRouteCalls;
}

export interface RunningServer {
  url: string;
  port: number;
  /** Stops accepting connections, lets in-flight requests finish, then resolves. Idempotent. */
  close(): Promise<void>;
}

/**
 * Starts engram's HTTP service: the JSON REST API under /v1, /health, and the MCP server at /mcp.
 * Refuses to listen beyond loopback without a token.
 * @example
 * const server = await startServer({ engram, host: '127.0.0.1', port: 0, maxBodyBytes: 1 << 20, version: '0.1.0', mcpScopes: ['global'] });
 * await server.close();
 */
export async function startServer(options: StartServerOptions): Promise<RunningServer> {
  const token = options.token && options.token.length > 0 ? options.token : undefined;
  assertSafeBinding(options.host, token);
  const mcpScopes = options.mcpScopes.map((scope) => assertScope(scope));
  const loopback = isLoopbackHost(options.host);
  const log = options.log ?? ((message: string) => process.stderr.write(`${message}\n`));
  const actor = options.actor ?? 'http';
  let closing = false;

  const server = createServer((request, response) => {
    response.once('close', () => {
      // Keep-alive connections that just went idle would otherwise hold a closing server open.
      if (closing) setImmediate(() => server.closeIdleConnections());
    });
    void handle(request, response);
  });

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const started = performance.now();
    try {
      if (loopback) assertLoopbackHostHeader(request);
      // Every state-changing request on every route, one check: another web page can change nothing.
      assertSameOrigin(request);
      const url = new URL(request.url ?? '/', 'http://localhost');
      const method = request.method ?? 'GET';
      if (token !== undefined && !isPublicRoute(method, url.pathname)) assertBearerToken(request, token);
      if (closing) response.setHeader('connection', 'close');
      const { handler, params } = matchRoute(method, url.pathname);
      const reply = await handler({
        engram: options.engram,
        request,
        response,
        url,
        params,
        maxBodyBytes: options.maxBodyBytes,
        version: options.version,
        actor,
        mcpScopes,
        ...(options.extractor && { extractor: options.extractor }),
        ...(options.recentExtractions && { recentExtractions: options.recentExtractions }),
        ...(options.sync && { sync: options.sync }),
      });
      // How long the service worked on the answer, for the viewer's bench and a browser's network panel.
      if (!response.headersSent)
        response.setHeader('server-timing', `app;dur=${(performance.now() - started).toFixed(1)}`);
      if (reply) sendJson(request, response, reply, closing);
    } catch (error) {
      const wire = toWireError(error);
      if (wire.status >= 500) {
        log(
          `engram serve: ${request.method} ${request.url}: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
        );
      }
      if (response.headersSent) {
        response.destroy();
        return;
      }
      sendJson(request, response, { status: wire.status, body: wire.body, headers: wire.headers }, closing);
    }
  }

  server.requestTimeout = 60_000;
  server.headersTimeout = 30_000;
  await new Promise<void>((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException): void => reject(listenError(error, options.host, options.port));
    server.once('error', onError);
    server.listen(options.port, options.host, () => {
      server.off('error', onError);
      resolve();
    });
  });
  server.on('error', (error) => log(`engram serve: ${error.message}`));

  const address = server.address() as AddressInfo;
  const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  let closed: Promise<void> | undefined;

  return {
    url: `http://${shownHost}:${address.port}`,
    port: address.port,
    close() {
      closed ??= new Promise<void>((resolve) => {
        closing = true;
        const force = setTimeout(() => server.closeAllConnections(), options.shutdownGraceMs ?? 10_000);
        force.unref();
        server.close(() => {
          clearTimeout(force);
          resolve();
        });
        server.closeIdleConnections();
      });
      return closed;
    },
  };
}

function sendJson(request: IncomingMessage, response: ServerResponse, reply: JsonReply, closing: boolean): void {
  const payload = JSON.stringify(reply.body);
  response.statusCode = reply.status;
  response.setHeader('content-type', 'application/json; charset=utf-8');
  response.setHeader('content-length', Buffer.byteLength(payload));
  response.setHeader('cache-control', 'no-store');
  response.setHeader('content-security-policy', "default-src 'none'; frame-ancestors 'none'");
  for (const [name, value] of Object.entries(SECURITY_HEADERS)) response.setHeader(name, value);
  for (const [name, value] of Object.entries(reply.headers ?? {})) response.setHeader(name, value);
  // A body we stopped reading (too large, wrong type) cannot be skipped on a kept-alive connection,
  // and a stopping server wants every connection gone once its answer is out.
  if (!request.complete || closing) response.setHeader('connection', 'close');
  response.end(payload);
}

function listenError(error: NodeJS.ErrnoException, host: string, port: number): EngramError {
  const where = `${host}:${port}`;
  const hint =
    error.code === 'EADDRINUSE'
      ? `${where} is already in use: stop the other server or pick another port (--port, ENGRAM_PORT).`
      : error.code === 'EACCES'
        ? `Not allowed to listen on ${where}: pick a port above 1023.`
        : error.code === 'EADDRNOTAVAIL' || error.code === 'ENOTFOUND'
          ? `${JSON.stringify(host)} is not an address of this machine: use 127.0.0.1 (--host, ENGRAM_HOST).`
          : `Cannot listen on ${where}: ${error.message}`;
  return new EngramError('CONFIG_INVALID', hint, { cause: error });
}
