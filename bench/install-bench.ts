import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** `npm install` in a clean clone of this repository (npm's cache as it is), beside the figure before issue 12. */
export interface InstallBench {
  seconds: number;
  secondsBefore: number | null;
  before: string;
}

/** Clones the committed tree into a temp folder and times `npm install` there (its `prepare` build included). */
export function benchInstall(root: string, before: { seconds?: number; note?: string } | undefined): InstallBench {
  const folder = mkdtempSync(join(tmpdir(), 'engram-install-bench-'));
  try {
    execFileSync('git', ['clone', '--quiet', root, join(folder, 'clone')], { stdio: 'ignore' });
    const started = process.hrtime.bigint();
    execFileSync('npm', ['install', '--no-audit', '--no-fund'], { cwd: join(folder, 'clone'), stdio: 'ignore' });
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    return {
      seconds: Math.round(seconds * 10) / 10,
      secondsBefore: before?.seconds ?? null,
      before: before?.note ?? 'not recorded',
    };
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}
