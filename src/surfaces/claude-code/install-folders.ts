import { existsSync } from 'node:fs';
import { rmdir } from 'node:fs/promises';
import { dirname } from 'node:path';

// The folders an install makes for a configuration file it writes (a project's .claude/, an agent's
// hooks/ or plugin/ folder, the agent's own folder when it had none), recorded so that uninstall
// leaves the tree as it found it: each one it made goes when it is empty again, and one the agent or
// the user has put anything in since stays.

/** `folder` and its ancestors that do not exist yet, deepest first (none when it exists). */
export function missingFolders(folder: string): string[] {
  const missing: string[] = [];
  for (let at = folder; !existsSync(at) && dirname(at) !== at; at = dirname(at)) missing.push(at);
  return missing;
}

/** Removes each folder that is empty, deepest first; returns those removed. */
export async function removeEmptyFolders(folders: readonly string[]): Promise<string[]> {
  const removed: string[] = [];
  for (const folder of [...new Set(folders)].sort((a, b) => b.length - a.length)) {
    try {
      await rmdir(folder);
      removed.push(folder);
    } catch {
      // Not empty, gone already, or not removable: left as it is.
    }
  }
  return removed;
}
