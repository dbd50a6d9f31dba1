import { RECORDED_ENV } from './hook-recorded-env.js';

/**
 * The text of engram's OpenCode plugin (`~/.config/opencode/plugin/engram.js`, written whole by
 * `engram install opencode`). OpenCode 1.18 has no hook commands: it loads the plugin in-process
 * (under Bun) and awaits its hooks, so a slow plugin is a slow turn. The module imports only Node
 * built-ins (no install script, no native addon, nothing for OpenCode's installer to fetch) and runs
 * engram's one hook runner for each event (`<node> <launcher> hook <word> --agent opencode`, JSON on
 * stdin in engram's own shape, agent-hook-protocols.ts; session start and the prompt ask the resident
 * hook server on its unix socket first, the question hook.sh sends, from inside OpenCode's process,
 * and run the runner when none answers), giving it `waitMs` at most (the runner
 * answers with nothing after hooks.deadlineMs itself; the rest is for starting Node). Any failure
 * goes on without memory. What it does per event:
 * - `session.created`: starts the session (the index, `source: startup`); its context waits for the
 *   session's first `chat.message`, the first place a plugin can add to what the model reads;
 * - `chat.message` (sees the typed text): recall for the prompt; each context is pushed as a
 *   `synthetic` text part of the user's message, which OpenCode stores but never counts as typed;
 * - `session.idle` (end of each turn): queues extraction of the session's rows in OpenCode's SQLite
 *   database (its path is the `transcript_path`);
 * - `session.compacted`: the next prompt starts the session again with `source: compact`, which gives
 *   back the memories surfaced before (the summary dropped them).
 */
