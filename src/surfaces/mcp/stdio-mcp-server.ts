import type { Readable, Writable } from 'node:stream';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { EngramError } from '../../kernel/errors.js';
import { packageVersion } from '../../kernel/node/package-version.js';
import { stopOnSignals } from '../../kernel/node/stop-signals.js';
import { loadSettings } from '../../node/load-settings.js';
import { answerMcpError, JSON_RPC_ERROR, readMcpLines, type RequestId } from './mcp-stdio-lines.js';
import { snapshotServer } from './memory-mcp-snapshot.js';

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

/** The real server, once the SDK and the store are loaded: takes every line from then on. */
interface LoadedServer {
  /** One line of the client: checked (an error answered here), then handed to the SDK. */
  take(text: string): void;
  /** Hands the SDK a message the snapshot already answered (initialize), its answer dropped. */
  replay(message: JSONRPCMessage): void;
  /** Resolves once every request handed over is answered. */
  answered(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Serves the memory tools over stdio for clients that spawn `engram mcp`, confined to the current
 * project and global. Resolves once stdin ends (after answering what it read) or SIGINT/SIGTERM
 * arrives, after closing the store.
 *
 * The first answers a client waits for (initialize, the tool and resource lists, ping) come from the
 * real server's recorded answers (memory-mcp-snapshot.ts) before the MCP SDK, zod and the store are
 * loaded; they load after the tool list is given, or at once for anything else, which then waits.
 */
export async function runStdioMcpServer(options: StdioMcpServerOptions = {}): Promise<void> {
  const input = options.input ?? process.stdin;
  const output = options.output ?? process.stdout;
  const log = options.log ?? ((message: string) => process.stderr.write(`${message}\n`));
  const settingsOptions = {
    ...(options.cwd !== undefined && { cwd: options.cwd }),
    ...(options.env !== undefined && { env: options.env }),
    ...(options.flags !== undefined && { flags: options.flags }),
  };
  const loaded = loadSettings(settingsOptions);
  const scopes = [...new Set([loaded.project.scope, 'global'])];
  const version = options.version ?? packageVersion();
  const snapshot = snapshotServer({ scopes, version });

  let server: LoadedServer | undefined;
  let loading: Promise<LoadedServer | undefined> | undefined;
  let failure: EngramError | undefined;
  const waiting: string[] = [];
  const early: JSONRPCMessage[] = [];

  const refuse = (text: string): void => {
    const id = requestIdOf(text);
    if (id !== undefined) answerMcpError(output, id, JSON_RPC_ERROR.internal, failure!.message, log);
  };
  const load = (): Promise<LoadedServer | undefined> =>
    (loading ??= loadServer({ ...settingsOptions, scopes, version, output, log }).then(
      (ready) => {
        for (const message of early) ready.replay(message);
        server = ready;
        for (const text of waiting.splice(0)) ready.take(text);
        return ready;
      },
      (error: unknown) => {
        failure = new EngramError(
          'INTERNAL',
          `engram mcp could not start its memory: ${error instanceof Error ? error.message : String(error)}`,
          { cause: error },
        );
        log(failure.message);
        for (const text of waiting.splice(0)) refuse(text);
        return undefined;
      },
    ));

  const onLine = (text: string): void => {
    if (server) return server.take(text);
    if (failure) return refuse(text);
    let message: unknown;
    try {
      message = JSON.parse(text);
    } catch {
      answerMcpError(output, null, JSON_RPC_ERROR.parse, 'Parse error: the line is not JSON.', log);
      return;
    }
    const answer = snapshot?.answer(message);
    if (!answer) {
      waiting.push(text);
      void load();
      return;
    }
    const method = (message as { method: string }).method;
    // The real server must see what set up the session, without answering it again.
    if (method === 'initialize' || method === 'notifications/initialized') early.push(message as JSONRPCMessage);
    if (answer.reply) output.write(`${JSON.stringify(answer.reply)}\n`);
    // The client has the tools: the first call is near, so load what it needs now.
    if (method === 'tools/list') void load();
  };

  let finish: () => void = () => undefined;
  const finished = new Promise<void>((resolve) => {
    finish = resolve;
  });
  readMcpLines({ input, output, log, onLine, onEnd: () => finish() });
  // A client that wants the server gone sends SIGTERM with stdin still open (the MCP spec's stdio shutdown).
  const stop = stopOnSignals({ graceMs: loaded.settings.server.stopGraceMs, log, onStop: () => finish() });
  if (!snapshot) void load();
  try {
    await finished;
    if (!stop.signal.aborted && (loading || waiting.length > 0)) {
      // Input ended: answer what was read before the store goes away.
      const ready = await load();
      await Promise.race([ready?.answered(), stopped(stop.signal)]);
    }
  } finally {
    const ready = server ?? (loading && !stop.signal.aborted ? await loading : undefined);
    await ready?.close().catch(() => undefined);
    // Stopped with stdin still open: reading it would keep the process alive with nothing left to serve.
    if (stop.signal.aborted) {
      input.pause();
      if (input === process.stdin) process.stdin.destroy();
      // A load still under way is dropped: the process is stopping.
      void loading?.then((late) => late?.close());
    }
    stop.dispose();
  }
  if (failure && !stop.signal.aborted) throw failure;
}

/** Loads the MCP SDK, opens the store and connects the memory server to a transport over the output. */
async function loadServer(options: {
  cwd?: string;
  env?: Record<string, string | undefined>;
  flags?: Record<string, unknown>;
  scopes: string[];
  version: string;
  output: Writable;
  log: (message: string) => void;
}): Promise<LoadedServer> {
  const [{ openEngram }, { createMemoryMcpServer }, { checkMcpMessage }] = await Promise.all([
    import('../../node/open-engram.js'),
    import('./memory-mcp-server.js'),
    import('./mcp-request-check.js'),
  ]);
  const { scopes, version, output, log } = options;
  const opened = await openEngram({
    ...(options.cwd !== undefined && { cwd: options.cwd }),
    ...(options.env !== undefined && { env: options.env }),
    ...(options.flags !== undefined && { flags: options.flags }),
    actor: 'mcp',
  });
  try {
    const server = createMemoryMcpServer(opened.engram, { scopes, version, actor: 'mcp', log });
    const transport = new LineTransport(output);
    transport.onerror = (error) => log(`engram mcp: ${error.message}`);
    await server.connect(transport);
    return {
      take(text) {
        let message: unknown;
        try {
          message = JSON.parse(text);
        } catch {
          answerMcpError(output, null, JSON_RPC_ERROR.parse, 'Parse error: the line is not JSON.', log);
          return;
        }
        // Lines are checked first (JSON-RPC, params), so one bad line is answered and the next is served.
        const problem = checkMcpMessage(message);
        if (problem) answerMcpError(output, problem.id, problem.code, problem.message, log);
        else transport.receive(message as JSONRPCMessage);
      },
      replay: (message) => transport.receive(message, { silent: true }),
      answered: () => transport.answered(),
      close: async () => {
        await server.close().catch(() => undefined);
        await opened.close();
      },
    };
  } catch (error) {
    await opened.close();
    throw error;
  }
}

/** The SDK's side of stdio: messages handed in by the line reader, answers written as lines. */
class LineTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  readonly #output: Writable;
  /** Requests handed to the server and not answered yet. */
  readonly #open = new Set<string | number>();
  /** Requests whose answer the client already has (the snapshot gave it). */
  readonly #silent = new Set<string | number>();
  #idle: (() => void) | undefined;

  constructor(output: Writable) {
    this.#output = output;
  }

  async start(): Promise<void> {}

  receive(message: JSONRPCMessage, options: { silent?: boolean } = {}): void {
    if ('method' in message && 'id' in message) {
      this.#open.add(message.id);
      if (options.silent === true) this.#silent.add(message.id);
    }
    this.onmessage?.(message);
  }

  async send(message: JSONRPCMessage): Promise<void> {
    if (!('method' in message) && 'id' in message && message.id !== undefined) {
      this.#open.delete(message.id);
      if (this.#open.size === 0) this.#idle?.();
      if (this.#silent.delete(message.id)) return;
    }
    if (!this.#output.write(`${JSON.stringify(message)}\n`))
      await new Promise<void>((resolve) => this.#output.once('drain', resolve));
  }

  answered(): Promise<void> {
    if (this.#open.size === 0) return Promise.resolve();
    return new Promise((resolve) => {
      this.#idle = resolve;
    });
  }

  async close(): Promise<void> {
    this.onclose?.();
  }
}

/** The id of a request line, read loosely (null when it has none a client could match); undefined for a notification. */
function requestIdOf(text: string): RequestId | undefined {
  try {
    const message = JSON.parse(text) as { id?: unknown; method?: unknown };
    if (typeof message.method === 'string' && message.id === undefined) return undefined;
    return typeof message.id === 'string' || typeof message.id === 'number' ? message.id : null;
  } catch {
    return null;
  }
}

function stopped(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener('abort', () => resolve(), { once: true });
  });
}
