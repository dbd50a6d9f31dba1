import type { Writable } from 'node:stream';
import { openEngram } from '../../node.js';
import { packageVersion } from '../../package-version.js';
import { startServer, type RunningServer } from './http-server.js';

export interface ServeCommandOptions {
  cwd?: string;
  env?: Record<string, string | undefined>;
  /** Flag values by dotted setting path (`server.port`, `server.host`), as the CLI passes them. */
  flags?: Record<string, unknown>;
  version?: string;
  /** Where the URL is printed; default stdout. */
  stdout?: Writable;
  /** Where shutdown notes and unexpected errors go; default stderr. */
  stderr?: Writable;
  /** Stops the service like SIGTERM does (tests, embedding). */
  signal?: AbortSignal;
  /** `json` prints one line `{"url","port","project","store"}` for programs; default text. */
  format?: 'text' | 'json';
  /** Called once the server listens. */
  onListening?: (server: RunningServer) => void;
}

/**
 * `engram serve`: opens the store the effective settings name, serves REST and MCP until SIGINT
 * or SIGTERM, then stops accepting connections, finishes in-flight requests and closes the store.
 */
export async function runServeCommand(options: ServeCommandOptions = {}): Promise<void> {
  const stdout = options.stdout ?? process.stdout;
  const stderr = options.stderr ?? process.stderr;
  const opened = await openEngram({
    ...(options.cwd !== undefined && { cwd: options.cwd }),
    ...(options.env !== undefined && { env: options.env }),
    ...(options.flags !== undefined && { flags: options.flags }),
    actor: 'http',
  });
  const { settings, project } = opened.loaded;
  let server: RunningServer;
  try {
    server = await startServer({
      engram: opened.engram,
      host: settings.server.host,
      port: settings.server.port,
      token: settings.server.token,
      maxBodyBytes: settings.server.maxBodyBytes,
      version: options.version ?? packageVersion(),
      mcpScopes: [...new Set([project.scope, 'global'])],
      log: (message) => stderr.write(`${message}\n`),
    });
  } catch (error) {
    await opened.close();
    throw error;
  }

  let stop: (reason: string) => void = () => undefined;
  const stopped = new Promise<string>((resolve) => {
    stop = resolve;
  });
  const onSigint = (): void => stop('SIGINT');
  const onSigterm = (): void => stop('SIGTERM');
  const onAbort = (): void => stop('abort');
  process.once('SIGINT', onSigint);
  process.once('SIGTERM', onSigterm);
  options.signal?.addEventListener('abort', onAbort, { once: true });
  if (options.signal?.aborted) stop('abort');

  if (options.format === 'json') {
    stdout.write(`${JSON.stringify({ url: server.url, port: server.port, project: project.scope, store: settings.store.url })}\n`);
  } else {
    stdout.write(`engram listening on ${server.url} (project ${project.scope}, store ${settings.store.url}); Ctrl-C stops.\n`);
    stdout.write(`MCP endpoint: ${server.url}/mcp\n`);
  }
  options.onListening?.(server);
  try {
    const reason = await stopped;
    stderr.write(`engram: ${reason}: finishing in-flight requests…\n`);
    await server.close();
  } finally {
    process.off('SIGINT', onSigint);
    process.off('SIGTERM', onSigterm);
    options.signal?.removeEventListener('abort', onAbort);
    await opened.close();
  }
  stderr.write('engram: stopped.\n');
}
