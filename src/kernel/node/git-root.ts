import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

/** The nearest directory at or above `start` that holds `.git` (a folder, or a file for worktrees). */
export function findGitRoot(start: string): string | undefined {
  let directory = resolve(start);
  for (;;) {
    if (existsSync(join(directory, '.git'))) return directory;
    const parent = dirname(directory);
    if (parent === directory) return undefined;
    directory = parent;
  }
}
