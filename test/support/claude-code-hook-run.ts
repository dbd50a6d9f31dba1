import { readFileSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import { runPiped, type Workspace } from './cli-harness.js';
import { eventually, HOOK_LAUNCHER, PLUGIN_DIR } from './claude-code-harness.js';

// One Claude Code hook run as Claude Code runs it, and the transcripts' lines, for the hook tests.

export interface HookRun {
  code: number | null;
  stdout: string;
}

/** A hook's environment in these tests: the workspace's home as HOME and ENGRAM_HOME, no model, then `env`. */
export function hookEnv(workspace: Workspace, env: Record<string, string> = {}): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '',
    HOME: workspace.home,
    ENGRAM_HOME: workspace.home,
    ENGRAM_MODEL_PROVIDER: 'none',
    ...env,
  };
}

/** Runs `command` in the workspace with `input` on stdin: its exit code, stdout and stderr. */
export function runWithInput(
  workspace: Workspace,
  command: string,
  args: readonly string[],
  env: Record<string, string>,
  input: string,
): Promise<HookRun & { stderr: string }> {
  return runPiped(command, args, { cwd: workspace.cwd, env, input });
}

/** Runs one hook as Claude Code does: the launcher, the event's JSON on stdin. */
export function runHook(
  workspace: Workspace,
  event: string,
  input: string,
  env: Record<string, string> = {},
  /** After the event: `--agent codex` runs another agent's protocol. */
  extra: readonly string[] = [],
): Promise<HookRun> {
  const args = [HOOK_LAUNCHER, 'hook', event, ...(extra.length > 0 ? extra : ['--from', 'engram-plugin'])];
  return runWithInput(workspace, process.execPath, args, hookEnv(workspace, env), input).then(({ code, stdout }) => ({
    code,
    stdout,
  }));
}

/** A 65 MiB transcript (sparse) in the workspace, past what a hook reads; its path. */
export function hugeTranscript(workspace: Workspace): string {
  const huge = join(workspace.root, 'huge.jsonl');
  writeFileSync(huge, '');
  truncateSync(huge, 65 * 1024 * 1024);
  return huge;
}

/** Waits (up to 120 tries) until `engram list` in the workspace has a memory holding each of `markers`; every memory's text. */
export function eventuallyListed(workspace: Workspace, markers: readonly string[]): Promise<string[]> {
  return eventually(async () => {
    const list = await workspace.json(['list']);
    const texts = ((list.memories ?? list) as Array<{ content: string }>).map((memory) => memory.content);
    return markers.every((marker) => texts.some((text) => text.includes(marker))) ? texts : undefined;
  }, 120);
}

/** A hook's stdout is nothing or one JSON document of Claude Code's hook output. */
export function expectValidOutput(run: HookRun): void {
  expect(run.code).toBe(0);
  if (run.stdout.trim() === '') return;
  const value = JSON.parse(run.stdout) as { hookSpecificOutput?: { hookEventName?: string } };
  expect(typeof value.hookSpecificOutput?.hookEventName).toBe('string');
}

export function logLines(workspace: Workspace): Array<{ event: string; status: string; message: string }> {
  try {
    return readFileSync(join(workspace.home, 'logs', 'claude-code-hooks.log'), 'utf8')
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line));
  } catch {
    return [];
  }
}

export const line = (record: Record<string, unknown>): string => JSON.stringify(record);
export function userLine(
  uuid: string,
  parent: string | null,
  text: string,
  extra: Record<string, unknown> = {},
): string {
  return line({
    type: 'user',
    uuid,
    parentUuid: parent,
    sessionId: 'sess-1',
    timestamp: '2026-12-01T10:00:00.000Z',
    version: '2.1.332',
    isSidechain: false,
    message: { role: 'user', content: text },
    ...extra,
  });
}
export function assistantLine(uuid: string, parent: string, text: string, extra: Record<string, unknown> = {}): string {
  return line({
    type: 'assistant',
    uuid,
    parentUuid: parent,
    sessionId: 'sess-1',
    timestamp: '2026-12-01T10:00:01.000Z',
    isSidechain: false,
    message: { id: `msg_${uuid}`, role: 'assistant', content: [{ type: 'text', text }] },
    ...extra,
  });
}

/** A two-line transcript of `session` in `folder` (the user says `statement`, the assistant notes it); its path. */
export function writeTranscript(folder: string, session: string, statement: string): string {
  const path = join(folder, `${session}.jsonl`);
  const lines = [userLine('u1', null, statement), assistantLine('a1', 'u1', 'Noted.')].map((text) =>
    text.replaceAll('"sess-1"', JSON.stringify(session)),
  );
  writeFileSync(path, `${lines.join('\n')}\n`);
  return path;
}

const HOOK_NAMES: Record<string, string> = {
  'session-start': 'SessionStart',
  'user-prompt-submit': 'UserPromptSubmit',
  stop: 'Stop',
  'pre-compact': 'PreCompact',
  'session-end': 'SessionEnd',
};

/** The command the plugin's hooks.json gives an event, as Claude Code reads it. */
export function installedHookCommand(event: string): string {
  const hooks = JSON.parse(readFileSync(join(PLUGIN_DIR, 'hooks', 'hooks.json'), 'utf8')) as {
    hooks: Record<string, Array<{ hooks: Array<{ command: string }> }>>;
  };
  return hooks.hooks[HOOK_NAMES[event]!]![0]!.hooks[0]!.command;
}

/** Runs one hook as the installed plugin does: hooks.json's command through a shell, the event's JSON on stdin. */
export function runInstalledHook(
  workspace: Workspace,
  event: string,
  input: string,
  env: Record<string, string> = {},
): Promise<HookRun & { stderr: string }> {
  const shellEnv = hookEnv(workspace, { CLAUDE_PLUGIN_ROOT: PLUGIN_DIR, ...env });
  return runWithInput(workspace, '/bin/sh', ['-c', installedHookCommand(event)], shellEnv, input);
}
