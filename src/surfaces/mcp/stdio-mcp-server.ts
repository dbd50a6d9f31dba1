import type { Readable, Writable } from 'node:stream';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { openEngram } from '../../node/open-engram.js';
import { createMemoryMcpServer } from './memory-mcp-server.js';
import { gateMcpLines } from './mcp-stdio-lines.js';
import { packageVersion } from '../../kernel/node/package-version.js';
import { stopOnSignals } from '../../kernel/node/stop-signals.js';

export interface StdioMcpServerOptions {
  cwd?: string;
  env?: Record<string, string | undefined>;
  /** Flag values by dotted setting path, as the CLI passes them. */
  flags?: Record<string, unknown>;
  version?: string;
  /** Protocol streams; default the process's stdin and stdout. */
  input?: Readable;
  output?: Writable;
  /** Where diagnostics go (never stdout, which carries the protocol); default stderr. */
  log?: (message: string) => void;
}

/**
 * Serves the memory tools over stdio for clients that spawn `engram mcp`, confined to the current
 * project and global. Resolves once stdin ends or SIGINT/SIGTERM arrives, after closing the store.
 */
export async function runStdioMcpServer(options: StdioMcpServerOptions = {}): Promise<void> {
  const input = options.input ?? process.stdin;
  const output = options.output ?? process.stdout;
  const log = options.log ?? ((message: string) => process.stderr.write(`${message}\n`));
  const opened = await openEngram({
    ...(options.cwd !== undefined && { cwd: options.cwd }),
    ...(options.env !== undefined && { env: options.env }),
    ...(options.flags !== undefined && { flags: options.flags }),
    actor: 'mcp',
  });
  const scopes = [...new Set([opened.loaded.project.scope, 'global'])];
  const server = createMemoryMcpServer(opened.engram, {
    scopes,
    version: options.version ?? packageVersion(),
    actor: 'mcp',
    log,
  });
  // Lines are checked first (size, JSON, params), so one bad line is answered and the next is served.
  const lines = gateMcpLines({ input, output, log });
  const transport = new StdioServerTransport(lines, output, {
    // Each line is bounded by the gate; several may queue together while the transport reads.
    maxBufferSize: Number.MAX_SAFE_INTEGER,
  });

  let finish: () => void = () => undefined;
  const finished = new Promise<void>((resolve) => {
    finish = resolve;
  });
  const onEnd = (): void => finish();
  input.once('end', onEnd);
  input.once('close', onEnd);
  // A client that wants the server gone sends SIGTERM with stdin still open (the MCP spec's stdio shutdown).
  const stop = stopOnSignals({
    graceMs: opened.loaded.settings.server.stopGraceMs,
    log,
    onStop: onEnd,
  });
  transport.onerror = (error) => log(`engram mcp: ${error.message}`);
  try {
    await server.connect(transport);
    server.server.onclose = onEnd;
    await finished;
    // Let tool calls already read from stdin answer before the store goes away.
    await new Promise((resolve) => setImmediate(resolve));
  } finally {
    input.off('end', onEnd);
    input.off('close', onEnd);
    await server.close().catch(() => undefined);
    await opened.close();
    // Stopped with stdin still open: reading it would keep the process alive with nothing left to serve.
    if (stop.signal.aborted) {
      input.pause();
      if (input === process.stdin) process.stdin.destroy();
    }
    stop.dispose();
  }
}
