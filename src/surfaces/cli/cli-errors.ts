import { EngramError, errorKind, isEngramError, type ErrorKind } from '../../kernel/errors.js';
import type { CliIo } from './cli-io.js';

/** Exit codes of the `engram` binary. */
export const EXIT_OK = 0;
export const EXIT_NOT_FOUND = 1;
export const EXIT_BAD_INPUT = 2;
export const EXIT_STORE_ERROR = 3;

// The one place where error kinds become exit codes. Conflicts (an id that exists, an undo
// over newer changes) are the caller's to fix, so they count as bad input; anything
// unexpected is reported like a store error.
const EXIT_CODE_BY_KIND: Record<ErrorKind, number> = {
  'bad-input': EXIT_BAD_INPUT,
  conflict: EXIT_BAD_INPUT,
  unauthorized: EXIT_BAD_INPUT,
  'not-found': EXIT_NOT_FOUND,
  store: EXIT_STORE_ERROR,
  internal: EXIT_STORE_ERROR,
};

/** The exit code for an error, by its kind. */
export function exitCodeFor(error: unknown): number {
  return EXIT_CODE_BY_KIND[errorKind(toEngramError(error))];
}

/** Turns argument-parser errors into INVALID_INPUT; other errors pass through unchanged. */
export function toEngramError(error: unknown): unknown {
  if (isEngramError(error)) return error;
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS_')) {
    return new EngramError('INVALID_INPUT', (error as Error).message, { cause: error });
  }
  return error;
}

/**
 * Prints an error as `engram: <message>` on stderr (and as `{"error":…}` on stdout with --json)
 * and returns the exit code. No stack trace unless ENGRAM_DEBUG=1.
 */
export function reportError(error: unknown, io: Pick<CliIo, 'stdout' | 'stderr' | 'env'>, json: boolean): number {
  const converted = toEngramError(error);
  const code = isEngramError(converted) ? converted.code : 'INTERNAL';
  const message = converted instanceof Error ? converted.message : String(converted);
  if (json) {
    const details = isEngramError(converted) ? converted.details : undefined;
    io.stdout.write(`${JSON.stringify({ error: { code, message, ...(details && { details }) } })}\n`);
  }
  io.stderr.write(`engram: ${message}\n`);
  if (io.env.ENGRAM_DEBUG === '1' && converted instanceof Error && converted.stack) {
    io.stderr.write(`${converted.stack}\n`);
    if (converted.cause instanceof Error && converted.cause.stack)
      io.stderr.write(`caused by: ${converted.cause.stack}\n`);
  }
  return exitCodeFor(converted);
}
