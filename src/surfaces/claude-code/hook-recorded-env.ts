import { SETTING_DEFINITIONS } from '../../kernel/settings.js';
import { AGENT_HOOK_PROTOCOLS } from './agent-hook-protocols.js';

/**
 * The environment variables a hook's decisions read, which the sh hook (hook.sh) and OpenCode's
 * plugin record with each event they hand on (to the hook server, or to the fast path's adopter):
 * engram's home, every setting's variable but the secrets (an API key is never written to disk or
 * sent for this: the server and the worker have their own), each agent's project folder variable
 * and Copilot's home (where its session files are). Whoever takes the event runs it with these as
 * the hook had them and the rest of its own environment. The same list is written out in hook.sh;
 * a test keeps the two equal.
 */
export const RECORDED_ENV: readonly string[] = [
  ...new Set([
    'HOME',
    'ENGRAM_HOME',
    'CLAUDE_PROJECT_DIR',
    ...SETTING_DEFINITIONS.filter((definition) => definition.env && !definition.secret).map(
      (definition) => definition.env!,
    ),
    ...Object.values(AGENT_HOOK_PROTOCOLS).flatMap((protocol) =>
      protocol.projectDirEnv === undefined ? [] : [protocol.projectDirEnv],
    ),
    'COPILOT_HOME',
  ]),
];

/**
 * The environment a recorded event runs in: the hook's recorded variables over the taker's own
 * (the hook server's or the adopter's), so a variable the hook did not have is not taken from the
 * taker, and what was never recorded (the secrets) comes from the taker.
 */
export function recordedHookEnv(own: NodeJS.ProcessEnv, recorded: Readonly<Record<string, string>>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...own };
  for (const name of RECORDED_ENV) delete env[name];
  return Object.assign(env, recorded);
}
