import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect } from 'vitest';
import type { LanguageModelServer } from '../../src/testing/loopback-model-server.js';
import { perTest } from './per-test.js';
import { removeWhenIdle } from './remove-when-idle.js';
import type { AgentCli } from './agent-clis.js';
import { HOOK_LAUNCHER } from './claude-code-harness.js';
import { ENGRAM_BINARY } from './cli-harness.js';

// What the agents' e2e files (test/agents/*-engram.test.ts) share: a process run to its end (killed
// past its time), and Claude Code's prompt hook run as Claude Code runs it, the "other agent" a
// memory said in one agent must reach.

export interface ProcessRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end with only `env`; killed after `timeoutMs`; `input` on stdin, else none. */
export function runProcess(
  command: string,
  args: readonly string[],
  options: { cwd: string; env: Record<string, string>; input?: string; timeoutMs: number },
): Promise<ProcessRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: options.cwd,
      env: options.env,
      stdio: [options.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    if (options.input !== undefined) {
      child.stdin!.on('error', () => undefined);
      child.stdin!.end(options.input);
    }
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Claude Code's UserPromptSubmit hook (the plugin's command) in a new session `session` in `cwd`. */
export function claudeCodePrompt(
  prompt: string,
  options: { cwd: string; env: Record<string, string>; session: string },
): Promise<ProcessRun> {
  return runProcess(process.execPath, [HOOK_LAUNCHER, 'hook', 'user-prompt-submit', '--from', 'engram-plugin'], {
    cwd: options.cwd,
    env: options.env,
    input: JSON.stringify({
      session_id: options.session,
      cwd: options.cwd,
      hook_event_name: 'UserPromptSubmit',
      prompt,
    }),
    timeoutMs: 60_000,
  });
}

/** Waits until `engram list --json` (run by `list`) names `text`, polling each second up to `timeoutMs`. */
export async function waitForMemory(
  list: () => Promise<ProcessRun>,
  text: string,
  timeoutMs = 90_000,
): Promise<string> {
  let stored = '';
  for (let waited = 0; waited < timeoutMs && !stored.includes(text); waited += 1_000) {
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    stored = (await list()).stdout;
  }
  return stored;
}

/** An agent e2e file's temp world: a HOME and two projects under one folder removed after the file. */
export interface AgentTestWorld {
  root: string;
  home: string;
  projectA: string;
  projectB: string;
  /** Makes `folders` and the two projects, each project a git repository. */
  createFolders(folders: readonly string[]): void;
}

export function agentTestWorld(agent: string): AgentTestWorld {
  const root = realpathSync(mkdtempSync(join(tmpdir(), `engram-${agent}-`)));
  afterAll(() => removeWhenIdle(root));
  const projectA = join(root, 'alpha');
  const projectB = join(root, 'beta');
  return {
    root,
    home: join(root, 'home'),
    projectA,
    projectB,
    createFolders(folders) {
      for (const folder of [...folders, projectA, projectB]) mkdirSync(folder, { recursive: true });
      for (const project of [projectA, projectB]) spawnSync('git', ['init', '-q', project]);
    },
  };
}

/** A loopback model server started before each test of the enclosing `describe` and closed after it (see {@link perTest}). */
export function useModelServer(start: () => Promise<LanguageModelServer>): LanguageModelServer {
  return perTest('the loopback model server', start, (server) => server.close());
}

/** What an agent sent the loopback server since request number `before`, as one text. */
export function requestBodiesSince(server: LanguageModelServer, before: number): string {
  return server.requests
    .slice(before)
    .map((request) => request.rawBody)
    .join('\n');
}

/** One agent e2e file's runs, each with the file's env and killed past `timeoutMs`. */
export interface AgentRuns {
  run(command: string, args: readonly string[], cwd: string, input?: string): Promise<ProcessRun>;
  /** engram's built CLI. */
  engram(args: readonly string[], cwd: string): Promise<ProcessRun>;
  /** engram's built CLI, which must exit 0 (its stderr says why not). */
  engramOk(args: readonly string[], cwd: string): Promise<ProcessRun>;
  /** The agent run headless on `prompt` (it must exit 0): what it sent the server, and its stdout. */
  ask(prompt: string, cwd: string): Promise<{ body: string; stdout: string }>;
  /** Claude Code's prompt hook in a new session, as {@link claudeCodePrompt}. */
  claudeCode(prompt: string, cwd: string, session: string): Promise<ProcessRun>;
  /** Waits until `engram list` in `cwd` names `text` (as {@link waitForMemory}); fails if it never does. */
  expectStored(text: string, cwd: string): Promise<void>;
  /** Claude Code's next prompt hook (a new session) in `projects.given` gets `text` from memory; in `projects.notGiven` not. */
  expectClaudeCodeGiven(text: string, projects: { given: string; notGiven: string }): Promise<void>;
  /** With the store made corrupt, the agent in `project` answers as before, and the hook log says the agent's hook failed. */
  expectCorruptStoreFailsOpen(project: string): Promise<void>;
}

