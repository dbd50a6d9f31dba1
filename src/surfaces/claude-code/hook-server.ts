import { chmodSync, mkdirSync, rmSync, statSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { fileURLToPath } from 'node:url';
import { engramHome, loadSettings } from '../../node/load-settings.js';
import { readRawHeader } from './hook-incoming.js';
import { RECORDED_ENV, recordedHookEnv } from './hook-recorded-env.js';
import { writeHookLog } from './hook-log.js';
import { runHook } from './hook-run.js';
import { HOOK_SERVER_LOCK, hookServerFolder, hookServerSocket } from './hook-server-paths.js';
import type { HookServerStatus } from './hook-server-status.js';
import { acquireWorkerLock, releaseWorkerLock, touchWorkerLock, WORKER_LOCK_HEARTBEAT_MS } from './hook-worker-lock.js';

/** The hook words the server answers; the queueing ones stay with the sh spool (hook.sh). */
const ANSWERED = new Set(['session-start', 'user-prompt-submit']);
/** How often the server looks at its socket file, its build and its idle time. */
const LOOK_MS = 1_000;
/** A question larger than this is refused (the client's Node hook then takes it). */
const MAX_REQUEST_BYTES = 2 * 1024 * 1024;

/**
 * The resident hook server (`engram.mjs hook serve`): one per ENGRAM_HOME (the worker lock
 * `worker-hook-server.pid`), on the unix socket `<ENGRAM_HOME>/run/hooks.sock`. The sh client
 * (hook.sh, ask mode) posts the raw event (a JSON header line: the hook word, the agent, the
 * physical cwd, the recorded environment; then the hook's stdin) and prints the reply, which is the
 * bytes the Node hook would print, by the same code (hook-run.ts). Anything but a 200 and the client
 * runs the Node hook instead. It exits after `hooks.serverIdleMs` with no question, on SIGTERM or
 * SIGINT, when its build changed (answering 503 meanwhile) and when its socket file is removed.
 */
export async function runHookServer(): Promise<never> {
  const env = process.env;
  const since = new Date();
  let home = '';
  try {
    home = engramHome(env);
  } catch {
    return process.exit(0);
  }
  if (!(await acquireWorkerLock(home, HOOK_SERVER_LOCK))) return process.exit(0);
  const log = (status: string, message: string): void =>
    writeHookLog(home, { at: new Date().toISOString(), event: 'hook-server', status, message });
  const socket = hookServerSocket(home);
  const build = buildStamp();
  let requests = 0;
  let inFlight = 0;
  let lastAsked = Date.now();
  let closing = false;
  const idleMs = (): number => {
    try {
      return loadSettings({ env }).settings.hooks.serverIdleMs;
    } catch {
      return 900_000;
    }
  };
  let idle = idleMs();

  const server = createServer((request, response) => {
    if (request.method === 'GET' && request.url === '/status') {
      const status: HookServerStatus = { pid: process.pid, since: since.toISOString(), requests };
      reply(response, 200, `${JSON.stringify(status)}\n`);
      return;
    }
    if (closing || buildStamp() !== build) {
      reply(response, 503, 'gone\n');
      stop('its engram build changed');
      return;
    }
    requests += 1;
    inFlight += 1;
    lastAsked = Date.now();
    void answer(request, response).finally(() => {
      inFlight -= 1;
      lastAsked = Date.now();
    });
  });

  const stop = (why: string): void => {
    if (closing) return;
    closing = true;
    clearInterval(look);
    clearInterval(heartbeat);
    if (why !== '') log('stopped', `the hook server stopped: ${why}`);
    try {
      if (socketIdentity(socket) === listening) rmSync(socket, { force: true });
    } catch {
      // Already gone.
    }
    releaseWorkerLock(home, HOOK_SERVER_LOCK);
    server.close();
    // Questions being answered get their reply; then it exits, whatever still holds the loop.
    const exit = setTimeout(() => process.exit(0), inFlight > 0 ? 2_000 : 0);
    server.on('close', () => {
      if (inFlight === 0) process.exit(0);
    });
    exit.unref();
  };

  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  const heartbeat = setInterval(() => touchWorkerLock(home, HOOK_SERVER_LOCK), WORKER_LOCK_HEARTBEAT_MS);
  let listening: string | undefined;
  const look = setInterval(
    () => {
      if (socketIdentity(socket) !== listening) return stop('its socket file was removed');
      if (buildStamp() !== build) return stop('its engram build changed');
      idle = idleMs();
      if (inFlight === 0 && Date.now() - lastAsked >= idle) stop(`no hook asked for ${idle} ms (hooks.serverIdleMs)`);
    },
    Math.min(LOOK_MS, idle),
  );

  try {
    mkdirSync(hookServerFolder(home), { recursive: true, mode: 0o700 });
    chmodSync(hookServerFolder(home), 0o700);
    // This process holds the lock: a socket file there is a dead server's.
    rmSync(socket, { force: true });
    const umask = process.umask(0o177);
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(socket, () => {
          server.off('error', reject);
          resolve();
        });
      });
    } finally {
      process.umask(umask);
    }
    chmodSync(socket, 0o600);
    listening = socketIdentity(socket);
  } catch (error) {
    log('failed', `the hook server cannot listen on ${socket}: ${error instanceof Error ? error.message : error}`);
    stop('');
  }
  return new Promise<never>(() => undefined);
}

