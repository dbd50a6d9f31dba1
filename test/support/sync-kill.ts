import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ENGRAM_BINARY } from './cli-harness.js';
import { processesWith } from './process-scan.js';
import type { Machine } from './sync-machines.js';

/**
 * `engram sync` as a process of its own, SIGKILLed at a chosen point. The point is found by a `git`
 * put before the real one on the process's PATH: it counts the git commands the sync runs and kills
 * the engram process that started it before or after the n-th, or some milliseconds after its push
 * returned (while the sync writes this store). The git command itself is the real one, untouched;
 * a git still running when engram dies goes on running, as it would after a real crash.
 */

export type KillPoint =
  | { when: 'before' | 'after'; call: number }
  | { when: 'after-push'; delayMs: number }
  /** Right after the first git `command` (a subcommand: push, fetch…) returned, before engram reads its answer. */
  | { when: 'after-command'; command: string }
  | { when: 'never' };

export interface KilledSync {
  /** The process died of the SIGKILL (a point past its last git command lets it finish). */
  killed: boolean;
  code: number | null;
  stdout: string;
  stderr: string;
  /** The git commands it ran, in order (their subcommand). */
  calls: string[];
  /** The remote's branch tip moved while it ran (its push landed). */
  pushed: boolean;
}

const WRAPPER = `#!/bin/sh
engram=$PPID
n=$(( $(cat "$SYNC_KILL_DIR/count" 2>/dev/null || echo 0) + 1 ))
echo "$n" > "$SYNC_KILL_DIR/count"
sub=""
skip=""
for arg in "$@"; do
  if [ -n "$skip" ]; then skip=""; continue; fi
  case "$arg" in
    -c) skip=1 ;;
    -*) ;;
    *) sub=$arg; break ;;
  esac
done
echo "$sub" >> "$SYNC_KILL_DIR/calls"
if [ "$SYNC_KILL_WHEN" = before ] && [ "$n" = "$SYNC_KILL_CALL" ]; then kill -9 "$engram"; exit 137; fi
"$SYNC_KILL_GIT" "$@"
code=$?
if [ "$SYNC_KILL_WHEN" = after ] && [ "$n" = "$SYNC_KILL_CALL" ]; then kill -9 "$engram"; fi
if [ "$SYNC_KILL_WHEN" = after-command ] && [ "$sub" = "$SYNC_KILL_COMMAND" ]; then kill -9 "$engram"; fi
if [ "$SYNC_KILL_WHEN" = after-push ] && [ "$sub" = push ]; then
  ( sleep "$SYNC_KILL_DELAY"; kill -9 "$engram" ) </dev/null >/dev/null 2>&1 &
fi
exit $code
`;

/** A folder holding the killing `git`; one per test world (remove it with the world). */
export function killingGitFolder(root: string): string {
  const folder = join(root, 'killing-git');
  if (!existsSync(join(folder, 'git'))) {
    mkdirSync(folder, { recursive: true });
    writeFileSync(join(folder, 'git'), WRAPPER);
    chmodSync(join(folder, 'git'), 0o755);
  }
  return folder;
}

let realGit: string | undefined;
function findRealGit(): string {
  realGit ??= execFileSync('sh', ['-c', 'command -v git']).toString().trim();
  return realGit;
}

function branchTip(remoteGitDir: string | undefined): string | undefined {
  if (remoteGitDir === undefined) return undefined;
  try {
    return execFileSync('git', ['--git-dir', remoteGitDir, 'rev-parse', '--verify', '--quiet', 'refs/heads/engram'], {
      stdio: ['ignore', 'pipe', 'ignore'],
    })
      .toString()
      .trim();
  } catch {
    return undefined;
  }
}

/**
 * Runs `engram sync --json` for a machine as a process and kills it at `point`. `remoteGitDir` is
 * the remote's repository on disk (to tell whether the push landed).
 */
export async function killedSync(
  machine: Machine,
  point: KillPoint,
  options: { root: string; remoteGitDir?: string; timeoutMs?: number },
): Promise<KilledSync> {
  const folder = killingGitFolder(options.root);
  const state = mkdtempSync(join(options.root, 'kill-'));
  const before = branchTip(options.remoteGitDir);
  const env: Record<string, string> = {
    ...machine.env,
    PATH: `${folder}:${machine.env.PATH ?? process.env.PATH ?? '/usr/bin:/bin'}`,
    SYNC_KILL_DIR: state,
    SYNC_KILL_GIT: findRealGit(),
    SYNC_KILL_WHEN: point.when,
    SYNC_KILL_CALL: 'call' in point ? String(point.call) : '0',
    SYNC_KILL_DELAY: 'delayMs' in point ? (point.delayMs / 1000).toFixed(3) : '0',
    SYNC_KILL_COMMAND: 'command' in point ? point.command : '',
  };
  const result = await new Promise<{ code: number | null; signal: NodeJS.Signals | null; out: string; err: string }>(
    (resolve, reject) => {
      const child = spawn(process.execPath, [ENGRAM_BINARY, 'sync', '--json'], {
        cwd: machine.cwd,
        env,
        stdio: 'pipe',
      });
      const out: Buffer[] = [];
      const err: Buffer[] = [];
      child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
      child.stderr.on('data', (chunk: Buffer) => err.push(chunk));
      child.stdin.end();
      const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 60_000);
      child.on('error', reject);
      child.on('close', (code, signal) => {
        clearTimeout(timer);
        resolve({
          code,
          signal,
          out: Buffer.concat(out).toString('utf8'),
          err: Buffer.concat(err).toString('utf8'),
        });
      });
    },
  );
  // A git the kill left running (a push in flight) finishes on its own; wait for it to settle.
  await settle(state);
  const calls = existsSync(join(state, 'calls'))
    ? readFileSync(join(state, 'calls'), 'utf8').split('\n').filter(Boolean)
    : [];
  rmSync(state, { recursive: true, force: true });
  const after = branchTip(options.remoteGitDir);
  return {
    killed: result.signal === 'SIGKILL',
    code: result.code,
    stdout: result.out,
    stderr: result.err,
    calls,
    pushed: before !== after,
  };
}

/** Waits until no process started by this kill (a git, a delayed kill) is still running. */
async function settle(state: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline && processesWith(state, 'environ') > 0)
    await new Promise((resolve) => setTimeout(resolve, 20));
}
