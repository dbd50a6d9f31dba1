import { spawn } from 'node:child_process';
import { EngramError } from '../../kernel/errors.js';

/**
 * Runs the user's own `git` as a child process: their credential helpers, ssh agent and url
 * rewrites apply, and engram holds no credential. Never a shell; never a prompt in the background
 * (GIT_TERMINAL_PROMPT=0: a missing credential fails fast instead of waiting for a person); no
 * hooks, no automatic gc; English messages (LC_ALL=C) so failures can be told apart; a time limit
 * that kills the whole process group.
 */

export interface GitRun {
  code: number;
  stdout: Buffer;
  stderr: string;
}

export interface GitOptions {
  /** The repository (`--git-dir`); none for `git init`. */
  gitDir?: string;
  timeoutMs: number;
  input?: string | Buffer;
  /** Let git ask on the terminal (a person ran `engram sync`); default false. */
  interactive?: boolean;
  /** More environment (author and committer of a commit). */
  env?: Record<string, string>;
  signal?: AbortSignal;
  /** Largest output kept; more fails the command. Default 1 GiB. */
  maxOutputBytes?: number;
}

// Variables that would point git at another repository, index or object store than the cache's
// (set when engram runs inside a git hook, for one).
const REPOSITORY_VARIABLES = [
  'GIT_DIR',
  'GIT_WORK_TREE',
  'GIT_INDEX_FILE',
  'GIT_OBJECT_DIRECTORY',
  'GIT_ALTERNATE_OBJECT_DIRECTORIES',
  'GIT_COMMON_DIR',
  'GIT_NAMESPACE',
  'GIT_PREFIX',
  'GIT_QUARANTINE_PATH',
  'GIT_REPLACE_REF_BASE',
  'GIT_GRAFT_FILE',
  'GIT_SHALLOW_FILE',
  'GIT_CEILING_DIRECTORIES',
  'GIT_DISCOVERY_ACROSS_FILESYSTEM',
  'GIT_LITERAL_PATHSPECS',
  'GIT_GLOB_PATHSPECS',
  'GIT_NOGLOB_PATHSPECS',
  'GIT_ICASE_PATHSPECS',
];

const CONFIG = [
  'core.hooksPath=/dev/null',
  'core.fsmonitor=false',
  'gc.auto=0',
  'maintenance.auto=false',
  'protocol.ext.allow=never',
  'protocol.fd.allow=never',
  'commit.gpgSign=false',
  // The remote is untrusted: malformed objects are refused at fetch.
  'fetch.fsckObjects=true',
];

export function gitEnvironment(extra: Record<string, string> = {}, interactive = false): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of REPOSITORY_VARIABLES) delete env[name];
  env.LC_ALL = 'C';
  env.LANGUAGE = 'C';
  if (!interactive) env.GIT_TERMINAL_PROMPT = '0';
  return { ...env, ...extra };
}

/** Runs git; resolves with its exit code and output (a non-zero code is the caller's to judge). */
export function runGit(args: readonly string[], options: GitOptions): Promise<GitRun> {
  const fullArgs = [
    ...CONFIG.flatMap((entry) => ['-c', entry]),
    ...(options.gitDir !== undefined ? [`--git-dir=${options.gitDir}`] : []),
    '--literal-pathspecs',
    ...args,
  ];
  const maxOutput = options.maxOutputBytes ?? 1024 * 1024 * 1024;
  return new Promise((resolve, reject) => {
    let child: ReturnType<typeof spawn>;
    try {
      child = spawn('git', fullArgs, {
        env: gitEnvironment(options.env, options.interactive),
        stdio: ['pipe', 'pipe', 'pipe'],
        // Its own process group: a timeout kills ssh and helpers git started, too.
        detached: true,
      });
    } catch (error) {
      reject(gitMissing(error));
      return;
    }
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    let outputBytes = 0;
    let failure: EngramError | undefined;
    const kill = (reason: EngramError): void => {
      failure ??= reason;
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
    };
    const timer = setTimeout(
      () =>
        kill(
          new EngramError(
            'REMOTE_UNAVAILABLE',
            `git ${args[0]} took longer than ${options.timeoutMs} ms and was stopped (setting sync.timeoutMs).`,
          ),
        ),
      options.timeoutMs,
    );
    timer.unref();
    const onAbort = (): void => kill(new EngramError('REMOTE_UNAVAILABLE', `git ${args[0]} was stopped.`));
    options.signal?.addEventListener('abort', onAbort, { once: true });
    child.stdout!.on('data', (chunk: Buffer) => {
      outputBytes += chunk.length;
      if (outputBytes > maxOutput) {
        kill(new EngramError('REMOTE_INVALID', `git ${args[0]} printed more than ${maxOutput} bytes.`));
        return;
      }
      stdout.push(chunk);
    });
    child.stderr!.on('data', (chunk: Buffer) => {
      if (stderr.reduce((total, part) => total + part.length, 0) < 64 * 1024) stderr.push(chunk);
    });
    child.stdin!.on('error', () => undefined);
    child.on('error', (error) => {
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
      reject(gitMissing(error));
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
      if (failure) {
        reject(failure);
        return;
      }
      resolve({ code: code ?? 1, stdout: Buffer.concat(stdout), stderr: Buffer.concat(stderr).toString('utf8') });
    });
    if (options.input !== undefined) child.stdin!.end(options.input);
    else child.stdin!.end();
  });
}

/** Runs git and returns its stdout, or throws `code` with git's last words. */
export async function git(
  args: readonly string[],
  options: GitOptions,
  code: 'REMOTE_UNAVAILABLE' | 'STORE_ERROR' = 'STORE_ERROR',
): Promise<Buffer> {
  const run = await runGit(args, options);
  if (run.code !== 0) throw gitFailed(args, run, code);
  return run.stdout;
}

export function gitFailed(
  args: readonly string[],
  run: GitRun,
  code: 'REMOTE_UNAVAILABLE' | 'STORE_ERROR',
): EngramError {
  const words = lastWords(run.stderr);
  return new EngramError(code, `git ${args[0]} failed (exit ${run.code})${words ? `: ${words}` : ''}`, {
    details: { exitCode: run.code },
  });
}

/** git's last lines of stderr, on one line, without anything that looks like a credential in a URL. */
export function lastWords(stderr: string): string {
  return stderr
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line.length > 0)
    .slice(-3)
    .join(' ')
    .replace(/(\w+:\/\/)[^/@\s]*@/g, '$1')
    .slice(0, 500);
}

function gitMissing(error: unknown): EngramError {
  return new EngramError(
    'CONFIG_INVALID',
    `Sync runs git, which could not be started (${(error as NodeJS.ErrnoException).code ?? String(error)}): install git and put it on PATH.`,
    { cause: error },
  );
}
