import { existsSync, statSync, writeSync } from 'node:fs';
import { DEFAULT_SETTINGS } from '../../kernel/settings.js';
import { errorKind, isEngramError } from '../../kernel/errors.js';
import { engramHome, loadSettings } from '../../node/load-settings.js';
import { openEngram, type OpenedEngram } from '../../node/open-engram.js';
import {
  promptContext,
  queueSessionEnd,
  queueTranscript,
  sessionStartContext,
  type HookContext,
} from './claude-code-hooks.js';
import { HOOK_EVENTS, MAX_HOOK_INPUT_BYTES, isHookEventName, parseHookInput, type HookInput } from './hook-input.js';
import { writeHookLog, type HookLogEntry } from './hook-log.js';
import { recordedSkillDirectories } from './claude-code-install.js';
import { syncInstalledSkills } from './skills/installed-skills.js';
import { isNestedEngramCall } from '../../kernel/nested-call.js';

/** Recorded in history as the actor of changes the hooks make. */
export const HOOK_ACTOR = 'claude-code';

/**
 * One Claude Code hook as a whole process (`engram.mjs hook <event>`): reads the event's JSON on
 * stdin, does its work for the hook's cwd, prints valid JSON or nothing, and exits 0, always. Past
 * `hooks.deadlineMs` it answers with nothing and logs why; every failure is one line in
 * `<ENGRAM_HOME>/logs/claude-code-hooks.log`. A memory system never blocks the user's prompt.
 */
export async function runHookProcess(word: string): Promise<never> {
  const started = Date.now();
  const env = process.env;
  const home = safe(() => engramHome(env)) ?? '';
  const event = isHookEventName(word) ? HOOK_EVENTS[word] : word.slice(0, 40);
  let sessionId: string | undefined;
  let finished = false;
  const log = (entry: Omit<HookLogEntry, 'at' | 'event'>): void => {
    if (home === '') return;
    writeHookLog(home, {
      at: new Date().toISOString(),
      event,
      ...(sessionId !== undefined && { sessionId }),
      ...entry,
      ms: entry.ms ?? Date.now() - started,
    });
  };
  const answer = (context: string | undefined): void => {
    if (!finished) {
      finished = true;
      if (context !== undefined && isHookEventName(word)) {
        const output = { hookSpecificOutput: { hookEventName: HOOK_EVENTS[word], additionalContext: context } };
        try {
          writeSync(1, `${JSON.stringify(output)}\n`);
        } catch {
          // Claude Code stopped listening: nothing to answer.
        }
      }
    }
  };
  const finish = (context: string | undefined): never => {
    answer(context);
    process.exit(0);
  };
  // A call engram itself started (the claude-code model provider): its hooks do nothing.
  if (isNestedEngramCall(env)) return finish(undefined);
  if (!isHookEventName(word)) {
    log({ status: 'skipped', message: `unknown hook event ${JSON.stringify(word.slice(0, 40))}` });
    return finish(undefined);
  }
  let deadlineMs = DEFAULT_SETTINGS.hooks.deadlineMs;
  const timer = setTimeout(() => {
    log({
      status: 'deadline',
      message: `answered with no context after the ${deadlineMs} ms deadline (hooks.deadlineMs)`,
    });
    finish(undefined);
  }, deadlineMs);
  let opened: OpenedEngram | undefined;
  try {
    const read = await readStdin(MAX_HOOK_INPUT_BYTES);
    if (read.tooLarge) {
      log({ status: 'skipped', message: `stdin is over ${MAX_HOOK_INPUT_BYTES} bytes` });
      return finish(undefined);
    }
    const parsed = parseHookInput(read.text);
    if (!parsed.input) {
      log({ status: 'skipped', message: parsed.problem ?? 'unreadable stdin' });
      return finish(undefined);
    }
    const input: HookInput = parsed.input;
    sessionId = input.sessionId;
    const cwd = input.cwd ?? process.cwd();
    if (!isDirectory(cwd)) {
      log({ status: 'skipped', message: `the hook's cwd ${JSON.stringify(cwd.slice(0, 200))} is not a folder` });
      return finish(undefined);
    }
    // The deadline is a setting: read it before the store opens (that is what may hang).
    const loaded = loadSettings({ cwd, env });
    deadlineMs = loaded.settings.hooks.deadlineMs;
    clearTimeout(timer);
    const remaining = Math.max(1, deadlineMs - (Date.now() - started));
    const deadline = setTimeout(() => {
      log({
        status: 'deadline',
        message: `answered with no context after the ${deadlineMs} ms deadline (hooks.deadlineMs)`,
      });
      finish(undefined);
    }, remaining);
    deadline.unref();
    // SQLite waits for a lock inside a synchronous call, where no timer fires: the wait itself is
    // kept well inside the deadline, so a locked store costs this hook its bookkeeping, never the prompt.
    const busyTimeoutMs = Math.min(loaded.settings.store.busyTimeoutMs, Math.max(10, Math.floor(remaining / 3)));
    opened = await openEngram({ cwd, env, actor: HOOK_ACTOR, flags: { 'store.busyTimeoutMs': busyTimeoutMs } });
    const context: HookContext = {
      opened,
      input,
      remainingMs: () => deadlineMs - (Date.now() - started),
      log,
      answer,
    };
    let text: string | undefined;
    if (word === 'session-start') {
      text = await sessionStartContext(context);
      await keepSkillsInStep(opened, cwd, env, log, answer, text);
    } else if (word === 'user-prompt-submit') text = await promptContext(context);
    else {
      const outcome = word === 'session-end' ? await queueSessionEnd(context) : await queueTranscript(context);
      if (outcome.status === 'unavailable')
        log({ status: 'failed', message: 'the store has no job queue: nothing was queued' });
    }
    await opened.close().catch(() => undefined);
    opened = undefined;
    return finish(text);
  } catch (error) {
    log({
      status: 'failed',
      message: error instanceof Error ? error.message : String(error),
      code: isEngramError(error) ? error.code : errorKind(error),
    });
    if (opened) await opened.close().catch(() => undefined);
    return finish(undefined);
  }
}

/**
 * With `install --skills`, procedure skills follow their memories: synced at each session start,
 * after the context is answered (a failure is logged, never shown).
 */
async function keepSkillsInStep(
  opened: OpenedEngram,
  cwd: string,
  env: NodeJS.ProcessEnv,
  log: (entry: Omit<HookLogEntry, 'at' | 'event'>) => void,
  answer: (context: string | undefined) => void,
  text: string | undefined,
): Promise<void> {
  if (recordedSkillDirectories(opened.loaded.home).length === 0) return;
  answer(text);
  try {
    await syncInstalledSkills({ engram: opened.engram, env, projectRoot: opened.loaded.project.root });
  } catch (error) {
    log({
      status: 'failed',
      message: `procedure skills not synced: ${error instanceof Error ? error.message : String(error)}`,
    });
  }
}

function safe<T>(work: () => T): T | undefined {
  try {
    return work();
  } catch {
    return undefined;
  }
}

function isDirectory(path: string): boolean {
  try {
    return existsSync(path) && statSync(path).isDirectory();
  } catch {
    return false;
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
