import { realpath, stat } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { EngramError } from '../../kernel/errors.js';
import type { InstructionSet } from '../instruction-format.js';
import { expandGlobs } from '../instruction-globs.js';
import { DEFAULT_SETTINGS, type Settings } from '../../kernel/settings.js';
import { findGitRoot } from '../../kernel/node/git-root.js';
import { InstructionLoader, importRoots, isInside, type ImportRoots } from './instruction-loader.js';

export interface LoadInstructionsOptions {
  /** The working directory: project files load from `projectRoot` down to here. */
  cwd: string;
  /** The user's home, holding `.claude/CLAUDE.md` and `.claude/rules/`. */
  home: string;
  /** The managed-policy file; default `settings.instructions.managedPath`; '' for none. */
  managedPath?: string;
  /**
   * Top folder searched for project files and base of relative working paths. Default: like
   * Claude Code, every ancestor of cwd (the filesystem root excluded), with the git root (or cwd)
   * as the project root.
   */
  projectRoot?: string;
  /** Globs on absolute paths of files not to load (Claude Code's `claudeMdExcludes`); never the managed file. */
  excludes?: readonly string[];
  settings?: Pick<Settings, 'instructions'>;
}

/** Claude Code's file names, in the order they load within one folder. */
const PROJECT_FILE = 'CLAUDE.md';
const NESTED_PROJECT_FILE = join('.claude', 'CLAUDE.md');
const RULES_FOLDER = join('.claude', 'rules');
const LOCAL_FILE = 'CLAUDE.local.md';

/** Loads instruction files in FORMATS §3.1 order: managed, user (+ rules), project root down to cwd (+ rules, local). */
export async function loadInstructions(options: LoadInstructionsOptions): Promise<InstructionSet> {
  const limits = (options.settings ?? DEFAULT_SETTINGS).instructions;
  let cwd = await existingDirectory(options.cwd, 'cwd');
  const home = checkedPath(options.home, 'home');
  let projectRoot =
    options.projectRoot === undefined ? undefined : await existingDirectory(options.projectRoot, 'projectRoot');
  // process.cwd() is a real path while a root given by hand may run through a symlink: then walk real paths.
  if (projectRoot !== undefined && !isInside(projectRoot, cwd)) {
    [projectRoot, cwd] = [await realpath(projectRoot), await realpath(cwd)];
  }
  if (projectRoot !== undefined && !isInside(projectRoot, cwd)) {
    throw new EngramError(
      'INVALID_INPUT',
      `The working directory ${cwd} is not inside the project root ${projectRoot}; pass a projectRoot that contains it.`,
    );
  }
  const managedPath = options.managedPath ?? limits.managedPath;
  if (managedPath !== '') checkedPath(managedPath, 'managedPath');
  const excludes = expandGlobs(options.excludes ?? [], limits.maxPathPatterns).patterns;
  const root = projectRoot ?? findGitRoot(cwd) ?? cwd;
  const loader = new InstructionLoader(limits, home, excludes);
  const allowed = loader.allowedImportFolders();
  // Like Claude Code, a cloned repository's files may not pull in files from elsewhere on the machine
  // (Claude Code asks; engram refuses and says how to allow a folder). Secret files are refused anywhere.
  const userRoots = importRoots([home, ...allowed], 'your home folder');
  const projectRoots = (folder: string): ImportRoots =>
    importRoots([root, folder, join(home, '.claude'), ...allowed], `the project (${root}) and ~/.claude`);
  const top = { depth: 0, chain: [], optional: true } as const;

  if (managedPath !== '') {
    const path = resolve(managedPath);
    await loader.load(path, {
      ...top,
      scope: 'managed',
      importRoots: importRoots([home, dirname(path), ...allowed], `your home folder and ${dirname(path)}`),
    });
  }
  await loader.load(join(home, '.claude', 'CLAUDE.md'), { ...top, scope: 'user', importRoots: userRoots });
  await loader.loadRules(join(home, RULES_FOLDER), 'user', root, userRoots);
  for (const directory of directoriesDownTo(cwd, projectRoot)) {
    const roots = projectRoots(directory);
    await loader.load(join(directory, PROJECT_FILE), { ...top, scope: 'project', importRoots: roots });
    await loader.load(join(directory, NESTED_PROJECT_FILE), { ...top, scope: 'project', importRoots: roots });
    await loader.loadRules(join(directory, RULES_FOLDER), 'project', directory, roots);
    await loader.load(join(directory, LOCAL_FILE), { ...top, scope: 'local', importRoots: roots });
  }
  return { files: loader.files, warnings: loader.allWarnings(), projectRoot: root };
}

/** The folders from the project root (or the filesystem root's child) down to cwd. */
function directoriesDownTo(cwd: string, top: string | undefined): string[] {
  const directories: string[] = [];
  let directory = cwd;
  for (;;) {
    const parent = dirname(directory);
    const isFilesystemRoot = parent === directory;
    if (!isFilesystemRoot || directory === cwd) directories.push(directory);
    if (isFilesystemRoot || directory === top) break;
    directory = parent;
  }
  return directories.reverse();
}

function checkedPath(value: unknown, name: string): string {
  if (typeof value !== 'string' || value.trim() === '' || value.includes('\0')) {
    throw new EngramError(
      'INVALID_INPUT',
      `Instructions option ${name} must be a non-empty path without NUL characters; got ${JSON.stringify(String(value).slice(0, 80))}.`,
    );
  }
  return resolve(value);
}

async function existingDirectory(value: unknown, name: string): Promise<string> {
  const path = checkedPath(value, name);
  const info = await stat(path).catch(() => undefined);
  if (!info?.isDirectory())
    throw new EngramError('INVALID_INPUT', `Instructions option ${name}: ${path} is not an existing directory.`);
  return path;
}
