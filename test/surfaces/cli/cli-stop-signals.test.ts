import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EXTRACTION_QUEUE } from '../../../src/extraction/extraction-job-payload.js';
import { createExtractor } from '../../../src/node/create-extractor.js';
import { openEngram } from '../../../src/node/open-engram.js';
import { closeSqlite, openSqlite } from '../../../src/adapters/sqlite/sqlite-driver.js';
import { startAnthropicMessagesServer } from '../../../src/testing/anthropic-messages-server.js';
import type { LanguageModelServer } from '../../../src/testing/loopback-model-server.js';
import { ENGRAM_BINARY } from '../../support/cli-harness.js';
import { holdWriteLock, type WriteLockHolder } from '../../support/write-lock-holder.js';

// Every long-running engram process as a real process, stopped by SIGTERM or SIGINT while it works:
// it exits on its own (the grace that would end it anyway is set far beyond the test's wait), with
// its work given back and its locks and store let go. The model answers nothing: a call in flight
// hangs until the stop aborts it.
const HOOK_WORKER = fileURLToPath(new URL('../../../dist/surfaces/claude-code/hook-worker.js', import.meta.url));
const EXIT_WAIT_MS = 20_000;

let root: string;
let cwd: string;
let home: string;
let model: LanguageModelServer;
let holder: WriteLockHolder | undefined;
const children: ChildProcessWithoutNullStreams[] = [];

beforeEach(async () => {
  root = mkdtempSync(join(tmpdir(), 'engram-stop-'));
  cwd = join(root, 'project');
  home = join(root, 'home');
  mkdirSync(cwd, { recursive: true });
  model = await startAnthropicMessagesServer({ respond: { hang: true } });
});

afterEach(async () => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
  await holder?.stop();
  holder = undefined;
  await model.close();
  rmSync(root, { recursive: true, force: true });
});

function environment(): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    HOME: home,
    ENGRAM_HOME: home,
    ENGRAM_PROJECT: 'stop-signals',
    ENGRAM_PORT: '0',
    ANTHROPIC_API_KEY: 'test-key',
    ANTHROPIC_BASE_URL: model.url,
    // The orderly stop must end the process itself: the grace that exits anyway is beyond the test's wait.
    ENGRAM_STOP_GRACE_MS: '120000',
    ENGRAM_BUSY_TIMEOUT_MS: '120000',
  };
}

interface Running {
  child: ChildProcessWithoutNullStreams;
  output(): string;
  errors(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function start(command: string, args: readonly string[]): Running {
  const child = spawn(command, [...args], { cwd, env: environment(), stdio: 'pipe' });
  children.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  child.stdin.on('error', () => undefined);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return { child, output: () => stdout, errors: () => stderr, exited };
}

async function until(what: string, condition: () => boolean | Promise<boolean>, running?: Running): Promise<void> {
  const deadline = Date.now() + EXIT_WAIT_MS;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; stderr: ${running?.errors() ?? ''}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Sends the signal and waits for the process to exit on its own. */
async function stopWith(running: Running, signal: NodeJS.Signals): Promise<{ code: number | null }> {
  running.child.kill(signal);
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`still running ${EXIT_WAIT_MS} ms after ${signal}; stderr: ${running.errors()}`)),
      EXIT_WAIT_MS,
    );
  });
  try {
    const exit = await Promise.race([running.exited, late]);
    expect(running.errors()).not.toMatch(/exiting now/);
    return exit;
  } finally {
    clearTimeout(timer);
  }
}

async function opened() {
  return openEngram({ cwd, env: environment() as Record<string, string>, flags: { 'model.provider': 'none' } });
}

/** One queued extraction job, as a hook or a wrapped call leaves it. */
async function queueJob(): Promise<void> {
  const { engram, close } = await opened();
  try {
    const extractor = createExtractor({ engram, autoStart: false });
    await extractor.afterTurn({
      sessionId: 'stop-session',
      messages: [
        { id: 'm1', role: 'user', text: 'We deploy the API to Frankfurt from now on.' },
        { id: 'm2', role: 'assistant', text: 'Noted.' },
      ],
    });
  } finally {
    await close();
  }
}

