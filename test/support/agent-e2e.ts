import { spawn } from 'node:child_process';
import { mkdtempSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import type { LanguageModelServer } from '../../src/testing/loopback-model-server.js';
import { removeWhenIdle } from './remove-when-idle.js';
import { HOOK_LAUNCHER } from './claude-code-harness.js';

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
export function agentTestWorld(agent: string): { root: string; home: string; projectA: string; projectB: string } {
  const root = realpathSync(mkdtempSync(join(tmpdir(), `engram-${agent}-`)));
  afterAll(() => removeWhenIdle(root));
  return { root, home: join(root, 'home'), projectA: join(root, 'alpha'), projectB: join(root, 'beta') };
}

/** What an agent sent the loopback server since request number `before`, as one text. */
export function requestBodiesSince(server: LanguageModelServer, before: number): string {
  return server.requests
    .slice(before)
    .map((request) => request.rawBody)
    .join('\n');
}
