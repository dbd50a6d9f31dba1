import { AGENT_HOOK_PROTOCOLS } from './agent-hook-protocols.js';
import { RECORDED_ENV } from './hook-incoming.js';

/**
 * The environment variables a question to the hook server records (hook.sh's ask mode, OpenCode's
 * plugin): the queueing hooks' RECORDED_ENV and the variables only an answering hook reads (each
 * agent's project folder variable, Copilot's home). The server answers with these as the hook had
 * them and the rest of its own environment (the secrets: they are never sent).
 */
export const ASKED_ENV: readonly string[] = [
  ...new Set([
    ...RECORDED_ENV,
    ...Object.values(AGENT_HOOK_PROTOCOLS).flatMap((protocol) =>
      protocol.projectDirEnv === undefined ? [] : [protocol.projectDirEnv],
    ),
    'COPILOT_HOME',
  ]),
];
