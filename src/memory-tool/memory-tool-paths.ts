import { EngramError, type EngramErrorCode } from '../kernel/errors.js';

/** The virtual root every memory-tool path lives under. */
export const MEMORY_ROOT = '/memories';

/** A checked memory-tool path: what the model wrote, and its segments below `/memories`. */
export interface MemoryPath {
  /** The path as given, echoed in the protocol's messages. */
  given: string;
  /** Segments below the root, without empty or `.` segments: `[]` is the root itself. */
  segments: string[];
}

/**
 * An error whose message is the exact text the memory tool returns to the model (the protocol's
 * reference strings start with or without "Error:", so the text is kept whole).
 */
export function memoryToolError(code: EngramErrorCode, text: string): EngramError {
  return new EngramError(code, text, { details: { memoryToolText: true } });
}

// Controls and the Unicode line separators: no file name needs them, and they would break the listing format.
const CONTROL = /[\u0000-\u001F\u007F-\u009F\u2028\u2029]/;
// Any percent escape: memory file names are slugs, so an escape is never needed and is how
// encoded traversal (`%2e%2e%2f`, double-encoded `%252e`) is smuggled past naive checks.
const PERCENT_ESCAPE = /%[0-9a-f]{2}/i;

/**
 * Checks a path given to the memory tool: a string under `/memories`, no `..` segment, no
 * backslash, no percent escape, no control character, not absurdly long. Returns its canonical
 * segments; refuses anything else with SANDBOX_DENIED and a message saying what to send instead.
 */
export function parseMemoryPath(given: unknown, field: string, maxLength: number): MemoryPath {
  if (typeof given !== 'string' || given.length === 0) {
    throw memoryToolError(
      'INVALID_INPUT',
      `Error: Missing required parameter \`${field}\`: a path such as ${MEMORY_ROOT}/notes.md.`,
    );
  }
  const shown = showPath(given);
  if (given.length > maxLength) {
    throw denied(`${shown} is ${given.length} characters long; paths are at most ${maxLength}.`);
  }
  if (CONTROL.test(given)) throw denied(`${shown} contains control characters; use plain names under ${MEMORY_ROOT}.`);
  if (given.includes('\\'))
    throw denied(`${shown} contains a backslash; separate folders with "/" and stay under ${MEMORY_ROOT}.`);
  if (PERCENT_ESCAPE.test(given)) {
    throw denied(
      `${shown} contains a percent escape (such as %2e or %2f); write the path plainly under ${MEMORY_ROOT}.`,
    );
  }
  if (given !== MEMORY_ROOT && !given.startsWith(`${MEMORY_ROOT}/`)) {
    throw denied(`${shown} is outside the memory directory: every path must start with ${MEMORY_ROOT}.`);
  }
  const segments = given
    .slice(MEMORY_ROOT.length)
    .split('/')
    .filter((segment) => segment !== '' && segment !== '.');
  // Refused even when it would resolve back inside: no path needs it, and refusing is simpler to trust.
  if (segments.some((segment) => segment === '..' || /^\.{3,}$/.test(segment))) {
    throw denied(
      `${shown} contains "..", which would leave ${MEMORY_ROOT}; name the file directly, e.g. ${MEMORY_ROOT}/notes.md.`,
    );
  }
  return { given, segments };
}

/** A path as shown inside refusals: quoted and cut, so hostile text cannot pose as part of the message. */
export function showPath(given: string): string {
  return JSON.stringify(given.length > 200 ? `${given.slice(0, 200)}…` : given);
}

function denied(reason: string): EngramError {
  return memoryToolError('SANDBOX_DENIED', `Error: The path ${reason}`);
}
