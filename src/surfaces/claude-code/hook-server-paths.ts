import { join } from 'node:path';

/** The hook server's worker lock (hook-worker-lock.ts): `spool/worker-hook-server.pid`, one server per ENGRAM_HOME. */
export const HOOK_SERVER_LOCK = 'hook-server';

/** The hook server's folder (0700): only this user may reach its socket. */
export function hookServerFolder(home: string): string {
  return join(home, 'run');
}

/** The unix socket the hook server listens on (0600); no TCP port, so no other local user can ask it. */
export function hookServerSocket(home: string): string {
  return join(hookServerFolder(home), 'hooks.sock');
}
