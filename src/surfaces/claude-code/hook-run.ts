import { DEFAULT_SETTINGS } from '../../kernel/settings.js';
import { errorKind, isEngramError } from '../../kernel/errors.js';
import { engramHome, loadSettings } from '../../node/load-settings.js';
import { hookProtocol, readAgentHookInput } from './agent-hook-protocols.js';
import { MAX_HOOK_INPUT_BYTES, isHookEventName, type HookEventName } from './hook-input.js';
import { writeHookLog, type HookLogEntry } from './hook-log.js';
import { sessionProjectFolder } from './hook-session-root.js';
import { isNestedEngramCall } from '../../kernel/nested-call.js';

/** Where one hook run reads and answers: a whole process (hook-main.ts) or one request to the hook server (hook-server.ts). */
export interface HookRun {
  agent?: string;
  env: NodeJS.ProcessEnv;
  /** The hook's working directory (the process's, or the one the sh client recorded). */
  cwd: string;
  /** When the hook started: its deadline counts from here. */
  started: number;
  /** All of the event's stdin, up to `maxBytes`. */
  stdin(maxBytes: number): Promise<{ text: string; tooLarge: boolean }>;
  /** The hook's whole stdout (written at most once); `stderr` what the process would say on stderr. */
  write(stdout: string): void;
  stderr(text: string): void;
  /** The answer is final (called at least once; more calls do nothing): the process exits, the server replies. */
  done(): void;
}

/**
 * One coding agent's hook, whatever runs it: reads the event's JSON, does its work for the session's
 * project folder (not the hook's cwd, which follows the session's `cd`), and writes valid JSON in the
 * agent's output shape (agent-hook-protocols.ts) or nothing. Past `hooks.deadlineMs` it answers
 * with nothing and logs why; every failure is one line in `<ENGRAM_HOME>/logs/claude-code-hooks.log`
 * (the agent named in it when not Claude Code). Never throws. The process wrapper (hook-main.ts)
 * and the hook server (hook-server.ts) both run this, so their answers are the same bytes.
 */
