import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { normalizeGitRemote } from '../kernel/git-remote.js';
import { findGitRoot } from '../kernel/node/git-root.js';
import { makeScope, type Scope } from '../memory/scope.js';

export const PROJECT_CONFIG_FILE = '.engram.json';

/** How a project's id was found, strongest first. */
export type ProjectIdSource = 'explicit' | 'git-remote' | 'git-root' | 'directory';

export interface ProjectIdentity {
  id: string;
  scope: Scope;
  source: ProjectIdSource;
  /** The git root, or the working directory outside git. */
  root: string;
  /** The nearest `.engram.json` at or above the working directory (up to the git root), if any. */
  configFile?: string;
}

/**
 * Resolves the project of a working directory: an explicit id (from `.engram.json` or settings),
 * else the normalized git remote URL, else the absolute path of the git root, else the directory.
 * Reads `.git` directly instead of spawning git, because hooks call this on every prompt.
 */
export function resolveProjectIdentity(cwd: string, explicitId?: string): ProjectIdentity {
  const directory = resolve(cwd);
  const gitRoot = findGitRoot(directory);
  const root = gitRoot ?? directory;
  const configFile = findProjectConfigFile(directory, gitRoot);
  if (explicitId && explicitId.length > 0) {
    return {
      id: explicitId,
      scope: makeScope('project', explicitId),
      source: 'explicit',
      root,
      ...(configFile && { configFile }),
    };
  }
  if (gitRoot) {
    const remote = readGitRemote(gitRoot);
    const normalized = remote ? normalizeGitRemote(remote) : undefined;
    if (normalized) {
      return {
        id: normalized,
        scope: makeScope('project', normalized),
        source: 'git-remote',
        root,
        ...(configFile && { configFile }),
      };
    }
    return {
      id: gitRoot,
      scope: makeScope('project', gitRoot),
      source: 'git-root',
      root,
      ...(configFile && { configFile }),
    };
  }
  return {
    id: directory,
    scope: makeScope('project', directory),
    source: 'directory',
    root,
    ...(configFile && { configFile }),
  };
}

/** The nearest `.engram.json` from `start` upward, stopping at the git root when there is one. */
export function findProjectConfigFile(start: string, gitRoot?: string): string | undefined {
  let directory = resolve(start);
  for (;;) {
    const candidate = join(directory, PROJECT_CONFIG_FILE);
    if (existsSync(candidate)) return candidate;
    if (gitRoot !== undefined && directory === gitRoot) return undefined;
    const parent = dirname(directory);
    if (parent === directory) return undefined;
    directory = parent;
  }
}

/** The URL of remote `origin`, else of the first remote, from the repository's config file. */
export function readGitRemote(gitRoot: string): string | undefined {
  const config = readGitConfig(gitRoot);
  if (config === undefined) return undefined;
  const remotes = new Map<string, string>();
  let current: string | undefined;
  for (const rawLine of config.split(/\r?\n/)) {
    const line = rawLine.trim();
    const section = /^\[\s*remote\s+"([^"]*)"\s*\]$/.exec(line);
    if (section) {
      current = section[1];
      continue;
    }
    if (line.startsWith('[')) {
      current = undefined;
      continue;
    }
    if (current === undefined) continue;
    const url = /^url\s*=\s*(.+)$/i.exec(line);
    if (url && !remotes.has(current)) remotes.set(current, url[1]!.trim().replace(/^"|"$/g, ''));
  }
  return remotes.get('origin') ?? remotes.values().next().value;
}

function readGitConfig(gitRoot: string): string | undefined {
  let gitDirectory = join(gitRoot, '.git');
  try {
    if (statSync(gitDirectory).isFile()) {
      // A worktree or submodule: `.git` is a file that points at the real git directory.
      const pointer = /^gitdir:\s*(.+)$/m.exec(readFileSync(gitDirectory, 'utf8'));
      if (!pointer) return undefined;
      const target = pointer[1]!.trim();
      gitDirectory = isAbsolute(target) ? target : resolve(gitRoot, target);
      const common = join(gitDirectory, 'commondir');
      if (existsSync(common)) gitDirectory = resolve(gitDirectory, readFileSync(common, 'utf8').trim());
    }
    return readFileSync(join(gitDirectory, 'config'), 'utf8');
  } catch {
    return undefined;
  }
}
