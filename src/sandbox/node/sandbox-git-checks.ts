import { sandboxDenied } from '../sandbox-denied.js';
import { runProcess } from './sandbox-process.js';

export interface GitRunOptions {
  cwd: string;
  env: Record<string, string>;
  timeoutMs: number;
}

/**
 * Why git may not run in this project, or undefined when it may: git's work tree must be the
 * project root itself. A root inside a larger repository finds none (GIT_CEILING_DIRECTORIES stops
 * the search at the root), and a repository whose core.worktree points elsewhere is refused.
 */
export async function gitWorkTreeProblem(
  git: string,
  root: string,
  options: GitRunOptions,
): Promise<string | undefined> {
  const result = await runProcess(git, ['--no-pager', 'rev-parse', '--show-toplevel'], {
    ...options,
    maxOutputBytes: 64 * 1024,
  });
  if (result.exitCode !== 0) {
    const said = result.stderr.trim().split('\n')[0]?.slice(0, 200) ?? '';
    return `git is not available here: the project root ${root} is not the top of a git repository; git does not look above the project root, so a repository around it is not used${said ? ` (git: ${said})` : ''}.`;
  }
  const top = result.stdout.replace(/\r?\n$/, '');
  if (top !== root)
    return `git is not available here: git's work tree is ${JSON.stringify(top.slice(0, 200))}, not the project root ${root}, so git could read files outside the project.`;
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
    const result = await runProcess(git, ['--no-pager', 'cat-file', '-t', `${revision}^{}`], {
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
