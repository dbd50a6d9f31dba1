/**
 * Re-measures, beside check-hardening.ts, that engram's processes end when they should and never
 * hold up their caller (issue 26): every long-running command (`engram mcp` with stdin still open,
 * `engram serve` and the hooks' worker with an extraction call hanging, `engram chat` mid-turn)
 * stops on SIGTERM and on SIGINT by itself (the grace that would end it anyway is set beyond the
 * wait); a script that uses withMemory and never calls close() exits while extraction hangs; a
 * wrapped call answers while another process holds the store's write lock, well inside an SDK
 * timeout far below store.busyTimeoutMs. Prints the figures; exits 1 on any failure.
 * Needs `npm run build` first. Run: npx tsx scripts/check-process-life.ts
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Anthropic from '@anthropic-ai/sdk';
import { createExtractor } from '../src/node/create-extractor.js';
import { openEngram } from '../src/node/open-engram.js';
import { withMemory } from '../src/surfaces/sdk/with-memory.js';
import { startAnthropicMessagesServer } from '../src/testing/anthropic-messages-server.js';
import type { ModelServerResponder } from '../src/testing/loopback-model-server.js';
import { holdWriteLock } from '../test/support/write-lock-holder.js';

const repository = fileURLToPath(new URL('..', import.meta.url));
const BINARY = join(repository, 'dist/surfaces/cli/main.js');
const WORKER = join(repository, 'dist/surfaces/claude-code/hook-worker.js');
const FIXTURE = join(repository, 'test/fixtures/with-memory-never-closes.mjs');
const WAIT_MS = 20_000;
const root = mkdtempSync(join(tmpdir(), 'engram-check-process-life-'));
const failures: string[] = [];
const hanging = await startAnthropicMessagesServer({ respond: { hang: true } });

function environment(home: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    HOME: home,
    ENGRAM_HOME: home,
    ENGRAM_PROJECT: 'check-process-life',
    ENGRAM_PORT: '0',
    ANTHROPIC_API_KEY: 'check-key',
    ANTHROPIC_BASE_URL: hanging.url,
    ENGRAM_STOP_GRACE_MS: '120000',
    ENGRAM_BUSY_TIMEOUT_MS: '120000',
    ...extra,
  };
}

function start(
  args: string[],
  home: string,
  env: Record<string, string> = {},
): {
  child: ChildProcessWithoutNullStreams;
  output: () => string;
  exited: Promise<number | null>;
} {
  const child = spawn(process.execPath, args, { cwd: home, env: environment(home, env), stdio: 'pipe' });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr.resume();
  child.stdin.on('error', () => undefined);
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  return { child, output: () => output, exited };
}

async function until(condition: () => boolean): Promise<boolean> {
  const deadline = Date.now() + WAIT_MS;
  while (!condition()) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return true;
}

/** Milliseconds from the signal to the exit, or undefined when still running after WAIT_MS (then killed). */
async function stop(running: ReturnType<typeof start>, signal: NodeJS.Signals): Promise<number | undefined> {
  const sent = performance.now();
  running.child.kill(signal);
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), WAIT_MS);
  });
  const exited = await Promise.race([running.exited.then(() => performance.now() - sent), late]);
  clearTimeout(timer);
  if (exited === undefined) running.child.kill('SIGKILL');
  return exited;
}

async function queueJob(home: string): Promise<void> {
  const { engram, close } = await openEngram({
    cwd: home,
    env: environment(home) as Record<string, string>,
    flags: { 'model.provider': 'none' },
  });
  await createExtractor({ engram, autoStart: false }).afterTurn({
    sessionId: 'check',
    messages: [
      { id: 'm1', role: 'user', text: 'We deploy the API to Frankfurt from now on.' },
      { id: 'm2', role: 'assistant', text: 'Noted.' },
    ],
  });
  await close();
}