export function opencodePluginModule(options: { node: string; launcher: string; waitMs: number }): string {
  const settings = JSON.stringify({
    node: options.node,
    launcher: options.launcher,
    waitMs: options.waitMs,
    recordedEnv: RECORDED_ENV,
  });
  return `// engram for OpenCode: written by "engram install opencode"; "engram uninstall opencode" removes it.
// Runs engram's hook runner for OpenCode's events and adds the memory it answers to the user's
// message. Imports only Node built-ins: nothing to install. Edit it and engram leaves it to you.
import { spawn } from 'node:child_process';
import { existsSync, realpathSync } from 'node:fs';
import { request } from 'node:http';
import { homedir } from 'node:os';
import { join } from 'node:path';

const ENGRAM = ${settings};
const ASKING = new Set(['session-start', 'user-prompt-submit']);

/** The context engram's runner printed (its hookSpecificOutput.additionalContext), or undefined. */
function contextOf(stdout) {
  try {
    const context = JSON.parse(stdout.trim())?.hookSpecificOutput?.additionalContext;
    return typeof context === 'string' && context.trim() !== '' ? context : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Asks engram's resident hook server on its unix socket, as hook.sh does (the same question: a header
 * line naming the word, the agent, the physical working folder and the recorded environment, then the
 * event): { stdout } when it answered, else { asked }, why not, for the runner's log.
 */
function askServer(word, input) {
  return new Promise((resolve) => {
    const home = process.env.ENGRAM_HOME || (process.env.HOME ? join(process.env.HOME, '.engram') : '');
    if (!home.startsWith('/')) return resolve({ asked: '' });
    const socket = join(home, 'run', 'hooks.sock');
    if (!existsSync(socket)) return resolve({ asked: 'none' });
    let pwd;
    try {
      pwd = realpathSync(process.cwd());
    } catch {
      return resolve({ asked: '' });
    }
    const env = {};
    for (const name of ENGRAM.recordedEnv) if (process.env[name] !== undefined) env[name] = process.env[name];
    const body = \`\${JSON.stringify({ v: 1, event: word, agent: 'opencode', pwd, env })}\n\${JSON.stringify(input)}\n\`;
    try {
      const asking = request(
        { socketPath: socket, path: '/hook', method: 'POST', timeout: 2_000, headers: { 'content-type': 'application/octet-stream', 'content-length': Buffer.byteLength(body) } },
        (response) => {
          let text = '';
          response.setEncoding('utf8');
          response.on('data', (chunk) => (text += chunk));
          response.on('error', () => resolve({ asked: 'its answer broke off' }));
          response.on('end', () =>
            resolve(response.statusCode === 200 ? { stdout: text } : { asked: 'it answered an error (its build changed, or a question it does not take)' }),
          );
        },
      );
      asking.on('timeout', () => {
        asking.destroy();
        resolve({ asked: 'no answer within 2 s' });
      });
      asking.on('error', (error) => resolve({ asked: error?.code === 'ECONNREFUSED' ? 'refused: a socket file with no server behind it' : \`error \${error?.code ?? ''}\` }));
      asking.end(body);
    } catch {
      resolve({ asked: 'the question could not be sent' });
    }
  });
}

/** One hook word: the hook server when it answers, else engram's runner; never rejects, never waits past ENGRAM.waitMs. */
async function runHook(word, input) {
  const started = Date.now();
  let asked;
  if (process.platform !== 'win32' && ASKING.has(word)) {
    const answer = await askServer(word, input);
    if (answer.stdout !== undefined) return contextOf(answer.stdout);
    asked = answer.asked;
  }
  return runRunner(word, input, Math.max(0, ENGRAM.waitMs - (Date.now() - started)), asked);
}

/** engram's runner in its own process (it logs why no server answered, and starts one for next time). */
function runRunner(word, input, waitMs, asked) {
  return new Promise((resolve) => {
    let child;
    let stdout = '';
    let done = false;
    const finish = (context) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve(context);
    };
    const timer = setTimeout(() => {
      try {
        child?.kill('SIGKILL');
      } catch {}
      finish(undefined);
    }, waitMs);
    try {
      child = spawn(ENGRAM.node, [ENGRAM.launcher, 'hook', word, '--agent', 'opencode'], {
        stdio: ['pipe', 'pipe', 'ignore'],
        env: asked ? { ...process.env, ENGRAM_HOOK_ASKED: asked } : process.env,
      });
      child.on('error', () => finish(undefined));
      child.stdout.on('data', (chunk) => (stdout += chunk));
      child.on('close', () => finish(contextOf(stdout)));
      child.stdin.on('error', () => {});
      child.stdin.end(JSON.stringify(input));
    } catch {
      finish(undefined);
    }
  });
}

/** OpenCode's SQLite database (XDG data folder), where the session's messages are: the transcript. */
function database() {
  const data = process.env.XDG_DATA_HOME || join(process.env.HOME || homedir(), '.local', 'share');
  const path = join(data, 'opencode', 'opencode.db');
  return existsSync(path) ? path : undefined;
}

let counter = 0;
/** A part id that sorts after the parts made before it, as OpenCode's own (prt_ + time + random). */
function partId() {
  const time = (BigInt(Date.now()) * 4096n + BigInt(counter++ % 4096)).toString(16).padStart(12, '0').slice(-12);
  const letters = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
  let random = '';
  for (let i = 0; i < 14; i += 1) random += letters[Math.floor(Math.random() * letters.length)];
  return \`prt_\${time}\${random}\`;
}

export const EngramMemory = async ({ directory }) => {
  const sessions = new Map();
  const session = (id) => {
    if (!sessions.has(id)) sessions.set(id, { start: undefined, given: false, source: 'startup' });
    return sessions.get(id);
  };
  const input = (id, extra) => {
    const transcript = database();
    return { session_id: id, cwd: directory, ...(transcript && { transcript_path: transcript }), ...extra };
  };
  const start = (id) => {
    const state = session(id);
    state.start ??= runHook('session-start', input(id, { source: state.source }));
    return state.start;
  };
  return {
    event: async ({ event }) => {
      const id = event?.properties?.sessionID ?? event?.properties?.info?.id;
      if (typeof id !== 'string' || id === '') return;
      if (event.type === 'session.created') void start(id);
      else if (event.type === 'session.compacted') sessions.set(id, { start: undefined, given: false, source: 'compact' });
      else if (event.type === 'session.idle') await runHook('stop', input(id, {}));
    },
    'chat.message': async (hook, output) => {
      const id = hook?.sessionID ?? output?.message?.sessionID;
      if (typeof id !== 'string' || id === '' || !Array.isArray(output?.parts)) return;
      const state = session(id);
      const contexts = [];
      if (!state.given) {
        state.given = true;
        contexts.push(await start(id));
      }
      const prompt = output.parts
        .filter((part) => part?.type === 'text' && !part.synthetic && typeof part.text === 'string')
        .map((part) => part.text)
        .join('\\n');
      if (prompt.trim() !== '') contexts.push(await runHook('user-prompt-submit', input(id, { prompt })));
      for (const text of contexts)
        if (text !== undefined)
          output.parts.push({ id: partId(), sessionID: id, messageID: output.message?.id, type: 'text', text, synthetic: true });
    },
  };
};
`;
}