export function agentRuns(options: {
  cli: AgentCli | undefined;
  /** The HOME the agent and engram run in. */
  home: string;
  /** The agent's arguments (after its own leading ones) for one headless prompt. */
  promptArgs: (prompt: string) => readonly string[];
  env: () => Record<string, string>;
  server: () => LanguageModelServer;
  timeoutMs: number;
}): AgentRuns {
  const run = (command: string, args: readonly string[], cwd: string, input?: string): Promise<ProcessRun> =>
    runProcess(command, args, {
      cwd,
      env: options.env(),
      ...(input !== undefined && { input }),
      timeoutMs: options.timeoutMs,
    });
  const engram = (args: readonly string[], cwd: string) => run(process.execPath, [ENGRAM_BINARY, ...args], cwd);
  const ask = async (prompt: string, cwd: string): Promise<{ body: string; stdout: string }> => {
    const cli = options.cli;
    if (cli === undefined) throw new Error('the agent CLI is not installed');
    const server = options.server();
    const before = server.requests.length;
    const result = await run(cli.command, [...cli.args, ...options.promptArgs(prompt)], cwd);
    expect(result.code, result.stderr).toBe(0);
    return { body: requestBodiesSince(server, before), stdout: result.stdout };
  };
  const claudeCode = (prompt: string, cwd: string, session: string): Promise<ProcessRun> =>
    claudeCodePrompt(prompt, { cwd, env: options.env(), session });
  return {
    run,
    engram,
    async engramOk(args, cwd) {
      const result = await engram(args, cwd);
      expect(result.code, result.stderr).toBe(0);
      return result;
    },
    ask,
    claudeCode,
    async expectStored(text, cwd) {
      expect(await waitForMemory(() => engram(['list', '--json'], cwd), text)).toContain(text);
    },
    async expectClaudeCodeGiven(text, projects) {
      const question = 'What is the release branch called?';
      const given = await claudeCode(question, projects.given, 'claude-a');
      expect(given.code).toBe(0);
      expect(given.stdout).toContain(text);
      const notGiven = await claudeCode(question, projects.notGiven, 'claude-b');
      expect(notGiven.code).toBe(0);
      expect(notGiven.stdout).not.toContain(text);
    },
    async expectCorruptStoreFailsOpen(project) {
      const plain = await ask('Say hello.', project);
      corruptStore(options.home);
      const broken = await ask('Say hello.', project);
      expect(broken.stdout).toBe(plain.stdout);
      expect(hookLogOf(options.home)).toMatch(new RegExp(`"agent":"${options.cli?.name}"[^\\n]*"status":"failed"`));
    },
  };
}

/** The fact each agent e2e file remembers in project A and asks about in A and B. */
export const STAGING_FACT = 'The staging database listens on port 6543 (host quartz-heron).';

/** engram's hook log in the agent's HOME. */
export function hookLogOf(home: string): string {
  return readFileSync(join(home, '.engram', 'logs', 'claude-code-hooks.log'), 'utf8');
}

/** Overwrites the store engram keeps in `home` with junk: a corrupt store (there must be one). */
export function corruptStore(home: string): void {
  const database = readdirSync(join(home, '.engram')).find((name) => name.endsWith('.db'));
  expect(database).toBeDefined();
  writeFileSync(join(home, '.engram', database!), 'not a database '.repeat(500));
}

/** Codex's config.toml lines for a model provider "loop" at `url` (key in LOOP_API_KEY), no telemetry. */
export function codexLoopConfig(url: string): string[] {
  return [
    'model = "gpt-test"',
    'model_provider = "loop"',
    '',
    '[model_providers.loop]',
    'name = "loop"',
    `base_url = "${url}"`,
    "env_key = 'LOOP_API_KEY'",
    'wire_api = "responses"',
    '',
    '[analytics]',
    'enabled = false # no telemetry',
  ];
}

/** OpenCode's settings for a provider "loop" (OpenAI-compatible, at `url`) as the model, no sharing or autoupdate. */
export function openCodeLoopSettings(url: string): Record<string, unknown> {
  return {
    model: 'loop/loop-model',
    share: 'disabled',
    autoupdate: false,
    provider: {
      loop: {
        npm: '@ai-sdk/openai-compatible',
        name: 'Loop',
        options: { baseURL: url, apiKey: 'test' },
        models: { 'loop-model': { name: 'Loop model' } },
      },
    },
  };
}
