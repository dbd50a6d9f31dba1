import { lstat, readdir } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import { createContext, Script } from 'node:vm';
import { EngramError } from '../../kernel/errors.js';
import { looksBinary, readProjectFile, type SandboxLimits } from './sandbox-files.js';
import { isSecretPath } from '../../privacy/secret-files.js';
import { checkProjectPath, type SandboxRoot } from './sandbox-paths.js';

export interface SearchInput {
  pattern: unknown;
  path?: unknown;
  regex?: unknown;
  ignore_case?: unknown;
  glob?: unknown;
}

const MAX_PATTERN_LENGTH = 1_000;
const MAX_SHOWN_LINE = 300;
// Never worth searching: version control internals and installed dependencies.
const SKIPPED_FOLDERS = new Set(['.git', 'node_modules']);

// Runs in its own context with a timeout, so a catastrophic regular expression (/(a+)+$/) is stopped
// instead of freezing the process: V8 interrupts a running match when the timeout fires.
const MATCH_LINES = new Script(
  'found = []; for (let index = 0; index < lines.length; index += 1) if (pattern.test(lines[index])) found.push(index);',
);

/**
 * The search_files tool: a grep written in JS over the files under a project folder, plain text
 * or a regular expression, bounded in files, matches, file size and time. It never follows
 * symbolic links, skips `.git`, `node_modules`, binary files and files that usually hold secrets.
 */
export async function searchFilesTool(
  root: SandboxRoot,
  limits: SandboxLimits,
  input: SearchInput,
  now: () => number = Date.now,
): Promise<string> {
  const { pattern, regex, ignore_case: ignoreCase, glob } = input;
  if (typeof pattern !== 'string' || pattern.length === 0 || pattern.length > MAX_PATTERN_LENGTH) {
    throw new EngramError('INVALID_INPUT', `pattern must be text of 1-${MAX_PATTERN_LENGTH} characters.`);
  }
  for (const [name, value] of [
    ['regex', regex],
    ['ignore_case', ignoreCase],
  ] as const) {
    if (value !== undefined && typeof value !== 'boolean')
      throw new EngramError('INVALID_INPUT', `${name} must be true or false.`);
  }
  if (glob !== undefined && (typeof glob !== 'string' || glob.length === 0 || glob.length > 200)) {
    throw new EngramError('INVALID_INPUT', 'glob must be a short pattern such as "*.ts" or "src/**/*.md".');
  }
  const matcher = buildMatcher(pattern, regex === true, ignoreCase === true);
  const fileFilter = glob === undefined ? undefined : globMatcher(glob);
  const start = await checkProjectPath(root, input.path ?? '.', { maxLength: limits.maxPathLength });
  if (!start.exists) throw new EngramError('NOT_FOUND', `No file or folder ${start.shown} in the project.`);

  const deadline = now() + limits.searchTimeoutMs;
  const results: string[] = [];
  let filesRead = 0;
  let stopped: string | undefined;
  const queue = [start.absolute];
  while (queue.length > 0 && stopped === undefined) {
    const path = queue.shift()!;
    // A file removed while the search runs is skipped, not fatal.
    const info = await lstat(path).catch(() => undefined);
    if (!info) continue;
    const shown = relative(root.real, path).split(sep).join('/') || '.';
    if (info.isDirectory()) {
      const names = (await readdir(path).catch(() => [] as string[])).sort();
      for (const name of names) if (!SKIPPED_FOLDERS.has(name)) queue.push(join(path, name));
      continue;
    }
    if (!info.isFile() || info.size > limits.searchMaxFileBytes || isSecretPath(shown)) continue;
    if (fileFilter && !fileFilter(shown)) continue;
    if (filesRead >= limits.searchMaxFiles) {
      stopped = `stopped after reading ${filesRead} files (sandbox.searchMaxFiles); search a narrower path`;
      break;
    }
    const remaining = deadline - now();
    if (remaining <= 0) {
      stopped = `stopped after ${limits.searchTimeoutMs} ms (sandbox.searchTimeoutMs); search a narrower path`;
      break;
    }
    filesRead += 1;
    const { bytes } = await readProjectFile({ absolute: path, shown, exists: true }, limits.searchMaxFileBytes).catch(
      () => ({ bytes: Buffer.alloc(0) }),
    );
    if (bytes.length === 0 || looksBinary(bytes)) continue;
    const lines = bytes.toString('utf8').split('\n');
    for (const index of matcher(lines, remaining)) {
      if (results.length >= limits.searchMaxMatches) {
        stopped = `stopped at ${limits.searchMaxMatches} matches (sandbox.searchMaxMatches); make the pattern more specific`;
        break;
      }
      const line = lines[index]!.replace(/\r$/, '');
      results.push(
        `${shown}:${index + 1}: ${line.length > MAX_SHOWN_LINE ? `${line.slice(0, MAX_SHOWN_LINE)}…` : line}`,
      );
    }
  }
  const summary =
    results.length === 0
      ? `No matches for ${JSON.stringify(pattern)} in ${start.shown} (${filesRead} files searched).`
      : `${results.length} ${results.length === 1 ? 'match' : 'matches'} in ${filesRead} files searched:`;
  return [summary, ...results, ...(stopped ? [`[Search ${stopped}.]`] : [])].join('\n');
}

type LineMatcher = (lines: readonly string[], timeoutMs: number) => number[];

function buildMatcher(pattern: string, isRegex: boolean, ignoreCase: boolean): LineMatcher {
  if (!isRegex) {
    const needle = ignoreCase ? pattern.toLowerCase() : pattern;
    return (lines) => {
      const found: number[] = [];
      lines.forEach((line, index) => {
        if ((ignoreCase ? line.toLowerCase() : line).includes(needle)) found.push(index);
      });
      return found;
    };
  }
  let compiled: RegExp;
  try {
    compiled = new RegExp(pattern, ignoreCase ? 'iu' : 'u');
  } catch (error) {
    throw new EngramError('INVALID_INPUT', `Invalid regular expression: ${(error as Error).message}`, { cause: error });
  }
  const context = createContext({ pattern: compiled, lines: [] as readonly string[], found: [] as number[] });
  return (lines, timeoutMs) => {
    context.lines = lines;
    try {
      MATCH_LINES.runInContext(context, { timeout: Math.max(1, Math.floor(timeoutMs)) });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ERR_SCRIPT_EXECUTION_TIMEOUT') {
        throw new EngramError(
          'INVALID_INPUT',
          'The regular expression took too long (it may backtrack catastrophically); simplify it or search for plain text.',
          { cause: error },
        );
      }
      throw error;
    }
    return Array.from(context.found as number[]);
  };
}

/** A glob on the project-relative path (with "/") or, without "/", on the file name: `*`, `**`, `?`. */
function globMatcher(glob: string): (path: string) => boolean {
  let source = '';
  for (let index = 0; index < glob.length; index += 1) {
    const character = glob[index]!;
    if (character === '*' && glob[index + 1] === '*') {
      source += '.*';
      index += glob[index + 2] === '/' ? 2 : 1;
    } else if (character === '*') source += '[^/]*';
    else if (character === '?') source += '[^/]';
    else source += character.replace(/[.+^${}()|[\]\\]/g, '\\$&');
  }
  const compiled = new RegExp(`^${source}$`);
  return glob.includes('/')
    ? (path) => compiled.test(path)
    : (path) => compiled.test(path.slice(path.lastIndexOf('/') + 1));
}
