import type { IncomingMessage } from 'node:http';
import { EngramError } from '../../kernel/errors.js';
import { HttpProblem } from './http-errors.js';

const JSON_MEDIA_TYPE = /^application\/(?:[\w.+-]+\+)?json$/i;

/** Whether a request carries a body at all (a declared length above zero, or a chunked stream). */
export function hasBody(request: IncomingMessage): boolean {
  const length = request.headers['content-length'];
  if (length !== undefined) return Number(length) > 0;
  return request.headers['transfer-encoding'] !== undefined;
}

/** Refuses (415) a request whose body is not declared as JSON. */
export function assertJsonContentType(request: IncomingMessage): void {
  const header = request.headers['content-type'] ?? '';
  const [mediaType = '', ...parameters] = header.split(';').map((part) => part.trim());
  const charset = parameters.find((parameter) => /^charset=/i.test(parameter));
  const utf8 = charset === undefined || /^charset="?utf-8"?$/i.test(charset);
  if (!JSON_MEDIA_TYPE.test(mediaType) || !utf8) {
    throw new HttpProblem(
      'UNSUPPORTED_MEDIA_TYPE',
      `Send the body as JSON with "Content-Type: application/json" (got ${JSON.stringify(header.slice(0, 80) || 'none')}).`,
    );
  }
}

/**
 * Reads and parses a JSON body of at most `maxBodyBytes`; returns undefined when there is no body.
 * Stops reading as soon as the limit is passed, so an oversized body is never buffered whole.
 */
export async function readJsonBody(request: IncomingMessage, maxBodyBytes: number): Promise<unknown> {
  if (!hasBody(request)) return undefined;
  assertJsonContentType(request);
  const declared = Number(request.headers['content-length'] ?? Number.NaN);
  if (Number.isFinite(declared) && declared > maxBodyBytes) throw tooLarge(maxBodyBytes);
  const bytes = await readLimited(request, maxBodyBytes);
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new HttpProblem('INVALID_JSON', 'The body is not valid UTF-8.');
  }
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new HttpProblem('INVALID_JSON', `The body is not valid JSON: ${(error as Error).message.slice(0, 200)}`);
  }
}

/** Like `readJsonBody`, but a missing body is bad input. */
export async function readRequiredJsonBody(request: IncomingMessage, maxBodyBytes: number): Promise<unknown> {
  const body = await readJsonBody(request, maxBodyBytes);
  if (body === undefined) throw new EngramError('INVALID_INPUT', 'This request needs a JSON body.');
  return body;
}

function readLimited(request: IncomingMessage, maxBodyBytes: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let total = 0;
    const cleanup = (): void => {
      request.off('data', onData);
      request.off('end', onEnd);
      request.off('error', onError);
      request.off('aborted', onAborted);
    };
    const onData = (chunk: Buffer): void => {
      total += chunk.length;
      if (total > maxBodyBytes) {
        cleanup();
        request.pause();
        reject(tooLarge(maxBodyBytes));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = (): void => {
      cleanup();
      resolve(Buffer.concat(chunks, total));
    };
    const onError = (error: Error): void => {
      cleanup();
      reject(
        new EngramError('INVALID_INPUT', `The request body could not be read: ${error.message}`, { cause: error }),
      );
    };
    const onAborted = (): void => onError(new Error('the client aborted the request'));
    request.on('data', onData);
    request.on('end', onEnd);
    request.on('error', onError);
    request.on('aborted', onAborted);
  });
}

function tooLarge(maxBodyBytes: number): HttpProblem {
  return new HttpProblem(
    'PAYLOAD_TOO_LARGE',
    `The body is larger than the limit of ${maxBodyBytes} bytes (server.maxBodyBytes).`,
  );
}
