import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';
import { loadSettings } from '../../src/node/load-settings.js';
import type { Settings } from '../../src/kernel/settings.js';

/** An empty ENGRAM_HOME and a git project beside it. */
export interface ProjectFolders {
  home: string;
  project: string;
}

/** Makes fresh {@link ProjectFolders} (under a temp folder named `prefix`), each removed after the test that made it. */
export function useProjectFolders(prefix: string): () => ProjectFolders {
  const roots: string[] = [];
  afterEach(() => {
    for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
  });
  return () => {
    const root = mkdtempSync(join(tmpdir(), prefix));
    roots.push(root);
    const home = join(root, 'home');
    const project = join(root, 'project');
    mkdirSync(home);
    mkdirSync(join(project, '.git'), { recursive: true });
    return { home, project };
  };
}

/** Settings as the loader builds them from these environment variables (and nothing else), in fresh folders. */
export function settingsFromEnv(folders: () => ProjectFolders, env: Record<string, string>): Settings {
  const { home, project } = folders();
  return loadSettings({ cwd: project, env: { ENGRAM_HOME: home, ...env } }).settings as Settings;
}
