import type { Readable, Writable } from 'node:stream';

// The lines `engram mcp` reads, split and bounded before anything parses them. The SDK closes its
// stdio transport for good on a line over its 10 MB buffer (the server then serves nothing): here
// such a line is answered with a JSON-RPC error and the next line is read. What a line says is
// checked by the server (stdio-mcp-server.ts), with the checks MCP over HTTP shares (mcp-request-check.ts).
// Nothing here loads the MCP SDK: the first answers of `engram mcp` come before it is loaded.

/** JSON-RPC's error codes engram answers with (the spec's numbers, which the SDK's ErrorCode names). */
export const JSON_RPC_ERROR = {
  parse: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internal: -32603,
} as const;

export type RequestId = string | number | null;

/** The longest line accepted, in bytes: the SDK's own stdio buffer. */
export const MCP_STDIO_MAX_LINE_BYTES = 10 * 1024 * 1024;

/** Enough of an oversized line's start and end to find its id (the SDK writes `"id"` last). */
const EDGE_BYTES = 512;

export interface McpLineReaderOptions {
  input: Readable;
  /** Where the reader's own error answers go: the protocol's output. */
  output: Writable;
  maxLineBytes?: number;
  log?: (message: string) => void;
  /** Each line within the limit (without its line end; blank lines are skipped). */
  onLine: (text: string) => void;
  /** The input ended (after its last line). */
  onEnd: () => void;
}

/** Writes one JSON-RPC error answer (and says it in the log). */
export function answerMcpError(
  output: Writable,
  id: RequestId,
  code: number,
  message: string,
  log?: (message: string) => void,
): void {
  log?.(`engram mcp: ${message}`);
  output.write(`${JSON.stringify({ jsonrpc: '2.0', id, error: { code, message } })}\n`);
}

/** Reads the input line by line: each line within the limit goes to `onLine`, an oversized one is answered here with an error. */
export function readMcpLines(options: McpLineReaderOptions): void {
  const maxLineBytes = options.maxLineBytes ?? MCP_STDIO_MAX_LINE_BYTES;
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  // While discarding an oversized line: its first and last bytes, to answer its id.
  let discarding: { head: Buffer; tail: Buffer; bytes: number } | undefined;

  const finishLine = (line: Buffer): void => {
    const text = line.toString('utf8').replace(/\r$/, '');
    if (text.trim() !== '') options.onLine(text);
  };

  options.input.on('data', (chunk: Buffer | string) => {
    let rest = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
    while (rest.length > 0) {
      const newline = rest.indexOf(0x0a);
      const segment = newline === -1 ? rest : rest.subarray(0, newline);
      rest = newline === -1 ? Buffer.alloc(0) : rest.subarray(newline + 1);
      if (!discarding && pendingBytes + segment.length > maxLineBytes) {
        const head = Buffer.concat([...pending, segment.subarray(0, EDGE_BYTES)]).subarray(0, EDGE_BYTES);
        discarding = { head, tail: Buffer.alloc(0), bytes: pendingBytes };
        pending = [];
        pendingBytes = 0;
      }
      if (discarding) {
        discarding.bytes += segment.length;
        discarding.tail = Buffer.concat([discarding.tail, segment.subarray(-EDGE_BYTES)]).subarray(-EDGE_BYTES);
        if (newline !== -1) {
          const { head, tail, bytes } = discarding;
          discarding = undefined;
          answerMcpError(
            options.output,
            oversizedLineId(head, tail),
            JSON_RPC_ERROR.invalidRequest,
            `Message refused: ${bytes} bytes is over the limit of ${maxLineBytes} bytes per line.`,
            options.log,
          );
        }
        continue;
      }
      if (newline === -1) {
        pending.push(segment);
        pendingBytes += segment.length;
      } else {
        const line = Buffer.concat([...pending, segment]);
        pending = [];
        pendingBytes = 0;
        finishLine(line);
      }
    }
  });
  options.input.on('end', () => {
    if (pendingBytes > 0) finishLine(Buffer.concat(pending));
    options.onEnd();
  });
  options.input.on('error', (error) => {
    options.log?.(`engram mcp: stdin: ${error.message}`);
    options.onEnd();
  });
}

const ID_VALUE = String.raw`(-?\d{1,16}|"(?:[^"\\]|\\.){0,200}")`;
const HEAD_ID = new RegExp(String.raw`^\s*\{\s*"jsonrpc"\s*:\s*"2\.0"\s*,\s*"id"\s*:\s*${ID_VALUE}`);
const TAIL_ID = new RegExp(String.raw`"id"\s*:\s*${ID_VALUE}\s*\}\s*$`);

/** The id of an oversized request, when its first or last bytes name it at the top level; else null. */
function oversizedLineId(head: Buffer, tail: Buffer): RequestId {
  const match = HEAD_ID.exec(head.toString('latin1')) ?? TAIL_ID.exec(tail.toString('latin1').replace(/\r$/, ''));
  if (!match) return null;
  try {
    return JSON.parse(match[1]!) as string | number;
  } catch {
    return null;
  }
}
