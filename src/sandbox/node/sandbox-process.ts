import { execFile } from 'node:child_process';
import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import { delimiter, dirname, isAbsolute, join } from 'node:path';
import { insideOf, type SandboxRoot } from './sandbox-paths.js';
import { GIT_SAFETY_ENVIRONMENT } from '../sandbox-git-programs.js';

export interface ProcessOptions {
  cwd: string;
  env: Record<string, string>;
  timeoutMs: number;
  maxOutputBytes: number;
}

export interface ProcessResult {
  stdout: string;
  stderr: string;
  /** The exit code, or null when the process was killed. */
  exitCode: number | null;
  timedOut: boolean;
  /** Output passed maxOutputBytes: the process was stopped and its output cut. */
  truncated: boolean;
}

/**
 * Runs an executable with execFile (never a shell): stdin closed, killed with SIGKILL past the
 * timeout or once its output passes the cap.
 */
export function runProcess(
  executable: string,
  args: readonly string[],
  options: ProcessOptions,
): Promise<ProcessResult> {
  return new Promise((resolve) => {
    const child = execFile(
      executable,
      [...args],
      {
        cwd: options.cwd,
        env: options.env,
        timeout: options.timeoutMs,
        maxBuffer: options.maxOutputBytes,
        killSignal: 'SIGKILL',
        encoding: 'buffer',
        windowsHide: true,
        shell: false,
      },
      (error, stdout, stderr) => {
        const failure = error as (NodeJS.ErrnoException & { killed?: boolean; code?: number | string }) | null;
        const truncated = failure?.code === 'ERR_CHILD_PROCESS_STDIO_MAXBUFFER';
        const timedOut = !truncated && failure?.killed === true;
        const exitCode = failure === null ? 0 : typeof failure.code === 'number' ? failure.code : null;
        resolve({ stdout: stdout.toString('utf8'), stderr: stderr.toString('utf8'), exitCode, timedOut, truncated });
      },
    );
    // A command waiting for input (grep with no file) sees end of input at once instead of hanging.
    child.stdin?.end();
  });
}

/**
 * Finds an executable by name on PATH, skipping relative PATH entries and folders inside the
 * project, so a file the project ships (or a model wrote) can never stand in for `ls` or `git`.
 */
export async function findExecutable(
  name: string,
  pathVariable: string | undefined,
  root: SandboxRoot,
): Promise<string | undefined> {
  for (const folder of (pathVariable ?? '').split(delimiter)) {
    if (!isAbsolute(folder) || insideOf(root.real, folder) !== undefined || insideOf(root.given, folder) !== undefined)
      continue;
    const candidate = join(folder, name);
    try {
      if (!(await stat(candidate)).isFile()) continue;
      await access(candidate, constants.X_OK);
      return candidate;
    } catch {
      // Not here; try the next folder.
    }
  }
  return undefined;
}

/**
 * The environment a sandboxed command gets, built from nothing (no GIT_DIR, GIT_CONFIG_*, GIT_SSH… of
 * the parent): a trusted PATH, no credentials, no pager, no optional git locks, no git config but the
 * repository's own, and git's repository search stopped at the project root.
 */
export function sandboxEnvironment(
  parent: Record<string, string | undefined>,
  root: SandboxRoot,
): Record<string, string> {
  const path = (parent.PATH ?? '')
    .split(delimiter)
    .filter(
      (folder) =>
        isAbsolute(folder) && insideOf(root.real, folder) === undefined && insideOf(root.given, folder) === undefined,
    )
    .join(delimiter);
  return {
    PATH: path,
    ...(parent.HOME !== undefined && { HOME: parent.HOME }),
    LANG: 'C.UTF-8',
    LC_ALL: 'C.UTF-8',
    TERM: 'dumb',
    NO_COLOR: '1',
    PAGER: 'cat',
    GIT_PAGER: 'cat',
    // git status would otherwise refresh and write the index: read-only means nothing on disk changes.
    GIT_OPTIONAL_LOCKS: '0',
    // No system or global git config, no transport: see GIT_SAFETY_ENVIRONMENT.
    ...GIT_SAFETY_ENVIRONMENT,
    // A project inside a larger repository must not reach it: git looks for .git in the root and no higher.
    ...(dirname(root.real) !== root.real && { GIT_CEILING_DIRECTORIES: dirname(root.real) }),
  };
}
