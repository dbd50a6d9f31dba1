import { realpath } from 'node:fs/promises';
import { basename, dirname, isAbsolute, relative, resolve, sep } from 'node:path';
import { EngramError } from '../../kernel/errors.js';
import { isSecretPath } from '../../privacy/secret-files.js';
import { sandboxDenied } from '../sandbox-denied.js';

/** The project a sandbox is confined to: the root as given and as the file system resolves it. */
export interface SandboxRoot {
  /** The root as configured (it may pass through a symlink). */
  given: string;
  /** The root's real path: every path the sandbox touches must resolve under it. */
  real: string;
}

/** A path checked to stay inside the project. */
export interface CheckedPath {
  /** The real absolute path (symlinks resolved) when it exists, else the lexical absolute path. */
  absolute: string;
  /** The path relative to the project root, as shown to the model (`.` for the root). */
  shown: string;
  exists: boolean;
}

export interface PathCheckOptions {
  maxLength: number;
  /** What the path is for, named in refusals: `path`, `argument "…"`. */
  label?: string;
  /** Refuse files that usually hold secrets (.env, private keys…); default true. */
  refuseSecrets?: boolean;
}

// Controls and the Unicode line separators: no file name an agent needs holds them.
const CONTROL = /[\u0000-\u001F\u007F\u2028\u2029]/;
const MAX_DECODE_ROUNDS = 4;

/** Resolves the project root once: its real path, refusing a root that is not a directory. */
export async function resolveSandboxRoot(root: string): Promise<SandboxRoot> {
  if (typeof root !== 'string' || root.length === 0 || CONTROL.test(root)) {
    throw new EngramError('INVALID_INPUT', 'The sandbox needs the project root: an existing directory.');
  }
  const given = resolve(root);
  try {
    return { given, real: await realpath(given) };
  } catch (error) {
    throw new EngramError(
      'NOT_FOUND',
      `The sandbox root ${given} cannot be opened (${(error as NodeJS.ErrnoException).code ?? 'error'}).`,
      { cause: error },
    );
  }
}

/**
 * Checks that a path given by a model stays inside the project: no NUL or control characters,
 * no `..` segment (plain, with backslashes, or percent-encoded once or more), absolute only when
 * inside the root, and, once symlinks are resolved, still inside the root. Refuses with
 * SANDBOX_DENIED; a path that does not exist is returned with `exists: false`.
 */
export async function checkProjectPath(
  root: SandboxRoot,
  given: unknown,
  options: PathCheckOptions,
): Promise<CheckedPath> {
  const label = options.label ?? 'path';
  if (typeof given !== 'string' || given.length === 0)
    throw new EngramError('INVALID_INPUT', `The ${label} must be a non-empty string.`);
  const shown = JSON.stringify(given.length > 200 ? `${given.slice(0, 200)}…` : given);
  if (given.length > options.maxLength)
    throw sandboxDenied(
      `The ${label} ${shown} is ${given.length} characters long; paths are at most ${options.maxLength}.`,
    );
  checkTraversal(given, label, shown);

  const lexical = resolve(root.given, given);
  const inside = insideOf(root.given, lexical) ?? insideOf(root.real, lexical);
  if (inside === undefined) {
    throw sandboxDenied(
      `The ${label} ${shown} is outside the project (${root.given}); use a path relative to the project root.`,
    );
  }
  const { real, exists } = await realOrNearest(lexical);
  const realInside = insideOf(root.real, real);
  if (realInside === undefined) {
    throw sandboxDenied(
      `The ${label} ${shown} leads outside the project through a symbolic link; only files inside the project can be used.`,
    );
  }
  if (options.refuseSecrets !== false && isSecretPath(realInside)) {
    throw sandboxDenied(
      `The ${label} ${shown} is a file that usually holds secrets (keys, tokens, passwords); it is not readable here.`,
    );
  }
  return { absolute: real, shown: inside === '' ? '.' : inside.split(sep).join('/'), exists };
}

/**
 * Refuses `..` segments, backslashes and NUL, in the text as given and in every percent-decoded
 * form of it (`%2e%2e%2f`, double-encoded `%252e%252e%252f`): a tool further down may decode once more.
 */
export function checkTraversal(given: string, label: string, shown: string): void {
  let text = given;
  for (let round = 0; round <= MAX_DECODE_ROUNDS; round += 1) {
    const encoded = round > 0 ? ' (percent-encoded)' : '';
    if (CONTROL.test(text))
      throw sandboxDenied(`The ${label} ${shown} contains control characters${encoded}; use a plain path.`);
    if (text.includes('\\'))
      throw sandboxDenied(`The ${label} ${shown} contains a backslash${encoded}; separate folders with "/".`);
    if (text.split('/').some((segment) => segment === '..')) {
      throw sandboxDenied(
        `The ${label} ${shown} contains ".."${encoded}, which could leave the project; use a path inside the project root.`,
      );
    }
    let decoded: string;
    try {
      decoded = decodeURIComponent(text);
    } catch {
      return; // Not valid percent-encoding: nothing would decode it, so it is a plain name.
    }
    if (decoded === text) return;
    text = decoded;
  }
  throw sandboxDenied(
    `The ${label} ${shown} is percent-encoded more than ${MAX_DECODE_ROUNDS} times; use a plain path.`,
  );
}

/** The path of `target` relative to `base` when it is `base` or under it, else undefined. */
export function insideOf(base: string, target: string): string | undefined {
  const path = relative(base, target);
  if (path === '') return '';
  if (isAbsolute(path) || path === '..' || path.startsWith(`..${sep}`)) return undefined;
  return path;
}

// The real path of the nearest existing ancestor, with the rest appended: so a new name under a
// symlinked folder is judged by where that folder really is.
async function realOrNearest(path: string): Promise<{ real: string; exists: boolean }> {
  let current = path;
  const rest: string[] = [];
  for (;;) {
    try {
      const real = await realpath(current);
      return { real: rest.length === 0 ? real : resolve(real, ...rest.reverse()), exists: rest.length === 0 };
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT' && code !== 'ENOTDIR')
        throw sandboxDenied(`The path ${path} cannot be resolved (${code ?? 'error'}).`);
      const parent = dirname(current);
      if (parent === current) return { real: path, exists: false };
      rest.push(basename(current));
      current = parent;
    }
  }
}
