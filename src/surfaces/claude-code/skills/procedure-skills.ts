import { createHash } from 'node:crypto';
import { lstat, mkdir, readdir, readFile, rm, rmdir } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { EngramError } from '../../../kernel/errors.js';
import { writeFileAtomically } from '../../../kernel/node/atomic-write.js';
import type { Engram } from '../../../engram.js';
import type { Memory } from '../../../memory/memory.js';
import type { Scope } from '../../../memory/scope.js';

/**
 * Procedures become Claude Code skills (issue 13 item 7): each `procedure` memory of the project
 * and global is rendered as `<dir>/engram-<name>/SKILL.md` (frontmatter `name` and a one-line
 * `description` Claude Code shows the model, then the procedure). Every folder engram writes holds
 * a marker file naming its memory, so sync and remove touch only engram's own folders and never a
 * skill of the user's (a folder without the marker is left alone, even one named `engram-…`).
 */

/** The marker in each skill folder engram owns. */
export const SKILL_MARKER_FILE = '.engram-skill.json';
export const SKILL_FILE = 'SKILL.md';
const FOLDER_PREFIX = 'engram-';
/** Claude Code's limits: a skill name of lowercase letters, digits and hyphens up to 64, a description up to 1,024. */
const MAX_SKILL_NAME = 64;
const MAX_DESCRIPTION = 250;
const PAGE = 1_000;

/** What engram records in its marker file. */
interface SkillMarker {
  engram: 'procedure-skill';
  memoryId: string;
  scope: string;
  /** Hash of the SKILL.md engram wrote: a different one means the memory changed. */
  sha256: string;
}

/** One skill folder engram owns. */
export interface ProcedureSkill {
  /** The skill's name (its folder's name). */
  name: string;
  memoryId: string;
  scope: string;
  /** The SKILL.md path. */
  path: string;
}

export interface SyncProcedureSkillsOptions {
  engram: Engram;
  /** The skills folder, e.g. `~/.claude/skills` (defaultSkillsDirectory) or `<project>/.claude/skills`. */
  dir: string;
  /** Whose procedures: default the engram's read scopes (the project and global). Skills of other scopes in `dir` are left as they are. */
  scopes?: readonly Scope[];
}

export interface SyncProcedureSkillsReport {
  dir: string;
  added: string[];
  updated: string[];
  removed: string[];
  unchanged: string[];
  /** Procedures not written, and why (a folder of the user's has the name). */
  skipped: Array<{ name: string; memoryId: string; reason: string }>;
}

/** Where Claude Code reads the user's skills: `$CLAUDE_CONFIG_DIR/skills`, else `~/.claude/skills`. */
export function defaultSkillsDirectory(env: Readonly<Record<string, string | undefined>> = process.env): string {
  const config = env.CLAUDE_CONFIG_DIR;
  return join(config && config.length > 0 ? config : join(env.HOME || homedir(), '.claude'), 'skills');
}

/**
 * Brings `dir` in step with the procedures of `scopes`: a skill for each new procedure, rewritten
 * when its memory changed, removed when the memory was forgotten, invalidated or is no longer a
 * procedure. Only folders carrying engram's marker (for these scopes) are changed or removed.
 * @example
 * await syncProcedureSkills({ engram, dir: defaultSkillsDirectory() });
 */
export async function syncProcedureSkills(options: SyncProcedureSkillsOptions): Promise<SyncProcedureSkillsReport> {
  const { engram } = options;
  const dir = checkDirectory(options.dir);
  const scopes = options.scopes ?? engram.readScopes;
  const report: SyncProcedureSkillsReport = { dir, added: [], updated: [], removed: [], unchanged: [], skipped: [] };
  const procedures = await listProcedures(engram, scopes);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const { owned, others } = await readFolders(dir);
  const desired = new Map<string, { memory: Memory; text: string }>();
  for (const memory of procedures) {
    let name = skillName(memory);
    if (desired.has(name)) name = `${name.slice(0, MAX_SKILL_NAME - 7)}-${idTail(memory.id)}`;
    desired.set(name, { memory, text: renderProcedureSkill(memory, name) });
  }
  for (const [name, { memory, text }] of desired) {
    const marker = owned.get(name);
    if (!marker && others.has(name)) {
      report.skipped.push({
        name,
        memoryId: memory.id,
        reason: `${join(dir, name)} is not engram's (no ${SKILL_MARKER_FILE}): left as it is`,
      });
      continue;
    }
    const sha256 = hash(text);
    if (marker && marker.sha256 === sha256 && marker.memoryId === memory.id) {
      report.unchanged.push(name);
      continue;
    }
    const folder = join(dir, name);
    await mkdir(folder, { recursive: true, mode: 0o700 });
    await writeFileAtomically(join(folder, SKILL_FILE), text);
    const written: SkillMarker = { engram: 'procedure-skill', memoryId: memory.id, scope: memory.scope, sha256 };
    await writeFileAtomically(join(folder, SKILL_MARKER_FILE), `${JSON.stringify(written, null, 2)}\n`);
    (marker ? report.updated : report.added).push(name);
  }
  for (const [name, marker] of owned) {
    if (desired.has(name) || !scopes.includes(marker.scope)) continue;
    await removeOwnedFolder(join(dir, name));
    report.removed.push(name);
  }
  return report;
}

