import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { hookServerSocket } from '../../../src/surfaces/claude-code/hook-server-paths.js';
import { hookServerStatus } from '../../../src/surfaces/claude-code/hook-server-status.js';
import { createWorkspace, type Workspace } from '../../support/cli-harness.js';
import { eventually, HOOK_LAUNCHER, PLUGIN_DIR } from '../../support/claude-code-harness.js';
import { hookEnv, line, logLines, runHook, runWithInput } from '../../support/claude-code-hook-run.js';

// The resident hook server (hook-server.ts) and its sh client (hook.sh's ask mode), as real
// processes on a real unix socket: the client's answer is the Node hook's, byte for byte, and
// nothing waits on a server that is not there.

const CLIENT = join(PLUGIN_DIR, 'scripts', 'hook.sh');
const AGENTS = ['claude-code', 'codex', 'copilot', 'gemini', 'qwen', 'opencode'] as const;

function baseEnv(workspace: Workspace, env: Record<string, string> = {}): Record<string, string> {
  // A loaded machine must not turn an answer into a deadline's empty one.
  return hookEnv(workspace, { ENGRAM_HOOK_DEADLINE_MS: '30000', ...env });
}

/** The installed command's form: `sh hook.sh --node <node> hook <event> --agent <agent>` (Claude Code: `sh hook.sh <event>`). */
function runClient(
  workspace: Workspace,
  agent: string,
  event: string,
  input: string,
  env: Record<string, string> = {},
  client = CLIENT,
) {
  const args =
    agent === 'claude-code' ? [client, event] : [client, '--node', process.execPath, 'hook', event, '--agent', agent];
  return runWithInput(workspace, 'sh', args, baseEnv(workspace, env), input);
}

/** The Node hook alone, as the agent's old command ran it. */
function runNode(workspace: Workspace, agent: string, event: string, input: string, env: Record<string, string> = {}) {
  return runHook(
    workspace,
    event,
    input,
    { ENGRAM_HOOK_SERVER: '0', ENGRAM_HOOK_DEADLINE_MS: '30000', ...env },
    agent === 'claude-code' ? [] : ['--agent', agent],
  );
}

function startServer(workspace: Workspace, env: Record<string, string> = {}): ChildProcess {
  const child = spawn(process.execPath, [HOOK_LAUNCHER, 'hook', 'serve'], {
    cwd: workspace.cwd,
    env: baseEnv(workspace, env),
    stdio: 'ignore',
  });
  child.on('error', () => undefined);
  return child;
}

function exited(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

const serverStatus = (workspace: Workspace) => hookServerStatus(workspace.home, 2_000);
const ready = (workspace: Workspace) => eventually(() => serverStatus(workspace), 80, 250);

/** A process that listens on the socket path and then is killed (its socket file stays), or that accepts and never answers. */
function fakeServer(workspace: Workspace): ChildProcess {
  const socket = hookServerSocket(workspace.home);
  const code = `const fs=require('fs');fs.mkdirSync(require('path').dirname(${JSON.stringify(socket)}),{recursive:true});require('net').createServer(()=>{}).listen(${JSON.stringify(socket)},()=>{console.log('up')});`;
  const child = spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'pipe', 'ignore'] });
  return child;
}

async function listening(child: ChildProcess): Promise<void> {
  await new Promise<void>((resolve) => child.stdout!.once('data', () => resolve()));
}

function prompt(agent: string, session: string, cwd: string, text: string): string {
  if (agent === 'copilot') return line({ sessionId: session, cwd, prompt: text, timestamp: 1 });
  return line({ session_id: session, cwd, prompt: text, submitted_prompt: text, hook_event_name: 'x' });
}

function sessionStart(agent: string, session: string, cwd: string): string {
  if (agent === 'copilot') return line({ sessionId: session, cwd, source: 'new', timestamp: 1 });
  return line({ session_id: session, cwd, source: 'startup' });
}

/**
 * The sh client's prompt hook for `agent` (the server not started for it) answers what the Node hook answers,
 * and the log has one fallback line that says `reason`; the answer.
 */
async function expectNodeFallback(workspace: Workspace, agent: string, reason: string): Promise<string> {
  const input = (session: string) => prompt(agent, session, workspace.cwd, 'what is the release branch named?');
  const expected = await runNode(workspace, agent, 'user-prompt-submit', input('sess-expected'));
  const run = await runClient(workspace, agent, 'user-prompt-submit', input('sess-a'), { ENGRAM_HOOK_SERVER: '0' });
  expect(run.stdout).toBe(expected.stdout);
  const fallback = logLines(workspace).filter((entry) => entry.status === 'fallback');
  expect(fallback).toHaveLength(1);
  expect(fallback[0]!.message).toContain(reason);
  return expected.stdout;
}

