import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import { perSuite, perTest } from './per-test.js';
import { removeWhenIdle } from './remove-when-idle.js';

/** The built binary: tests run it exactly as users do (npm test builds first). */
export const ENGRAM_BINARY = fileURLToPath(new URL('../../dist/surfaces/cli/main.js', import.meta.url));

export interface EngramRun {
  code: number | null;
  stdout: string;
  stderr: string;
  /** stdout parsed as the one JSON document --json promises. */
  json<T = any>(): T;
}

export interface RunOptions {
  cwd: string;
  home: string;
  input?: string | Buffer;
  env?: Record<string, string | undefined>;
}

/** What a child process run to its end printed, and its exit code. */
export interface PipedRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `command` with exactly `env`, `input` on stdin (an empty stdin when there is none), to its end. */
export function runPiped(
  command: string,
  args: readonly string[],
  options: { cwd: string; env: NodeJS.ProcessEnv; input?: string | Buffer },
): Promise<PipedRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, [...args], { cwd: options.cwd, env: options.env, stdio: 'pipe' });
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => stdout.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
    // The child may stop reading stdin early (input over the size limit): that is not a test failure.
    child.stdin.on('error', () => undefined);
    child.on('error', reject);
    child.on('close', (code) =>
      resolve({ code, stdout: Buffer.concat(stdout).toString('utf8'), stderr: Buffer.concat(stderr).toString('utf8') }),
    );
    if (options.input !== undefined) child.stdin.end(options.input);
    else child.stdin.end();
  });
}

/** Runs `engram <args>` as a child process with its own ENGRAM_HOME and working directory. */
export async function runEngram(args: readonly string[], options: RunOptions): Promise<EngramRun> {
  const env: Record<string, string | undefined> = {
    PATH: process.env.PATH,
    HOME: options.home,
    ENGRAM_HOME: options.home,
    ...options.env,
  };
  for (const key of Object.keys(env)) if (env[key] === undefined) delete env[key];
  const run = await runPiped(process.execPath, [ENGRAM_BINARY, ...args], {
    cwd: options.cwd,
    env: env as NodeJS.ProcessEnv,
    ...(options.input !== undefined && { input: options.input }),
  });
  return {
    ...run,
    json() {
      try {
        return JSON.parse(run.stdout);
      } catch {
        throw new Error(`stdout is not one JSON document:\n${run.stdout}\nstderr:\n${run.stderr}`);
      }
    },
  };
}

/** `engram <args>` started in the workspace (its home as HOME and ENGRAM_HOME, nothing else but PATH), for a test that kills or waits on it. */
export function spawnEngram(
  workspace: Pick<Workspace, 'cwd' | 'home'>,
  args: readonly string[],
  stdio: StdioOptions = 'ignore',
): ChildProcess {
  return spawn(process.execPath, [ENGRAM_BINARY, ...args], {
    cwd: workspace.cwd,
    env: { PATH: process.env.PATH, HOME: workspace.home, ENGRAM_HOME: workspace.home },
    stdio,
  });
}

/** A fresh ENGRAM_HOME and working directory, and a runner bound to them. */
export interface Workspace {
  root: string;
  home: string;
  cwd: string;
  run(args: readonly string[], options?: Partial<RunOptions>): Promise<EngramRun>;
  /** Runs with --json, expects the exit code, and returns the parsed document. */
  json<T = any>(args: readonly string[], expectedCode?: number, options?: Partial<RunOptions>): Promise<T>;
  cleanup(): void;
}

/** Creates a workspace under the system temp folder (real path, so scopes from paths are stable). */
export function createWorkspace(): Workspace {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'engram-cli-')));
  const home = join(root, 'home');
  const cwd = join(root, 'work');
  mkdirSync(home);
  mkdirSync(cwd);
  const workspace: Workspace = {
    root,
    home,
    cwd,
    run: (args, options = {}) => runEngram(args, { cwd, home, ...options }),
    async json(args, expectedCode = 0, options = {}) {
      const result = await runEngram([...args, '--json'], { cwd, home, ...options });
      if (result.code !== expectedCode) {
        throw new Error(
          `engram ${args.join(' ')} exited ${result.code}, expected ${expectedCode}\nstdout: ${result.stdout}\nstderr: ${result.stderr}`,
        );
      }
      return result.json();
    },
    // A hook run here may have started a detached worker that still writes in the home.
    cleanup: () => removeWhenIdle(root),
  };
  return workspace;
}

/**
 * A fresh workspace for each test of the enclosing describe, removed after it. The object returned reads
 * through to the current test's workspace, so a describe can hold it in a const.
 */
export function useWorkspace(): Workspace {
  return perTest('a workspace', createWorkspace, (workspace) => workspace.cleanup());
}

/** As {@link useWorkspace}, but one workspace for all the tests of the enclosing `describe` (or file). */
export function useSuiteWorkspace(): Workspace {
  return perSuite('a workspace', createWorkspace, (workspace) => workspace.cleanup());
}

/** The environment that points engram's embedder at an OpenAI-compatible server at `baseUrl` (the hashed-words model, no retries). */
export function embedderEnv(baseUrl: string): Record<string, string> {
  return {
    ENGRAM_EMBEDDING_PROVIDER: 'openai-compatible',
    ENGRAM_EMBEDDING_BASE_URL: baseUrl,
    ENGRAM_EMBEDDING_MODEL: 'hashed-words',
    ENGRAM_EMBEDDING_API_KEY: 'sk-cli-test',
    ENGRAM_EMBEDDING_MAX_RETRIES: '0',
  };
}

/** `engram status` names `agent` installed with no problems (it "runs" or "loads" engram), and installing again changes nothing. */
export async function expectInstalledOnce(
  workspace: Workspace,
  agent: string,
  verb: 'runs' | 'loads' = 'runs',
): Promise<void> {
  expect((await workspace.json(['status']))[agent].problems).toEqual([]);
  expect((await workspace.run(['status'])).stdout).toMatch(new RegExp(`${agent}\\s+${verb} engram`));
  expect((await workspace.json(['install', agent])).changed).toEqual([]);
}

/** Makes a folder a git repository with an `origin` remote, writing .git/config by hand. */
export function makeGitRepository(directory: string, remote: string): void {
  mkdirSync(join(directory, '.git'), { recursive: true });
  writeFileSync(
    join(directory, '.git', 'config'),
    `[core]\n\trepositoryformatversion = 0\n[remote "origin"]\n\turl = ${remote}\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n`,
  );
}

/** The built modules reached from `entries` by their static imports and re-exports, and the packages they name (node: built-ins left out). */
export function staticImportsOf(entries: readonly string[]): { files: Set<string>; packages: Set<string> } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const visit = (file: string): void => {
    if (files.has(file)) return;
    files.add(file);
    const source = readFileSync(file, 'utf8');
    for (const match of source.matchAll(/^(?:import|export)\s[^;]*?from\s+'([^']+)';/gm)) {
      const specifier = match[1]!;
      if (specifier.startsWith('.')) visit(resolve(dirname(file), specifier));
      else if (!specifier.startsWith('node:')) packages.add(specifier);
    }
  };
  for (const entry of entries) visit(entry);
  return { files, packages };
}
