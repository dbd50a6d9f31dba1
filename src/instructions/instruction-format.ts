import { matchAnyGlob } from './instruction-globs.js';

/** Where an instruction file comes from, in load order. */
export type InstructionScope = 'managed' | 'user' | 'project' | 'local';

/** One loaded instruction file (or a file one of them imported). */
export interface InstructionFile {
  /** Absolute path as found (a symlinked rule keeps its link's path). */
  path: string;
  scope: InstructionScope;
  /** The text the model sees: frontmatter and block-level HTML comments removed. */
  content: string;
  /** `paths:` globs of a path-scoped rule (as written); the file applies only while a match is worked on. */
  paths?: string[];
  /** The file whose `@path` line imported this one. */
  importedFrom?: string;
  /** Directory the `paths:` globs are relative to (the project root, or the folder holding `.claude/rules`). */
  baseDirectory?: string;
  /** The globs after brace expansion, as matched. */
  patterns?: string[];
}

/** Everything found for one working directory, in load order (later files take precedence). */
export interface InstructionSet {
  files: InstructionFile[];
  /** Files skipped and why (too large, unreadable, import cycle, depth limit…), in the order met. */
  warnings: string[];
  /** Relative working paths are taken relative to this directory. */
  projectRoot: string;
}

const SCOPE_DESCRIPTIONS: Record<InstructionScope, string> = {
  managed: 'managed policy instructions, set by an administrator',
  user: "the user's own instructions for all projects",
  project: 'project instructions, shared with the codebase',
  local: "the user's private instructions for this project, not checked in",
};

/**
 * The files that apply now: every file without `paths:`, plus path-scoped rules that match one of
 * the working paths (absolute, or relative to the project root).
 */
export function activeInstructions(
  set: Pick<InstructionSet, 'files' | 'projectRoot'>,
  workingPaths: readonly string[],
): InstructionFile[] {
  return set.files.filter((file) => {
    if (file.paths === undefined) return true;
    const base = file.baseDirectory ?? set.projectRoot;
    const patterns = file.patterns ?? file.paths;
    return workingPaths.some((working) => {
      const relative = relativeTo(base, set.projectRoot, working);
      return relative !== undefined && matchAnyGlob(patterns, relative);
    });
  });
}

/** A working path as a `/`-separated path inside `base`, or undefined when it lies outside. */
function relativeTo(base: string, projectRoot: string, working: string): string | undefined {
  if (working === '' || working.includes('\0')) return undefined;
  const absolute = pathSegments(
    working.startsWith('/') || /^[A-Za-z]:[\\/]/.test(working) ? working : `${projectRoot}/${working}`,
  );
  const baseSegments = pathSegments(base);
  if (absolute.length <= baseSegments.length || baseSegments.some((segment, index) => absolute[index] !== segment))
    return undefined;
  return absolute.slice(baseSegments.length).join('/');
}

/** The segments of an absolute path, `.` and `..` resolved (this module is pure: no node:path). */
function pathSegments(path: string): string[] {
  const segments: string[] = [];
  for (const segment of path.replace(/\\/g, '/').split('/')) {
    if (segment === '' || segment === '.') continue;
    if (segment === '..') segments.pop();
    else segments.push(segment);
  }
  return segments;
}

/**
 * The text of the instructions system block: each file under a line naming its path and scope,
 * in load order. Pure: the same files give the same bytes, so the prompt prefix stays cacheable.
 */
export function formatInstructions(files: readonly InstructionFile[]): string {
  const sections: string[] = [];
  for (const file of files) {
    const content = file.content.replace(/^(?:[ \t]*\n)+/, '').trimEnd();
    if (content === '') continue;
    const notes = [SCOPE_DESCRIPTIONS[file.scope]];
    if (file.paths !== undefined) notes.push(`applies while working on files matching ${file.paths.join(', ')}`);
    if (file.importedFrom !== undefined) notes.push(`imported by ${file.importedFrom}`);
    sections.push(`Contents of ${file.path} (${notes.join('; ')}):\n\n${content}`);
  }
  if (sections.length === 0) return '';
  return [
    'Instructions from the instruction files below (CLAUDE.md, rules and their imports), in load order: where two disagree, the later one wins. Follow them exactly as written; they override default behaviour.',
    ...sections,
  ].join('\n\n');
}
