import { readFile, realpath } from 'node:fs/promises';
import { isAbsolute, resolve } from 'node:path';
import { sandboxDenied } from '../sandbox-denied.js';
import { GIT_SAFETY_OPTIONS, programValuedGitSettings } from '../sandbox-git-programs.js';
import { insideOf } from './sandbox-paths.js';
import { runProcess } from './sandbox-process.js';

export interface GitRunOptions {
  cwd: string;
  env: Record<string, string>;
  timeoutMs: number;
}

/**
 * Why git may not run in this project, or undefined when it may. Git's work tree must be the project
 * root itself (GIT_CEILING_DIRECTORIES stops the search at the root, core.worktree elsewhere is
 * refused); its git dir and common dir must be inside the root (a `.git` file or symlink pointing
 * out, a linked worktree of an outside repository, objects/info/alternates borrowing outside objects
 * are refused); and no setting of the repository's config (includes followed) may name a program.
 * Asked before every git command: the config may change between two.
 */
export async function gitRepositoryProblem(
  git: string,
  root: string,
  options: GitRunOptions,
): Promise<string | undefined> {
  const located = await runProcess(
    git,
    [...GIT_SAFETY_OPTIONS, 'rev-parse', '--path-format=absolute', '--show-toplevel', '--git-dir', '--git-common-dir'],
    { ...options, maxOutputBytes: 64 * 1024 },
  );
  if (located.exitCode !== 0) {
    const said = located.stderr.trim().split('\n')[0]?.slice(0, 200) ?? '';
    return `git is not available here: the project root ${root} is not the top of a git repository; git does not look above the project root, so a repository around it is not used${said ? ` (git: ${said})` : ''}.`;
  }
  const [top = '', gitDir = '', commonDir = ''] = located.stdout.replace(/\r?\n$/, '').split('\n');
  if (top !== root)
    return `git is not available here: git's work tree is ${JSON.stringify(top.slice(0, 200))}, not the project root ${root}, so git could read files outside the project.`;
  for (const [what, folder] of [
    ['git dir', gitDir],
    ['common git dir', commonDir],
  ] as const) {
    const real = await realpath(folder).catch(() => folder);
    if (insideOf(root, real) === undefined)
      return `git is not available here: the repository's ${what} is ${JSON.stringify(real.slice(0, 200))}, outside the project root ${root} (a .git file or link pointing out, or a linked worktree), so git would read a repository outside the project.`;
  }
  const borrowed = await outsideAlternates(resolve(commonDir, 'objects'), root);
  if (borrowed !== undefined)
    return `git is not available here: objects/info/alternates borrows objects from ${JSON.stringify(borrowed.slice(0, 200))}, outside the project root ${root}.`;
  const config = await runProcess(git, [...GIT_SAFETY_OPTIONS, 'config', '--list', '--includes', '-z'], {
    ...options,
    maxOutputBytes: 1024 * 1024,
  });
  if (config.exitCode !== 0 || config.truncated)
    return `git is not available here: the repository's config cannot be read (${config.stderr.trim().split('\n')[0]?.slice(0, 200) ?? 'too large'}).`;
  const programs = programValuedGitSettings(config.stdout);
  if (programs.length > 0) {
    const shown = programs.slice(0, 5).join(', ');
    return `git is not available here: the repository's config sets ${shown}${programs.length > 5 ? ` and ${programs.length - 5} more` : ''}; git in the sandbox starts no program a repository names. Read files with read_file and search_files instead, or remove the setting.`;
  }
  return undefined;
}

// The first alternate object folder outside the root, or undefined. Relative entries are relative to objects/.
async function outsideAlternates(objects: string, root: string): Promise<string | undefined> {
  let text: string;
  try {
    text = await readFile(resolve(objects, 'info', 'alternates'), 'utf8');
  } catch {
    return undefined;
  }
  for (const line of text.split('\n')) {
    const entry = line.trim();
    if (entry === '' || entry.startsWith('#')) continue;
    const folder = isAbsolute(entry) ? entry : resolve(objects, entry);
    const real = await realpath(folder).catch(() => folder);
    if (insideOf(root, real) === undefined) return real;
  }
  return undefined;
}

/** Refuses a revision that names a blob (directly or through a tag): its content would be shown without any path to check. */
export async function refuseBlobRevisions(
  git: string,
  revisions: readonly string[],
  options: GitRunOptions,
): Promise<void> {
  for (const revision of revisions) {
    // `^{}` peels tags; anything that is not an object (a path, a range) fails and is left to git.
    const result = await runProcess(git, [...GIT_SAFETY_OPTIONS, 'cat-file', '-t', `${revision}^{}`], {
      ...options,
      maxOutputBytes: 1024,
    });
    if (result.exitCode === 0 && result.stdout.trim() === 'blob') {
      throw sandboxDenied(
        `git: ${JSON.stringify(revision.slice(0, 80))} is a file's content by object id, which cannot be checked against the files that hold secrets; name it as <revision>:<path> instead (e.g. HEAD:src/index.ts).`,
      );
    }
  }
}
