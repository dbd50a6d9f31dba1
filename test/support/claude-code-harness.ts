import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, realpathSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startAnthropicMessagesServer } from '../../src/testing/anthropic-messages-server.js';
import type { LanguageModelServer, RecordedModelRequest } from '../../src/testing/loopback-model-server.js';
import { runEngram, type EngramRun } from './cli-harness.js';
import { CLAUDE_FULL_SESSION_ENV, claudeFullSessionArgs } from './claude-code-headless.js';
import { perSuite, readThrough } from './per-test.js';
import { removeWhenIdle } from './remove-when-idle.js';

/**
 * The real Claude Code CLI (the pinned dev dependency) run headless against engram's loopback
 * Messages server, with HOME in a temp folder (test/support/claude-code-cli.md has the facts).
 */

const REPOSITORY = fileURLToPath(new URL('../..', import.meta.url));
export const PLUGIN_DIR = join(REPOSITORY, 'plugins', 'engram');
export const HOOK_LAUNCHER = join(PLUGIN_DIR, 'scripts', 'engram.mjs');

/** The platform binary (works with or without the package's postinstall), else the .bin link. */
export function claudeBinary(): string {
  const require = createRequire(import.meta.url);
  const platform = `@anthropic-ai/claude-code-${process.platform}-${process.arch}`;
  try {
    const binary = join(dirname(require.resolve(`${platform}/package.json`)), 'claude');
    if (existsSync(binary)) return binary;
  } catch {
    // Not that platform package.
  }
  return join(REPOSITORY, 'node_modules', '.bin', 'claude');
}

/** The Messages server as Claude Code needs it: system messages, path prefixes, compaction summaries. */
export async function startClaudeCodeServer(): Promise<LanguageModelServer> {
  return startAnthropicMessagesServer({
    claudeCode: true,
    respond: (request) =>
      JSON.stringify(request.body).includes('create a detailed summary of the conversation')
        ? { message: { text: '<analysis>short</analysis>\n<summary>The user greeted the assistant.</summary>' } }
        : undefined,
  });
}

export interface ClaudeRun {
  code: number | null;
  stdout: string;
  stderr: string;
  result?: { is_error?: boolean; result?: string; session_id?: string };
}

export interface ClaudeWorld {
  root: string;
  home: string;
  engramHome: string;
  env: Record<string, string>;
  /** A project folder under the root (created). */
  project(name: string): string;
  claude(
    args: readonly string[],
    options: { cwd: string; prefix: string; env?: Record<string, string> },
  ): Promise<ClaudeRun>;
  engram(args: readonly string[], options: { cwd: string; env?: Record<string, string> }): Promise<EngramRun>;
  cleanup(): void;
}

/** A temp HOME (Claude Code's and engram's), with runners for `claude` and `engram` in it. */
export function createClaudeWorld(server: LanguageModelServer): ClaudeWorld {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'engram-cc-')));
  const home = join(root, 'home');
  mkdirSync(home);
  const engramHome = join(home, '.engram');
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    HOME: home,
    ENGRAM_HOME: engramHome,
    TERM: 'dumb',
    ANTHROPIC_API_KEY: 'dummy',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    ...CLAUDE_FULL_SESSION_ENV,
    // Offline extraction: explicit statements only, so what is stored does not depend on a model's answer.
    ENGRAM_MODEL_PROVIDER: 'none',
  };
  return {
    root,
    home,
    engramHome,
    env,
    project(name) {
      const path = join(root, name);
      mkdirSync(path, { recursive: true });
      return path;
    },
    claude(args, options) {
      const binary = claudeBinary();
      return runProcess(binary, ['-p', ...claudeFullSessionArgs(binary), ...args, '--output-format', 'json'], {
        cwd: options.cwd,
        env: { ...env, ANTHROPIC_BASE_URL: `${server.url}/${options.prefix}`, ...options.env },
      });
    },
    engram(args, options) {
      return runEngram(args, { cwd: options.cwd, home: engramHome, env: { ...env, ...options.env } });
    },
    cleanup: () => removeWhenIdle(root),
  };
}

function runProcess(
  command: string,
  args: readonly string[],
  options: { cwd: string; env: Record<string, string> },
): Promise<ClaudeRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, [...args], { cwd: options.cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe'] });
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => stdout.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
    child.on('error', reject);
    child.on('close', (code) => {
      const out = Buffer.concat(stdout).toString('utf8');
      let result: ClaudeRun['result'];
      try {
        result = JSON.parse(out) as ClaudeRun['result'];
      } catch {
        result = undefined;
      }
      resolve({ code, stdout: out, stderr: Buffer.concat(stderr).toString('utf8'), ...(result && { result }) });
    });
  });
}

/**
 * A loopback Messages server (`start`, by default {@link startClaudeCodeServer}) and a Claude Code world on it,
 * made before the tests of the enclosing `describe` and removed after them; both read through to the open ones.
 */
export function useClaudeWorld(start: () => Promise<LanguageModelServer> = startClaudeCodeServer): {
  server: LanguageModelServer;
  world: ClaudeWorld;
} {
  const opened = perSuite(
    'the Claude Code world',
    async () => {
      const server = await start();
      return { server, world: createClaudeWorld(server) };
    },
    async ({ server, world }) => {
      world.cleanup();
      await server.close();
    },
  );
  return { server: readThrough(() => opened.server), world: readThrough(() => opened.world) };
}

/** The main-turn requests of one run (its ANTHROPIC_BASE_URL prefix). */
export function requestsOf(server: LanguageModelServer, prefix: string): RecordedModelRequest[] {
  return server.requests.filter((request) => request.path.startsWith(`/${prefix}/`));
}

/** The hook context lines Claude Code put in a request's role:"system" messages. */
export function hookContext(request: RecordedModelRequest, event: 'SessionStart' | 'UserPromptSubmit'): string {
  const body = request.body as { messages?: Array<{ role: string; content: unknown }> };
  const texts = (body.messages ?? [])
    .filter((message) => message.role === 'system')
    .map((message) => JSON.stringify(message.content));
  const marker = `${event} hook additional context:`;
  return texts.filter((text) => text.includes(marker)).join('\n');
}

/** Polls `check` until it returns a value (the detached worker runs after claude exits). */
export async function eventually<T>(check: () => Promise<T | undefined>, tries = 60, pauseMs = 250): Promise<T> {
  for (let attempt = 0; attempt < tries; attempt += 1) {
    const value = await check();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, pauseMs));
  }
  throw new Error(`gave up after ${tries} tries`);
}
