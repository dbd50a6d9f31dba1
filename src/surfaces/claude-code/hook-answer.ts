import { openEngram, type OpenedEngram } from '../../node/open-engram.js';
import { promptContext, sessionStartContext, type HookContext } from './claude-code-hooks.js';
import { HOOK_ACTOR, type HookInput } from './hook-input.js';
import type { HookLogEntry } from './hook-log.js';

type Log = (entry: Omit<HookLogEntry, 'at' | 'event'>) => void;

/**
 * SessionStart and UserPromptSubmit with the store open (hook-main.ts loads this module only for
 * them: the queueing hooks never open a store). Returns the text for `additionalContext`.
 */
export async function answerFromStore(
  word: 'session-start' | 'user-prompt-submit',
  options: {
    cwd: string;
    env: NodeJS.ProcessEnv;
    input: HookInput;
    busyTimeoutMs: number;
    remainingMs: () => number;
    log: Log;
    answer: (text: string | undefined) => void;
    /** Recorded in history (the agent's name); Claude Code's by default. */
    actor?: string;
  },
): Promise<string | undefined> {
  const { cwd, env, log, answer } = options;
  const opened = await openEngram({
    cwd,
    env,
    actor: options.actor ?? HOOK_ACTOR,
    // Ranked recall only: no model on the user's path (claude-code-hooks.ts), so none is made.
    model: false,
    flags: { 'store.busyTimeoutMs': options.busyTimeoutMs },
  });
  try {
    const context: HookContext = { opened, input: options.input, remainingMs: options.remainingMs, log, answer };
    if (word === 'user-prompt-submit') return await promptContext(context);
    const text = await sessionStartContext(context);
    // Procedure skills are Claude Code's: another agent's session start leaves them alone.
    if ((options.actor ?? HOOK_ACTOR) === HOOK_ACTOR) await keepSkillsInStep(opened, cwd, env, log, answer, text);
    return text;
  } finally {
    await opened.close().catch(() => undefined);
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
  log: Log,
  answer: (context: string | undefined) => void,
  text: string | undefined,
): Promise<void> {
  // Loaded here, not with the module: the per-prompt hook never needs them.
  const { recordedSkillDirectories } = await import('./claude-code-install.js');
  if (recordedSkillDirectories(opened.loaded.home).length === 0) return;
  answer(text);
  try {
    const { syncInstalledSkills } = await import('./skills/installed-skills.js');
    await syncInstalledSkills({ engram: opened.engram, env, projectRoot: opened.loaded.project.root });
  } catch (error) {
    log({
      status: 'failed',
      message: `procedure skills not synced: ${error instanceof Error ? error.message : String(error)}`,
    });
  }
}
