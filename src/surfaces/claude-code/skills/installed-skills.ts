import { join } from 'node:path';
import type { Engram } from '../../../engram.js';
import type { Scope } from '../../../memory/scope.js';
import { claudeCodePaths } from '../claude-code-install.js';
import { removeProcedureSkills, syncProcedureSkills, type SyncProcedureSkillsReport } from './procedure-skills.js';

/**
 * Where `engram install claude-code --skills` keeps procedure skills: the project's procedures in the
 * project's own `.claude/skills` (so they show up in that project only), global ones in Claude Code's
 * user skills folder (every project). Each folder engram writes there carries its marker.
 */
export function skillDirectories(options: {
  engram: Engram;
  env: Record<string, string | undefined>;
  projectRoot: string;
}): Array<{ dir: string; scopes: Scope[] }> {
  const paths = claudeCodePaths(options.env, options.projectRoot);
  const project = options.engram.readScopes.filter((scope) => scope !== 'global');
  return [
    ...(project.length > 0 ? [{ dir: join(options.projectRoot, '.claude', 'skills'), scopes: [...project] }] : []),
    { dir: join(paths.configDir, 'skills'), scopes: ['global' as Scope] },
  ];
}

/** Brings the skill folders of this project and global in step with their procedure memories. */
export async function syncInstalledSkills(options: {
  engram: Engram;
  env: Record<string, string | undefined>;
  projectRoot: string;
}): Promise<SyncProcedureSkillsReport[]> {
  const reports: SyncProcedureSkillsReport[] = [];
  for (const { dir, scopes } of skillDirectories(options))
    reports.push(await syncProcedureSkills({ engram: options.engram, dir, scopes }));
  return reports;
}

/** Removes engram's own skill folders from each directory (a user's skills stay). */
export async function removeInstalledSkills(dirs: readonly string[]): Promise<string[]> {
  const removed: string[] = [];
  for (const dir of dirs) removed.push(...(await removeProcedureSkills({ dir })).removed);
  return removed;
}