/** One question: the raw event in, the Node hook's stdout out. */
async function answer(request: IncomingMessage, response: ServerResponse): Promise<void> {
  const started = Date.now();
  let body: string;
  try {
    body = await readBody(request);
  } catch {
    reply(response, 400, 'unreadable request\n');
    return;
  }
  const end = body.indexOf('\n');
  const question = readQuestion(end < 0 ? body : body.slice(0, end));
  if (question === undefined) {
    reply(response, 400, 'not a hook question\n');
    return;
  }
  const stdin = end < 0 ? '' : body.slice(end + 1);
  // The hook's environment as recorded, over the server's own for what was not recorded (the secrets).
  const env = recordedHookEnv(process.env, question.env);
  delete env.ENGRAM_HOOK_ASKED;
  let stdout = '';
  let replied = false;
  await new Promise<void>((resolve) => {
    void runHook(question.word, {
      ...(question.agent !== undefined && { agent: question.agent }),
      env,
      cwd: question.pwd,
      started,
      stdin: async (maxBytes) =>
        Buffer.byteLength(stdin) > maxBytes ? { text: '', tooLarge: true } : { text: stdin, tooLarge: false },
      write(text) {
        stdout += text;
      },
      stderr: () => undefined,
      done() {
        if (replied) return;
        replied = true;
        reply(response, 200, stdout);
        resolve();
      },
    });
  });
}

interface Question {
  word: string;
  agent?: string;
  pwd: string;
  env: Record<string, string>;
}

function readQuestion(line: string): Question | undefined {
  const header = readRawHeader(line, ANSWERED, RECORDED_ENV);
  if (header === undefined || (header.agent !== undefined && typeof header.agent !== 'string')) return undefined;
  return {
    word: header.event,
    ...(typeof header.agent === 'string' && header.agent !== '' && { agent: header.agent }),
    pwd: header.pwd,
    env: header.env,
  };
}

async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of request) {
    const buffer = chunk as Buffer;
    total += buffer.length;
    if (total > MAX_REQUEST_BYTES) throw new Error('too large');
    chunks.push(buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function reply(response: ServerResponse, status: number, body: string): void {
  try {
    response.writeHead(status, {
      'content-type': 'application/octet-stream',
      'content-length': Buffer.byteLength(body),
    });
    response.end(body);
  } catch {
    // The client gave up: its Node hook answers.
  }
}

/** The socket file's identity (device and inode), undefined when it is gone. */
function socketIdentity(path: string): string | undefined {
  try {
    const stat = statSync(path);
    return `${stat.dev}:${stat.ino}`;
  } catch {
    return undefined;
  }
}

/** This build's code (this module's file and the launcher's): a rebuild or an update changes it. */
function buildStamp(): string {
  const files = [fileURLToPath(import.meta.url), process.argv[1] ?? ''];
  return files
    .map((file) => {
      try {
        const stat = statSync(file);
        return `${stat.ino}:${stat.mtimeMs}:${stat.size}`;
      } catch {
        return 'none';
      }
    })
    .join('|');
}
