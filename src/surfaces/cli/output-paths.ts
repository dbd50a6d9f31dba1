import type { Stats } from 'node:fs';
import { lstat, readdir, readFile, unlink } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { writeFileAtomically } from '../../kernel/node/atomic-write.js';
import { EngramError } from '../../kernel/errors.js';
import { parseMemoryFile } from '../../memory/memory-file.js';
import { MEMORY_INDEX_FILE } from '../../memory/memory-index.js';

const ENGRAM_INDEX_HEADER = '# Memory index\n';
const NOT_AN_ID = 'not-an-engram-id';

/** lstat that answers undefined for a path that does not exist. */
export async function pathInfo(path: string): Promise<Stats | undefined> {
  try {
    return await lstat(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new EngramError(
      'INVALID_INPUT',
      `Cannot inspect ${path} (${(error as NodeJS.ErrnoException).code ?? 'error'}).`,
      { cause: error },
    );
  }
}

/**
 * Writes an export file: never through a symlink, never over an existing file without `force`,
 * and never half-written (a temporary file renamed into place, mode 0600).
 */
export async function writeExportFile(path: string, text: string, options: { force: boolean }): Promise<string> {
  const target = resolve(path);
  const info = await pathInfo(target);
  if (info?.isSymbolicLink())
    throw new EngramError('INVALID_INPUT', `${target} is a symbolic link; engram never writes through one.`);
  if (info && !info.isFile()) throw new EngramError('INVALID_INPUT', `${target} exists and is not a regular file.`);
  if (info && !options.force)
    throw new EngramError('INVALID_INPUT', `${target} already exists; pass --force to overwrite it.`);
  const parent = await pathInfo(dirname(target));
  if (!parent) throw new EngramError('INVALID_INPUT', `The folder ${dirname(target)} does not exist.`);
  await writeFileAtomically(target, text, 'INVALID_INPUT');
  return target;
}

/**
 * Checks a directory an export will write into: not a symlink, not a file, and (without `force`)
 * no file at any of the names it will write unless engram wrote that file itself.
 */
export async function assertExportDirectory(
  directory: string,
  fileNames: readonly string[],
  options: { force: boolean },
): Promise<string> {
  const target = resolve(directory);
  const info = await pathInfo(target);
  if (info?.isSymbolicLink())
    throw new EngramError('INVALID_INPUT', `${target} is a symbolic link; engram never writes through one.`);
  if (!info) return target;
  if (!info.isDirectory()) throw new EngramError('INVALID_INPUT', `${target} exists and is not a directory.`);
  if (options.force) return target;
  const foreign: string[] = [];
  for (const name of [...fileNames, MEMORY_INDEX_FILE]) {
    const path = join(target, name);
    const existing = await pathInfo(path);
    if (existing && !(existing.isFile() && (await isEngramFile(path, name)))) foreign.push(name);
  }
  if (foreign.length > 0) {
    const shown = foreign.slice(0, 5).join(', ') + (foreign.length > 5 ? ` and ${foreign.length - 5} more` : '');
    throw new EngramError(
      'INVALID_INPUT',
      `${target} holds files engram did not write (${shown}); pass --force to replace them, or pick an empty folder.`,
    );
  }
  return target;
}

/**
 * After a re-export into the same folder: deletes the topic files an earlier export wrote for
 * memories that are no longer exported (forgotten, merged, moved to another scope), so a Claude
 * Code reading the folder never sees them. Only regular `*.md` files whose frontmatter carries an
 * engram id are removed; files the user wrote, symlinks and subfolders are left alone.
 */
export async function removeStaleTopicFiles(directory: string, written: readonly string[]): Promise<string[]> {
  const keep = new Set([...written, MEMORY_INDEX_FILE]);
  const removed: string[] = [];
  const entries = await readdir(directory, { withFileTypes: true });
  for (const entry of entries) {
    if (!entry.isFile() || !/\.md$/i.test(entry.name) || keep.has(entry.name)) continue;
    const path = join(directory, entry.name);
    if (!(await isEngramFile(path, entry.name))) continue;
    await unlink(path);
    removed.push(entry.name);
  }
  return removed.sort();
}

/** Whether engram wrote a file: its MEMORY.md header, or a topic file whose frontmatter carries an engram id. */
async function isEngramFile(path: string, name: string): Promise<boolean> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch {
    return false;
  }
  if (name === MEMORY_INDEX_FILE) return text.startsWith(ENGRAM_INDEX_HEADER);
  try {
    const parsed = parseMemoryFile(text, { scope: 'global', now: new Date(0).toISOString(), id: NOT_AN_ID });
    return parsed.id !== undefined && parsed.id !== NOT_AN_ID;
  } catch {
    return false;
  }
}