const line = (message: object): string => `${JSON.stringify({ jsonrpc: '2.0', ...message })}\n`;
const stopped: string[] = [];
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  // engram mcp after initialize, stdin left open (as MCP clients leave it).
  {
    const home = join(root, `mcp-${signal}`);
    mkdirSync(home);
    const running = start([BINARY, 'mcp'], home);
    running.child.stdin.write(
      line({
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'check', version: '1' } },
      }),
    );
    await until(() => running.output().includes('"id":1'));
    const ms = await stop(running, signal);
    stopped.push(`mcp ${signal} ${ms === undefined ? 'NOT STOPPED' : `${Math.round(ms)} ms`}`);
    if (ms === undefined) failures.push(`engram mcp ignored ${signal} with stdin open`);
  }
  // engram serve and the hooks' worker, each with an extraction call hanging.
  for (const [name, args] of [
    ['serve', [BINARY, 'serve']],
    ['worker', [WORKER]],
  ] as const) {
    const home = join(root, `${name}-${signal}`);
    mkdirSync(home);
    await queueJob(home);
    const before = hanging.requests.length;
    const running = start([...args, ...(name === 'worker' ? [home] : [])], home);
    await until(() => hanging.requests.length > before);
    const ms = await stop(running, signal);
    stopped.push(`${name} ${signal} ${ms === undefined ? 'NOT STOPPED' : `${Math.round(ms)} ms`}`);
    if (ms === undefined) failures.push(`${name} ignored ${signal} during an extraction call`);
  }
}
// engram chat mid-turn: SIGTERM ends it (SIGINT is Ctrl-C there: it interrupts the turn).
{
  const home = join(root, 'chat');
  mkdirSync(home);
  const before = hanging.requests.length;
  const running = start([BINARY, 'chat'], home);
  running.child.stdin.write('Where do we deploy?\n');
  await until(() => hanging.requests.length > before);
  const ms = await stop(running, 'SIGTERM');
  stopped.push(`chat SIGTERM ${ms === undefined ? 'NOT STOPPED' : `${Math.round(ms)} ms`}`);
  if (ms === undefined) failures.push('engram chat ignored SIGTERM mid-turn');
}
console.log(`stopped by a signal: ${stopped.join(', ')}`);

// A script that never calls close(), its extraction call hanging: it must exit once its own work ends.
{
  const home = join(root, 'never-closes');
  mkdirSync(home);
  const main = await startAnthropicMessagesServer({
    respond: ((_request, index) =>
      index === 0 ? { message: { text: 'Noted.' } } : { hang: true }) as ModelServerResponder,
  });
  const flag = join(home, 'own-work-done');
  const child = spawn(process.execPath, [FIXTURE], {
    cwd: repository,
    env: {
      ...environment(home),
      WRAPPED: 'anthropic',
      MAIN_URL: main.url,
      STORE: join(home, 'engram.db'),
      PROJECT_DIR: home,
      OWN_WORK_UNTIL: flag,
    },
    stdio: 'ignore',
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  const reached = await until(() => main.requests.length > 1);
  writeFileSync(flag, '');
  const sent = performance.now();
  const ms = await Promise.race([
    exited.then(() => performance.now() - sent),
    new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), WAIT_MS)),
  ]);
  if (ms === undefined) child.kill('SIGKILL');
  if (!reached) failures.push('the never-closing script never called its extraction model');
  if (ms === undefined) failures.push('a script that never calls close() stayed alive with extraction hanging');
  console.log(
    `script without close(), extraction hanging: ${ms === undefined ? 'still alive' : `exited ${Math.round(ms)} ms after its own work`}`,
  );
  await main.close();
}

// Wrapped calls while another process holds the write lock (busy timeout 120 s, SDK timeout 10 s).
{
  const home = join(root, 'held-lock');
  mkdirSync(home);
  const store = join(home, 'engram.db');
  {
    const { engram, close } = await openEngram({
      cwd: home,
      env: { ENGRAM_HOME: home, ENGRAM_MODEL_PROVIDER: 'none' },
      flags: { 'store.url': store },
    });
    await engram.remember({ content: 'The deploy target of the API service is Frankfurt.', type: 'project' });
    await close();
  }
  const main = await startAnthropicMessagesServer();
  const holder = await holdWriteLock(store);
  const client = withMemory(new Anthropic({ apiKey: 'k', baseURL: main.url, maxRetries: 0, timeout: 10_000 }), {
    store,
    cwd: home,
    env: { ENGRAM_HOME: home, ENGRAM_MODEL_PROVIDER: 'none', ENGRAM_BUSY_TIMEOUT_MS: '120000' },
  });
  let answered = 0;
  const times: number[] = [];
  for (let call = 0; call < 5; call += 1) {
    const started = performance.now();
    try {
      await client.messages.create({
        model: 'm',
        max_tokens: 10,
        messages: [{ role: 'user', content: `Where do we deploy the API service? (${call})` }],
      });
      answered += 1;
      times.push(performance.now() - started);
    } catch {
      // Counted below.
    }
  }
  await holder.stop();
  await client.memory.close();
  await main.close();
  if (answered < 5)
    failures.push(`${5 - answered} of 5 wrapped calls failed while another process held the write lock`);
  console.log(
    `wrapped calls answered under a held write lock: ${answered} of 5 (slowest ${Math.round(Math.max(...times, 0))} ms, SDK timeout 10000 ms, busy timeout 120000 ms)`,
  );
}

await hanging.close();
rmSync(root, { recursive: true, force: true });
for (const failure of failures) console.log(`  FAIL: ${failure}`);
process.exitCode = failures.length > 0 ? 1 : 0;
