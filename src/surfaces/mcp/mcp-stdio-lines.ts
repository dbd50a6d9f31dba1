import { PassThrough, type Readable, type Writable } from 'node:stream';
import { ErrorCode } from '@modelcontextprotocol/sdk/types.js';
import { checkMcpMessage, type McpRequestProblem, type RequestId } from './mcp-request-check.js';

// The lines `engram mcp` reads, checked before the SDK's stdio transport sees them. The SDK closes
// the transport for good on a line over its 10 MB buffer (the server then serves nothing), drops
// a line that is not JSON-RPC without an answer, and answers a request whose params do not fit
// the method with -32603. Here every such line gets a JSON-RPC error and the next line is served;
// the message checks are shared with MCP over HTTP (mcp-request-check.ts).

/** The longest line accepted, in bytes: the SDK's own stdio buffer. */
export const MCP_STDIO_MAX_LINE_BYTES = 10 * 1024 * 1024;

/** Enough of an oversized line's start and end to find its id (the SDK writes `"id"` last). */
const EDGE_BYTES = 512;

export interface McpLineGateOptions {
  input: Readable;
  /** Where the gate's own error answers go: the protocol's output. */
  output: Writable;
  maxLineBytes?: number;
  log?: (message: string) => void;
}

/** A stream of the input's acceptable lines, for the SDK's transport; every other line is answered here with an error. */
export function gateMcpLines(options: McpLineGateOptions): Readable {
  const maxLineBytes = options.maxLineBytes ?? MCP_STDIO_MAX_LINE_BYTES;
  const accepted = new PassThrough();
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  // While discarding an oversized line: its first and last bytes, to answer its id.
  let discarding: { head: Buffer; tail: Buffer; bytes: number } | undefined;

  const answer = (id: RequestId, code: number, message: string): void => {
    options.log?.(`engram mcp: ${message}`);
    options.output.write(`${JSON.stringify({ jsonrpc: '2.0', id, error: { code, message } })}\n`);
  };

  const finishLine = (line: Buffer): void => {
    const text = line.toString('utf8').replace(/\r$/, '');
    if (text.trim() === '') return;
    const problem = checkLine(text);
    if (problem) answer(problem.id, problem.code, problem.message);
    else accepted.write(`${text}\n`);
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
          answer(
            oversizedLineId(head, tail),
            ErrorCode.InvalidRequest,
            `Message refused: ${bytes} bytes is over the limit of ${maxLineBytes} bytes per line.`,
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
    accepted.end();
  });
  options.input.on('error', (error) => accepted.destroy(error));
  return accepted;
}

/** What is wrong with one line, as the JSON-RPC error to answer; undefined when the SDK can take it. */
function checkLine(text: string): McpRequestProblem | undefined {
  let message: unknown;
  try {
    message = JSON.parse(text);
  } catch {
    return { id: null, code: ErrorCode.ParseError, message: 'Parse error: the line is not JSON.' };
  }
  return checkMcpMessage(message);
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