export async function runHook(word: string, run: HookRun): Promise<void> {
  const { env, started } = run;
  const home = safe(() => engramHome(env)) ?? '';
  const protocol = hookProtocol(run.agent);
  const handled = (value: string): value is HookEventName =>
    isHookEventName(value) && protocol?.events[value] !== undefined;
  const event = handled(word) ? protocol!.events[word]! : word.slice(0, 40);
  let sessionId: string | undefined;
  let finished = false;
  const log = (entry: Omit<HookLogEntry, 'at' | 'event'>): void => {
    if (home === '') return;
    writeHookLog(home, {
      at: new Date().toISOString(),
      event,
      ...(protocol !== undefined && protocol.agent !== 'claude-code' && { agent: protocol.agent }),
      ...(sessionId !== undefined && { sessionId }),
      ...entry,
      ms: entry.ms ?? Date.now() - started,
    });
  };
  const answer = (context: string | undefined, notice?: string): void => {
    if (!finished) {
      finished = true;
      if ((context !== undefined || notice !== undefined) && handled(word)) {
        // A notice (an event lost) is shown to the user (Claude Code's and Codex's `systemMessage`).
        run.write(`${JSON.stringify(protocol!.output(event, context, notice))}\n`);
      }
    }
  };
  const finish = (context: string | undefined): void => {
    answer(context);
    run.done();
  };
  // A call engram itself started (the claude-code model provider): its hooks do nothing.
  if (isNestedEngramCall(env)) return finish(undefined);
  if (protocol === undefined) {
    log({ status: 'skipped', message: `unknown agent ${JSON.stringify(String(run.agent).slice(0, 40))}` });
    return finish(undefined);
  }
  if (!handled(word)) {
    log({
      status: 'skipped',
      message: `unknown hook event ${JSON.stringify(word.slice(0, 40))} for ${protocol.agent}`,
    });
    return finish(undefined);
  }
  let deadlineMs = DEFAULT_SETTINGS.hooks.deadlineMs;
  // Armed first; in a resident hook server it must not outlive the answer (cleared in `finally`,
  // and a no-op once answered), or every failed question would log a deadline a second later.
  const passDeadline = (): void => {
    if (finished) return;
    log({
      status: 'deadline',
      message: `answered with no context after the ${deadlineMs} ms deadline (hooks.deadlineMs)`,
    });
    finish(undefined);
  };
  let timer = setTimeout(passDeadline, deadlineMs);
  try {
    const read = await run.stdin(MAX_HOOK_INPUT_BYTES);
    if (read.tooLarge) {
      log({ status: 'skipped', message: `stdin is over ${MAX_HOOK_INPUT_BYTES} bytes` });
      return finish(undefined);
    }
    const parsed = readAgentHookInput(protocol, read.text, env);
    if (!parsed.input) {
      log({ status: 'skipped', message: parsed.problem ?? 'unreadable stdin' });
      return finish(undefined);
    }
    const input = parsed.input;
    if (word === 'user-prompt-submit' && protocol.promptField !== undefined && input.prompt === undefined) {
      // A send that is not the user's (a tool result going back to the model): nothing to recall for,
      // and nothing wrong, so no log line.
      return finish(undefined);
    }
    sessionId = input.sessionId;
    // The session's project, not where its shell is now: the input's cwd follows the session's `cd`.
    const cwd = sessionProjectFolder({ home, input, env, cwd: run.cwd, protocol });
    if (cwd === undefined) {
      const named = input.cwd ?? run.cwd;
      log({ status: 'skipped', message: `the hook's cwd ${JSON.stringify(named.slice(0, 200))} is not a folder` });
      return finish(undefined);
    }
    // The deadline is a setting: read it before the store opens (that is what may hang).
    const loaded = loadSettings({ cwd, env });
    if (word === 'stop' || word === 'pre-compact' || word === 'session-end') {
      const { spoolHookEvent } = await import('./hook-queue.js');
      const spooled = spoolHookEvent(
        word === 'stop' ? 'Stop' : word === 'pre-compact' ? 'PreCompact' : 'SessionEnd',
        input,
        cwd,
        loaded,
        log,
        { env },
      );
      if (spooled.notice !== undefined) {
        // Said three ways, since on a full disk the log line may not be written: the log, stderr
        // (Claude Code's debug log) and the user's screen.
        run.stderr(`engram: ${spooled.notice}\n`);
        answer(undefined, spooled.notice);
      }
      return finish(undefined);
    }
    deadlineMs = loaded.settings.hooks.deadlineMs;
    clearTimeout(timer);
    const remaining = Math.max(1, deadlineMs - (Date.now() - started));
    timer = setTimeout(passDeadline, remaining);
    timer.unref();
    // SQLite waits for a lock inside a synchronous call, where no timer fires: the wait itself is
    // kept well inside the deadline, so a locked store costs this hook its bookkeeping, never the prompt.
    const busyTimeoutMs = Math.min(loaded.settings.store.busyTimeoutMs, Math.max(10, Math.floor(remaining / 3)));
    const { answerFromStore } = await import('./hook-answer.js');
    const text = await answerFromStore(word, {
      cwd,
      env,
      input,
      busyTimeoutMs,
      remainingMs: () => deadlineMs - (Date.now() - started),
      log,
      answer,
      actor: protocol.actor,
    });
    return finish(text);
  } catch (error) {
    log({
      status: 'failed',
      message: error instanceof Error ? error.message : String(error),
      code: isEngramError(error) ? error.code : errorKind(error),
    });
    return finish(undefined);
  } finally {
    clearTimeout(timer);
  }
}

function safe<T>(work: () => T): T | undefined {
  try {
    return work();
  } catch {
    return undefined;
  }
}