describe('hook server', () => {
  let workspace: Workspace;
  const children: ChildProcess[] = [];
  beforeEach(() => {
    workspace = createWorkspace();
  });
  afterEach(async () => {
    for (const child of children.splice(0)) child.kill('SIGKILL');
    // A server a hook started: stopped by its pid (the lock).
    const lock = join(workspace.home, 'spool', 'worker-hookserver.pid');
    const pid = existsSync(lock) ? Number(readFileSync(lock, 'utf8')) : NaN;
    if (pid > 0) {
      try {
        process.kill(pid, 'SIGTERM');
      } catch {
        // Gone already.
      }
    }
    workspace.cleanup();
  });

  it("answers every agent's prompt and session start with the Node hook's bytes", async () => {
    await workspace.run(['remember', 'The release branch is named ship-it.', '--type', 'project']);
    await workspace.run(['remember', 'Always run the linter before committing.', '--type', 'feedback']);
    const server = startServer(workspace);
    children.push(server);
    await ready(workspace);
    for (const agent of AGENTS) {
      for (const event of ['session-start', 'user-prompt-submit']) {
        const input = (session: string): string =>
          event === 'session-start'
            ? sessionStart(agent, session, workspace.cwd)
            : prompt(agent, session, workspace.cwd, 'what is the release branch named?');
        const viaServer = await runClient(workspace, agent, event, input(`${agent}-${event}-server`));
        const viaNode = await runNode(workspace, agent, event, input(`${agent}-${event}-node`));
        expect(viaServer.code).toBe(0);
        expect(viaNode.stdout).not.toBe('');
        expect(viaServer.stdout, `${agent} ${event}`).toBe(viaNode.stdout);
      }
    }
    // Every answer came from the server (none from a fallback Node hook).
    expect((await serverStatus(workspace))!.requests).toBe(AGENTS.length * 2);
    expect(logLines(workspace).filter((entry) => entry.status === 'fallback')).toEqual([]);
  });

  it('an agent installed by an earlier engram (its command names hook-queue.sh, the old name) gets the same answer', async () => {
    await workspace.run(['remember', 'The release branch is named ship-it.', '--type', 'project']);
    children.push(startServer(workspace));
    await ready(workspace);
    const input = (session: string) => prompt('codex', session, workspace.cwd, 'what is the release branch named?');
    const current = await runClient(workspace, 'codex', 'user-prompt-submit', input('sess-new-name'));
    const legacy = join(PLUGIN_DIR, 'scripts', 'hook-queue.sh');
    const old = (await runClient(workspace, 'codex', 'user-prompt-submit', input('sess-old-name'), {}, legacy)).stdout;
    expect(current.stdout).toContain('ship-it');
    expect(old).toBe(current.stdout);
    expect((await serverStatus(workspace))!.requests).toBe(2);
  });

  it('shares the surfaced set: a memory shown through the server is not shown again by the Node hook', async () => {
    await workspace.run(['remember', 'The release branch is named ship-it.', '--type', 'project']);
    children.push(startServer(workspace));
    await ready(workspace);
    const input = prompt('claude-code', 'sess-shared', workspace.cwd, 'what is the release branch named?');
    const first = await runClient(workspace, 'claude-code', 'user-prompt-submit', input);
    expect(first.stdout).toContain('ship-it');
    const again = await runNode(workspace, 'claude-code', 'user-prompt-submit', input);
    expect(again.stdout).not.toContain('ship-it');
  });

  it('answers through the Node hook with no server, and that hook starts one for next time', async () => {
    await workspace.run(['remember', 'The release branch is named ship-it.', '--type', 'project']);
    const input = (session: string) => prompt('codex', session, workspace.cwd, 'what is the release branch named?');
    const expected = await runNode(workspace, 'codex', 'user-prompt-submit', input('sess-expected'));
    expect(expected.stdout).toContain('ship-it');
    const first = await runClient(workspace, 'codex', 'user-prompt-submit', input('sess-a'));
    expect(first.stdout).toBe(expected.stdout);
    // No server ran: nothing wrong, so no log line.
    expect(logLines(workspace).filter((entry) => entry.status === 'fallback')).toEqual([]);
    await ready(workspace);
    const second = await runClient(workspace, 'codex', 'user-prompt-submit', input('sess-b'));
    expect(second.stdout).toBe(expected.stdout);
    expect((await serverStatus(workspace))!.requests).toBe(1);
  });

  it('answers through the Node hook past a stale socket file, and says why in the log', async () => {
    await workspace.run(['remember', 'The release branch is named ship-it.', '--type', 'project']);
    const stale = fakeServer(workspace);
    children.push(stale);
    await listening(stale);
    stale.kill('SIGKILL');
    await exited(stale);
    expect(existsSync(hookServerSocket(workspace.home))).toBe(true);
    await expectNodeFallback(workspace, 'gemini', 'refused');
  });

  it('answers through the Node hook when the server accepts and never answers', async () => {
    await workspace.run(['remember', 'The release branch is named ship-it.', '--type', 'project']);
    const hung = fakeServer(workspace);
    children.push(hung);
    await listening(hung);
    expect(await expectNodeFallback(workspace, 'copilot', 'no answer within')).toContain('ship-it');
  });

  it('exits on SIGTERM, removing its socket and lock', async () => {
    const server = startServer(workspace);
    children.push(server);
    await ready(workspace);
    server.kill('SIGTERM');
    expect(await exited(server)).toBe(0);
    expect(existsSync(hookServerSocket(workspace.home))).toBe(false);
    expect(existsSync(join(workspace.home, 'spool', 'worker-hookserver.pid'))).toBe(false);
  });

  it('exits after hooks.serverIdleMs with no hook asking, and when its socket file is removed', async () => {
    const idle = startServer(workspace, { ENGRAM_HOOK_SERVER_IDLE_MS: '300' });
    children.push(idle);
    await ready(workspace);
    expect(await exited(idle)).toBe(0);
    expect(existsSync(hookServerSocket(workspace.home))).toBe(false);
    const removed = startServer(workspace);
    children.push(removed);
    await ready(workspace);
    const { rmSync } = await import('node:fs');
    rmSync(hookServerSocket(workspace.home));
    expect(await exited(removed)).toBe(0);
  });

  it('runs one server per ENGRAM_HOME when two start at once', async () => {
    const one = startServer(workspace);
    const two = startServer(workspace);
    children.push(one, two);
    await ready(workspace);
    // One of them finds the lock held and exits; the other answers.
    const first = await Promise.race([exited(one).then(() => one), exited(two).then(() => two)]);
    const other = first === one ? two : one;
    expect(other.exitCode).toBe(null);
    expect((await serverStatus(workspace))!.pid).toBe(other.pid);
  });
});