/** The skill folders engram owns in `dir` (none when it does not exist). */
export async function listProcedureSkills(options: { dir: string }): Promise<ProcedureSkill[]> {
  const dir = checkDirectory(options.dir);
  const { owned } = await readFolders(dir);
  return [...owned].map(([name, marker]) => ({
    name,
    memoryId: marker.memoryId,
    scope: marker.scope,
    path: join(dir, name, SKILL_FILE),
  }));
}

/** Removes every skill folder engram owns in `dir` (its SKILL.md and marker; a folder the user added files to keeps them). */
export async function removeProcedureSkills(options: { dir: string }): Promise<{ dir: string; removed: string[] }> {
  const dir = checkDirectory(options.dir);
  const { owned } = await readFolders(dir);
  const removed: string[] = [];
  for (const name of owned.keys()) {
    await removeOwnedFolder(join(dir, name));
    removed.push(name);
  }
  return { dir, removed };
}

/** The SKILL.md of a procedure memory: frontmatter name and one-line description, then the procedure. */
export function renderProcedureSkill(memory: Memory, name: string = skillName(memory)): string {
  const description = oneLine(memory.description || firstLine(memory.content) || memory.name || 'A procedure');
  return [
    '---',
    `name: ${name}`,
    // A JSON string is a valid YAML double-quoted scalar: any character in the description stays text.
    `description: ${JSON.stringify(description)}`,
    '---',
    '',
    memory.content.trim(),
    '',
    `<!-- Written by engram from memory ${memory.id} (${memory.scope}); edit the memory, not this file: "engram skills sync" rewrites it. -->`,
    '',
  ].join('\n');
}

/** `engram-<memory name>` in Claude Code's skill-name alphabet, at most 64 characters. */
export function skillName(memory: Pick<Memory, 'id' | 'name'>): string {
  const slug = (memory.name || '')
    .toLowerCase()
    .normalize('NFKD')
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
  const base = slug === '' ? idTail(memory.id) : slug;
  return `${FOLDER_PREFIX}${base}`.slice(0, MAX_SKILL_NAME).replace(/-+$/, '');
}

async function listProcedures(engram: Engram, scopes: readonly Scope[]): Promise<Memory[]> {
  const found: Memory[] = [];
  for (let offset = 0; ; offset += PAGE) {
    const page = await engram.list({ scopes, types: ['procedure'], limit: PAGE, offset, order: 'created-asc' });
    found.push(...page);
    if (page.length < PAGE) break;
  }
  return found;
}

/** Folders in `dir`: engram's own (with a readable marker) and every other name (a user's skill, a file, a symlink). */
async function readFolders(dir: string): Promise<{ owned: Map<string, SkillMarker>; others: Set<string> }> {
  const owned = new Map<string, SkillMarker>();
  const others = new Set<string>();
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { owned, others };
    throw new EngramError(
      'INVALID_INPUT',
      `Cannot read the skills folder ${dir} (${(error as NodeJS.ErrnoException).code ?? 'error'}).`,
      {
        cause: error,
      },
    );
  }
  for (const name of names) {
    const marker = await readMarker(join(dir, name));
    if (marker) owned.set(name, marker);
    else others.add(name);
  }
  return { owned, others };
}

/** The marker of a real folder (never through a symlink), or undefined. */
async function readMarker(folder: string): Promise<SkillMarker | undefined> {
  try {
    if (!(await lstat(folder)).isDirectory()) return undefined;
    const path = join(folder, SKILL_MARKER_FILE);
    const info = await lstat(path);
    if (!info.isFile() || info.size > 4_096) return undefined;
    const value = JSON.parse(await readFile(path, 'utf8')) as Partial<SkillMarker>;
    if (
      value?.engram !== 'procedure-skill' ||
      typeof value.memoryId !== 'string' ||
      typeof value.scope !== 'string' ||
      typeof value.sha256 !== 'string'
    )
      return undefined;
    return value as SkillMarker;
  } catch {
    return undefined;
  }
}

/** Deletes engram's two files of a skill folder, then the folder if nothing else is in it. */
async function removeOwnedFolder(folder: string): Promise<void> {
  await rm(join(folder, SKILL_FILE), { force: true });
  await rm(join(folder, SKILL_MARKER_FILE), { force: true });
  await rmdir(folder).catch(() => {
    // The user put files of their own there: they stay, and so does the folder.
  });
}

function checkDirectory(dir: unknown): string {
  if (typeof dir !== 'string' || dir.trim() === '' || dir.includes('\u0000'))
    throw new EngramError('INVALID_INPUT', 'The skills folder must be a path (e.g. ~/.claude/skills).');
  return dir;
}

function firstLine(text: string): string {
  return text.split('\n').find((line) => line.trim() !== '') ?? '';
}

function oneLine(text: string): string {
  const line = text
    .replace(/[\u0000-\u001F\u007F-\u009F\u2028\u2029]+/g, ' ')
    .replace(/\s+/g, ' ')
    .replace(/^#+\s*/, '')
    .trim();
  return line.length > MAX_DESCRIPTION ? `${line.slice(0, MAX_DESCRIPTION - 1)}…` : line;
}

function idTail(id: string): string {
  return (
    id
      .replace(/[^a-z0-9]/gi, '')
      .toLowerCase()
      .slice(-6) || 'x'
  );
}

function hash(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}