/** The queued job and the store locks still held, read after the process ended. */
async function leftBehind() {
  const { engram, close } = await opened();
  try {
    const [job] = await engram.store.jobs!.list({ queue: EXTRACTION_QUEUE });
    // Read as rows: taking a lock would take over one a dead process left, and say nothing.
    const db = openSqlite(join(home, 'engram.db'), { readOnly: true });
    try {
      const locks = (db.prepare('SELECT name FROM store_locks').all() as Array<{ name: string }>).map(
        (row) => row.name,
      );
      return { job, locks };
    } finally {
      closeSqlite(db);
    }
  } finally {
    await close();
  }
}

const mcpLine = (message: object): string => `${JSON.stringify({ jsonrpc: '2.0', ...message })}\n`;

describe.each(['SIGTERM', 'SIGINT'] as const)('%s', (signal) => {
  it('engram mcp with stdin still open, a remember call waiting for a write lock another process holds: exits 0', async () => {
    {
      const { close } = await opened();
      await close();
    }
    const running = start(process.execPath, [ENGRAM_BINARY, 'mcp']);
    running.child.stdin.write(
      mcpLine({
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'test', version: '1' } },
      }),
    );
    await until('the initialize answer', () => running.output().includes('"id":1'), running);
    running.child.stdin.write(mcpLine({ method: 'notifications/initialized' }));
    running.child.stdin.write(mcpLine({ id: 2, method: 'tools/list' }));
    await until('the tools/list answer', () => running.output().includes('"id":2'), running);
    holder = await holdWriteLock(join(home, 'engram.db'));
    running.child.stdin.write(
      mcpLine({
        id: 3,
        method: 'tools/call',
        params: { name: 'remember', arguments: { content: 'The staging cluster is in Dublin.' } },
      }),
    );
    const { code } = await stopWith(running, signal);
    expect(code).toBe(0);
    expect(running.output()).not.toContain('"id":3,"result"');
  });

  it('engram serve with an extraction job running on a model that never answers: exits 0, the job back in the queue, its lock let go', async () => {
    await queueJob();
    const running = start(process.execPath, [ENGRAM_BINARY, 'serve']);
    await until('the job to reach the model', () => model.requests.length > 0, running);
    const { code } = await stopWith(running, signal);
    expect(code).toBe(0);
    const { job, locks } = await leftBehind();
    expect(job).toMatchObject({ state: 'pending', attempts: 0 });
    expect(locks).toEqual([]);
  });

  it("the Claude Code hooks' worker with a job running on a model that never answers: exits, the job back in the queue, its locks let go", async () => {
    await queueJob();
    const running = start(process.execPath, [HOOK_WORKER, cwd]);
    await until('the job to reach the model', () => model.requests.length > 0, running);
    await stopWith(running, signal);
    const { job, locks } = await leftBehind();
    expect(job).toMatchObject({ state: 'pending', attempts: 0 });
    expect(locks).toEqual([]);
    // The worker's own lock (one worker per store) is let go, not left for the next hook to find stale.
    expect(readdirSync(join(home, 'spool')).filter((name) => name.startsWith('worker-'))).toEqual([]);
  });
});

describe('engram chat', () => {
  it('SIGTERM during a turn on a model that never answers: the chat ends, its transcript keeps the message, exit 0', async () => {
    const running = start(process.execPath, [ENGRAM_BINARY, 'chat']);
    running.child.stdin.write('Where do we deploy the API service?\n');
    await until('the turn to reach the model', () => model.requests.length > 0, running);
    const { code } = await stopWith(running, 'SIGTERM');
    expect(code).toBe(0);
    const transcript = /Transcript: (\S+)/.exec(running.output())?.[1];
    expect(transcript).toBeDefined();
    expect(readFileSync(transcript!, 'utf8')).toContain('Where do we deploy the API service?');
  });

  it('SIGINT interrupts the running turn as Ctrl-C does; a second one with nothing running ends the chat', async () => {
    const running = start(process.execPath, [ENGRAM_BINARY, 'chat']);
    running.child.stdin.write('Where do we deploy the API service?\n');
    await until('the turn to reach the model', () => model.requests.length > 0, running);
    running.child.kill('SIGINT');
    await until('the interruption', () => running.output().includes('(interrupted)'), running);
    const { code } = await stopWith(running, 'SIGINT');
    expect(code).toBe(0);
  });
});
