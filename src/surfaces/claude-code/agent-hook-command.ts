import { dirname, join } from 'node:path';
import type { HookEventName } from './hook-input.js';

const shellQuote = (word: string): string => `'${word.replace(/'/g, `'\\''`)}'`;

/**
 * The hook command an agent runs for one event, by absolute paths: the sh hook beside the launcher
 * (hook.sh: session start and the per-prompt hook ask the resident hook server, the queueing events
 * are written raw for the adopter, and whatever it cannot do runs this Node and the launcher, fed the
 * same stdin). On Windows the launcher runs with this Node directly. Both forms hold ` hook <word>
 * --agent <agent>`, the words an install finds its entries by.
 */
export function agentHookCommand(
  agent: string,
  launcher: string,
  word: HookEventName,
  node = process.execPath,
  platform: NodeJS.Platform = process.platform,
): string {
  if (platform !== 'win32')
    return `sh ${shellQuote(join(dirname(launcher), 'hook.sh'))} --node ${shellQuote(node)} hook ${word} --agent ${agent}`;
  return `${shellQuote(node)} ${shellQuote(launcher)} hook ${word} --agent ${agent}`;
}
