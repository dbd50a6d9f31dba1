import { EngramError, isEngramError } from '../../kernel/errors.js';

// Driver and server errors as engram's codes, with messages that say what to do. Which code:
// - STORE_ERROR: the server cannot be reached, timed out, is overloaded, or refuses a privilege.
// - CONFIG_INVALID: the URL is wrong: credentials refused, no such database.
// - STORE_UNSUPPORTED: the server lacks what engram needs (too old, no SSL when asked for).
// No message ever holds the password: targets are `host:port/database as user`.

/** What a message may name: the server and user, the schema, the statement timeout. */
export interface PostgresErrorContext {
  target: string;
  user: string;
  schema: string;
  statementTimeoutMs: number;
}

const UNREACHABLE = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ETIMEDOUT',
  'ECONNRESET',
  'EPIPE',
]);

/** The SQLSTATE of a server error, or the Node code of a socket error. */
export function errorCode(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : '';
}

/** Turns any error of the driver into an EngramError (EngramErrors pass through). */
export function toStoreError(error: unknown, context: PostgresErrorContext): EngramError {
  if (isEngramError(error)) return error;
  const code = errorCode(error);
  const message = (error as Error | undefined)?.message ?? String(error);
  const where = context.target;
  if (
    UNREACHABLE.has(code) ||
    /timeout expired|Connection terminated|connect ETIMEDOUT|timeout exceeded when trying to connect/i.test(message)
  ) {
    return new EngramError(
      'STORE_ERROR',
      `Cannot reach the Postgres server at ${where} (${code || message}): check that it runs and that the store URL's host and port are right.`,
      { cause: error },
    );
  }
  switch (code) {
    case '28P01':
    case '28000':
      return new EngramError(
        'CONFIG_INVALID',
        `Postgres refused the login of ${context.user} at ${where}: check the user and password in the store URL.`,
        { cause: error },
      );
    case '3D000':
      return new EngramError(
        'CONFIG_INVALID',
        `Postgres at ${where} has no such database: create it or fix the store URL (${message}).`,
        { cause: error },
      );
    case '42501':
      return new EngramError(
        'STORE_ERROR',
        `Postgres user ${context.user} lacks a privilege engram needs for schema ${context.schema} at ${where} (${message}). ` +
          `Grant it (e.g. GRANT USAGE, CREATE ON SCHEMA ${context.schema} TO ${context.user}, or CREATE on the database for a new schema), or name a schema this user owns with ?schema=.`,
        { cause: error },
      );
    case '57014':
      return new EngramError(
        'STORE_ERROR',
        `A Postgres statement ran longer than ${context.statementTimeoutMs} ms and was cancelled: raise store.statementTimeoutMs (or ?statement_timeout= in the URL).`,
        { cause: error },
      );
    case '40P01':
    case '40001':
    case '55P03':
      return new EngramError('STORE_ERROR', `The Postgres store is busy (${message}); try again.`, { cause: error });
    case '53300':
    case '53400':
      return new EngramError(
        'STORE_ERROR',
        `Postgres at ${where} has no connection to spare (${message}): lower the pool size (?pool=) or raise max_connections.`,
        { cause: error },
      );
    case '22021':
    case '22P05':
      return new EngramError(
        'INVALID_INPUT',
        `Postgres cannot store this text (${message}); remove NUL or invalid characters.`,
        { cause: error },
      );
    case '23505':
      return new EngramError('CONFLICT', `A record with this id already exists (${message}).`, { cause: error });
    default:
      break;
  }
  if (/does not support SSL|SSL/i.test(message) && code === '') {
    return new EngramError(
      'STORE_UNSUPPORTED',
      `The SSL connection to ${where} failed (${message}): check sslmode and the server's SSL setup.`,
      { cause: error },
    );
  }
  return new EngramError('STORE_ERROR', `Postgres store error at ${where}: ${message}`, { cause: error });
}
