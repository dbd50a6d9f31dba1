import { errorKind, isEngramError, type ErrorKind } from '../../kernel/errors.js';

/** Codes of failures that only exist on the HTTP wire (no library call was reached). */
export type HttpProblemCode =
  | 'ROUTE_NOT_FOUND'
  | 'METHOD_NOT_ALLOWED'
  | 'UNSUPPORTED_MEDIA_TYPE'
  | 'INVALID_JSON'
  | 'FORBIDDEN_HOST'
  | 'FORBIDDEN_ORIGIN'
  | 'UNAUTHORIZED'
  | 'PAYLOAD_TOO_LARGE'
  | 'EXTRACTION_UNAVAILABLE';

/** An HTTP-level refusal: its status is fixed by its code in `HTTP_PROBLEM_STATUS`. */
export class HttpProblem extends Error {
  readonly code: HttpProblemCode;
  readonly headers: Record<string, string>;

  constructor(code: HttpProblemCode, message: string, headers: Record<string, string> = {}) {
    super(message);
    this.name = 'HttpProblem';
    this.code = code;
    this.headers = headers;
  }
}

/** What goes on the wire for a failure: status, headers and the `{ error: { code, message } }` body. */
export interface WireError {
  status: number;
  headers: Record<string, string>;
  body: { error: { code: string; message: string } };
}

const HTTP_PROBLEM_STATUS: Record<HttpProblemCode, number> = {
  ROUTE_NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  UNSUPPORTED_MEDIA_TYPE: 415,
  INVALID_JSON: 400,
  FORBIDDEN_HOST: 403,
  FORBIDDEN_ORIGIN: 403,
  UNAUTHORIZED: 401,
  PAYLOAD_TOO_LARGE: 413,
  EXTRACTION_UNAVAILABLE: 503,
};

const STATUS_BY_KIND: Record<ErrorKind, number> = {
  'bad-input': 400,
  'not-found': 404,
  conflict: 409,
  unauthorized: 401,
  store: 503,
  internal: 500,
};

/**
 * The one place where errors become HTTP responses. Engram errors keep their code and message;
 * anything else is an internal error whose details (and stack) stay on the server.
 */
export function toWireError(error: unknown): WireError {
  if (error instanceof HttpProblem) {
    return wire(HTTP_PROBLEM_STATUS[error.code], error.code, error.message, error.headers);
  }
  if (isEngramError(error)) {
    const status = error.code === 'PAYLOAD_TOO_LARGE' ? 413 : STATUS_BY_KIND[errorKind(error)];
    const headers: Record<string, string> = status === 401 ? { 'www-authenticate': 'Bearer' } : {};
    if (status === 500) return wire(500, 'INTERNAL', 'Internal error; see the server log.', headers);
    return wire(status, error.code, error.message, headers);
  }
  return wire(500, 'INTERNAL', 'Internal error; see the server log.', {});
}

function wire(status: number, code: string, message: string, headers: Record<string, string>): WireError {
  return { status, headers, body: { error: { code, message } } };
}
