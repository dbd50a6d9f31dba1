import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** `npm install` in a clean clone of this repository and of the commit before issue 12 (npm's cache as it is), in one run. */
export interface InstallBench {
  seconds: number;
  secondsBefore: number | null;
  before: string;
}

/**
 * Clones the committed tree into a temp folder and times `npm install` there (its `prepare` build
 * included); then the same for `beforeCommit` (better-sqlite3, whose install script compiles it
 * when no prebuild can be downloaded), when that commit is in this clone's history.
 */
export function benchInstall(root: string, beforeCommit: string | undefined): InstallBench {
  const seconds = timedInstall(root, undefined);
  let secondsBefore: number | null = null;
  let before = 'no commit named in bench/better-sqlite3-baseline.json';
  if (beforeCommit) {
    try {
      secondsBefore = timedInstall(root, beforeCommit);
      before = `npm install of ${beforeCommit.slice(0, 7)} (better-sqlite3), same run`;
    } catch (error) {
      before = `npm install of ${beforeCommit.slice(0, 7)} failed: ${(error as Error).message.split('\n')[0]}`;
    }
  }
  return { seconds, secondsBefore, before };
}

function timedInstall(root: string, commit: string | undefined): number {
  const folder = mkdtempSync(join(tmpdir(), 'engram-install-bench-'));
  try {
    const clone = join(folder, 'clone');
    execFileSync('git', ['clone', '--quiet', root, clone], { stdio: 'ignore' });
    if (commit) execFileSync('git', ['-C', clone, 'checkout', '--quiet', commit], { stdio: 'ignore' });
    const started = process.hrtime.bigint();
    execFileSync('npm', ['install', '--no-audit', '--no-fund'], { cwd: clone, stdio: 'ignore' });
    return Math.round(Number(process.hrtime.bigint() - started) / 1e8) / 10;
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}
