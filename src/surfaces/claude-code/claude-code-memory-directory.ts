import { readdir, stat } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';

/**
 * Where Claude Code keeps its own auto memory for a project (FORMATS §2.1, §3.2):
 * `<config>/projects/<slug>/memory/`, `<config>` being $CLAUDE_CONFIG_DIR or ~/.claude and the
 * slug the project root (the git root) with every character outside [A-Za-z0-9] replaced by `-`.
 * Over 200 characters Claude Code keeps 200 and appends `-` and a hash of its runtime, which engram
 * cannot recompute, so such a folder is found by its prefix. engram only reads this folder.
 */

const SLUG_MAX = 200;

/** The slug of a path as Claude Code names its project folders (only the 200-character prefix for long paths). */
export function claudeCodeProjectSlug(path: string): string {
  const slug = path.replace(/[^A-Za-z0-9]/g, '-');
  return slug.length > SLUG_MAX ? slug.slice(0, SLUG_MAX) : slug;
}

/** Claude Code's configuration folder: $CLAUDE_CONFIG_DIR, else ~/.claude. */
export function claudeCodeConfigDirectory(env: Readonly<Record<string, string | undefined>> = process.env): string {
  const configured = env.CLAUDE_CONFIG_DIR;
  return configured && configured.length > 0 ? configured : join(env.HOME || homedir(), '.claude');
}

/**
 * The auto-memory folder of a project root, where it exists; `expected` is where it would be
 * (for messages). A long root's folder is found by prefix; when several match, none is guessed.
 */
export async function findClaudeCodeMemoryDirectory(options: {
  projectRoot: string;
  env?: Readonly<Record<string, string | undefined>>;
}): Promise<{ directory?: string; expected: string }> {
  const projects = join(claudeCodeConfigDirectory(options.env), 'projects');
  const full = options.projectRoot.replace(/[^A-Za-z0-9]/g, '-');
  const expected = join(projects, full.length > SLUG_MAX ? `${full.slice(0, SLUG_MAX)}-<hash>` : full, 'memory');
  if (full.length <= SLUG_MAX)
    return (await isDirectory(join(projects, full, 'memory')))
      ? { directory: join(projects, full, 'memory'), expected }
      : { expected };
  const prefix = `${full.slice(0, SLUG_MAX)}-`;
  const names = await readdir(projects).catch(() => [] as string[]);
  const matches: string[] = [];
  for (const name of names) {
    if (name.startsWith(prefix) && (await isDirectory(join(projects, name, 'memory'))))
      matches.push(join(projects, name, 'memory'));
  }
  return matches.length === 1 ? { directory: matches[0]!, expected } : { expected };
}

async function isDirectory(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isDirectory();
  } catch {
    return false;
  }
}
