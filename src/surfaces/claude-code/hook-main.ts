import { writeSync } from 'node:fs';
import { engramHome, loadSettings } from '../../node/load-settings.js';
import { hookProtocol } from './agent-hook-protocols.js';
import type { HookEventName } from './hook-input.js';
import { writeHookLog } from './hook-log.js';
import { runHook } from './hook-run.js';

export { HOOK_ACTOR } from './hook-input.js';
// Each event loads only its own side (a hook is a whole process, and loading modules is much of
// its time): Stop, PreCompact and SessionEnd the spool's (hook-queue.ts, nothing of the store or
// recall), SessionStart and UserPromptSubmit the store's (hook-answer.ts), the fast path's adopter
// its own. What this module loads up front is what every event needs.

/** The fast path's adopter (`engram.mjs hook adopt-events`), in the hooks' bundle with the rest. */
export async function runEventAdopter(): Promise<never> {
  const adopter = await import('./hook-adopter.js');
  return adopter.runEventAdopter();
}

/** The resident hook server (`engram.mjs hook serve`, hook-server.ts), started by a hook that no server answered. */
export async function runHookServer(): Promise<never> {
  const server = await import('./hook-server.js');
  return server.runHookServer();
}

/**
 * One coding agent's hook as a whole process (`engram.mjs hook <event> [--agent codex]`): the hook
 * (hook-run.ts) with the process's stdin, stdout and cwd, exiting 0 when it has answered, always. A
 * memory system never blocks the user's prompt. When the sh client (hook.sh) ran this because
 * no hook server answered (ENGRAM_HOOK_ASKED says why), it says why in the hook log and starts the
 * server for the next hook (unless `hooks.server` is off).
 */
export async function runHookProcess(word: string, options: { agent?: string } = {}): Promise<never> {
  const started = Date.now();
  const env = process.env;
  let exiting = false;
  let after: Promise<unknown> | undefined;
  await runHook(word, {
    ...(options.agent !== undefined && { agent: options.agent }),
    env,
    cwd: process.cwd(),
    started,
    stdin: readStdin,
    write(stdout) {
      try {
        writeSync(1, stdout);
      } catch {
        // The agent stopped listening: nothing to answer.
      }
    },
    stderr(text) {
      try {
        writeSync(2, text);
      } catch {
        // Nobody reads stderr.
      }
    },
    done() {
      if (exiting) return;
      exiting = true;
      const asked = env.ENGRAM_HOOK_ASKED;
      if (asked === undefined || asked === '') process.exit(0);
      after = afterUnanswered(word, options.agent, asked, started)
        .catch(() => undefined) // The next hook tries again.
        .finally(() => process.exit(0));
    },
  });
  await after;
  return process.exit(0);
}

/** The hook ran because no server answered: the reason in the log (when it is more than "none runs"), and a server for next time. */
async function afterUnanswered(word: string, agent: string | undefined, asked: string, started: number): Promise<void> {
  const env = process.env;
  const home = safe(() => engramHome(env));
  if (home === undefined) return;
  if (asked !== 'none') {
    writeHookLog(home, {
      at: new Date().toISOString(),
      event: hookProtocol(agent)?.events[word as HookEventName] ?? word.slice(0, 40),
      ...(agent !== undefined && agent !== 'claude-code' && { agent }),
      status: 'fallback',
      message: `the hook server did not answer (${asked.slice(0, 200)}): the hook ran in its own process`,
      ms: Date.now() - started,
    });
  }
  if (!loadSettings({ env }).settings.hooks.server) return;
  const { startHookServer } = await import('./hook-server-start.js');
  startHookServer(home, env);
}

function safe<T>(work: () => T): T | undefined {
  try {
    return work();
  } catch {
    return undefined;
  }
}

/** All of stdin, up to `maxBytes` (more is refused, not buffered). */
async function readStdin(maxBytes: number): Promise<{ text: string; tooLarge: boolean }> {
  if (process.stdin.isTTY) return { text: '', tooLarge: false };
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of process.stdin) {
    const buffer = typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer);
    total += buffer.length;
    if (total > maxBytes) return { text: '', tooLarge: true };
    chunks.push(buffer);
  }
  return { text: Buffer.concat(chunks).toString('utf8'), tooLarge: false };
}
