import { dirname, join } from 'node:path';
import type { HookEventName } from './hook-input.js';

const shellQuote = (word: string): string => `'${word.replace(/'/g, `'\\''`)}'`;

/**
 * The hook command an agent runs for one event, by absolute paths. Session start and the per-prompt
 * hook go through the sh client beside the launcher (hook.sh: it asks the resident hook server
 * and falls back to this Node and the launcher, fed the same stdin); the other events, and every
 * event on Windows, run the launcher with this Node directly. Both forms hold ` hook <word> --agent
 * <agent>`, the words an install finds its entries by.
 */
export function agentHookCommand(
  agent: string,
  launcher: string,
  word: HookEventName,
  node = process.execPath,
  platform: NodeJS.Platform = process.platform,
): string {
  if (platform !== 'win32' && (word === 'session-start' || word === 'user-prompt-submit'))
    return `sh ${shellQuote(join(dirname(launcher), 'hook.sh'))} --node ${shellQuote(node)} hook ${word} --agent ${agent}`;
  return `${shellQuote(node)} ${shellQuote(launcher)} hook ${word} --agent ${agent}`;
}
