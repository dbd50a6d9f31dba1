import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { HOOK_SERVER_LOCK } from './hook-server-paths.js';
import { claimWorkerStart } from './hook-worker-lock.js';

/**
 * Starts the hook server detached (`<launcher> hook serve`, the launcher this hook was started by),
 * unless one runs or another hook is starting one (the `worker-hook-server.pid` lock, taken here and
 * handed to the server with its pid, as for the store's worker).
 */
export function startHookServer(home: string, env: NodeJS.ProcessEnv): void {
  const launcher = process.argv[1];
  if (launcher === undefined || !launcher.endsWith('engram.mjs') || !existsSync(launcher)) return;
  const claim = claimWorkerStart(home, HOOK_SERVER_LOCK);
  if (claim === undefined) return;
  try {
    const { ENGRAM_HOOK_ASKED: _asked, ...serverEnv } = env;
    const child = spawn(process.execPath, [launcher, 'hook', 'serve'], {
      detached: true,
      stdio: 'ignore',
      env: serverEnv,
    });
    child.on('error', () => undefined);
    child.unref();
    if (child.pid === undefined) claim.abandon();
    else claim.started(child.pid);
  } catch {
    claim.abandon();
  }
}
