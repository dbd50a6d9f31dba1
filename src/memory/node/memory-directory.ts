import { constants } from 'node:fs';
import { lstat, mkdir, open, readdir, realpath } from 'node:fs/promises';
import { isAbsolute, join, relative, sep } from 'node:path';
import { EngramError } from '../../kernel/errors.js';
import type { Memory, NewMemory } from '../memory.js';
import { parseMemoryFile, renderMemoryFile } from '../memory-file.js';
import { writeFileAtomically } from '../../kernel/node/atomic-write.js';
import {
  assignFileNames,
  buildMemoryIndex,
  MEMORY_INDEX_FILE,
  parseMemoryIndex,
  type MemoryIndex,
  type MemoryIndexOptions,
} from '../memory-index.js';
import type { Scope } from '../scope.js';

/** Topic files larger than this are skipped on read: a memory holds one fact, not a document. */
export const MAX_TOPIC_FILE_BYTES = 1024 * 1024;

export interface WriteMemoryDirectoryResult {
  /** Absolute paths written: the topic files by name, then MEMORY.md. */
  files: string[];
  index: MemoryIndex;
}

export interface ReadMemoryDirectoryFallback {
  /** Scope of memories whose frontmatter names none. */
  scope: Scope;
  now: string;
  /** Called for each topic file that carries no engram id, or one already seen in another file. */
  generateId: () => string;
  /** Default 1 MB. */
  maxFileBytes?: number;
}

export interface ReadMemoryDirectoryResult {
  memories: NewMemory[];
  /** The topic file each memory was read from (same order as `memories`). */
  files: string[];
  /** Files that were skipped, with the reason; `file` is the name inside the directory. */
  errors: Array<{ file: string; message: string }>;
  /** Things that did not stop a file from loading, such as a duplicate id or a dangling index link. */
  warnings: string[];
}

// O_NOFOLLOW refuses a symlink swapped in after the check; O_NONBLOCK keeps a FIFO from
// hanging the open. Both are absent on Windows, where 0 leaves the flags unchanged.
const READ_FLAGS = constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0);

/**
 * Writes memories as a Claude-Code-compatible memory directory: one topic file per memory, then
 * MEMORY.md. Each file is written to a temporary file and renamed into place, so a reader never
 * sees half a file and a symlink at a target name is replaced, never written through.
 */
export async function writeMemoryDirectory(
  directory: string,
  memories: readonly Memory[],
  indexOptions: Omit<MemoryIndexOptions, 'fileNames'> = {},
): Promise<WriteMemoryDirectoryResult> {
  const fileNames = assignFileNames(memories);
  // Everything is rendered before the first write, so bad input changes nothing on disk.
  const index = buildMemoryIndex(memories, { ...indexOptions, fileNames });
  const topicFiles = memories
    .map((memory) => ({ fileName: fileNames.get(memory.id) ?? '', text: renderMemoryFile(memory) }))
    .sort((a, b) => (a.fileName < b.fileName ? -1 : a.fileName > b.fileName ? 1 : 0));

  await mkdir(directory, { recursive: true, mode: 0o700 });
  const files: string[] = [];
  // Topic files first: MEMORY.md must never link to a file that is not there yet.
  for (const topic of [...topicFiles, { fileName: MEMORY_INDEX_FILE, text: index.text }]) {
    const path = join(directory, topic.fileName);
    await writeFileAtomically(path, topic.text);
    files.push(path);
  }
  return { files, index };
}

/**
 * Reads every `*.md` topic file directly in a directory (not MEMORY.md, not subfolders) into new
 * memories. Symlinks resolving outside the directory, non-regular files and files over 1 MB are
 * skipped and reported; MEMORY.md's links are never followed, so nothing outside is ever read.
 */
export async function readMemoryDirectory(
  directory: string,
  fallback: ReadMemoryDirectoryFallback,
): Promise<ReadMemoryDirectoryResult> {
  const maxFileBytes = fallback.maxFileBytes ?? MAX_TOPIC_FILE_BYTES;
  let root: string;
  try {
    root = await realpath(directory);
  } catch (error) {
    throw new EngramError('NOT_FOUND', `Memory directory ${directory} cannot be opened (${errorCode(error)}).`, {
      cause: error,
    });
  }
  const entries = await readdir(root, { withFileTypes: true }).catch((error: unknown) => {
    throw new EngramError('INVALID_INPUT', `Memory directory ${directory} cannot be read (${errorCode(error)}).`, {
      cause: error,
    });
  });
  const names = entries
    .map((entry) => entry.name)
    .filter((name) => /\.md$/i.test(name) && !name.startsWith('.'))
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));

  const result: ReadMemoryDirectoryResult = { memories: [], files: [], errors: [], warnings: [] };
  const fileOfId = new Map<string, string>();
  for (const name of names) {
    if (name.toLowerCase() === MEMORY_INDEX_FILE.toLowerCase()) continue;
    try {
      const text = await readFileInside(root, name, maxFileBytes);
      const input = parseMemoryFile(text, { scope: fallback.scope, now: fallback.now, fileName: name });
      const firstFile = input.id === undefined ? undefined : fileOfId.get(input.id);
      if (firstFile !== undefined) {
        // A copied topic file is a new memory the user made, not the same one twice.
        result.warnings.push(`${name} carries the same id as ${firstFile}; it was given a new id.`);
      }
      if (input.id === undefined || firstFile !== undefined) input.id = fallback.generateId();
      fileOfId.set(input.id, name);
      result.memories.push(input);
      result.files.push(name);
    } catch (error) {
      result.errors.push({ file: name, message: errorMessage(error) });
    }
  }
  await reportDanglingLinks(root, names, maxFileBytes, result);
  return result;
}

async function reportDanglingLinks(
  root: string,
  names: readonly string[],
  maxFileBytes: number,
  result: ReadMemoryDirectoryResult,
): Promise<void> {
  const indexName = names.find((name) => name.toLowerCase() === MEMORY_INDEX_FILE.toLowerCase());
  if (indexName === undefined) return;
  let text: string;
  try {
    text = await readFileInside(root, indexName, maxFileBytes);
  } catch (error) {
    result.errors.push({ file: indexName, message: errorMessage(error) });
    return;
  }
  const present = new Set(names);
  for (const linked of parseMemoryIndex(text)) {
    if (!present.has(linked)) result.warnings.push(`${indexName} links to ${linked}, which is not in the directory.`);
  }
}

async function readFileInside(root: string, name: string, maxFileBytes: number): Promise<string> {
  let target = join(root, name);
  const info = await lstat(target);
  if (info.isSymbolicLink()) {
    let resolved: string;
    try {
      resolved = await realpath(target);
    } catch (error) {
      throw new EngramError(
        'INVALID_INPUT',
        `Symbolic link whose target cannot be read (${errorCode(error)}); skipped.`,
      );
    }
    if (!isInside(root, resolved)) {
      throw new EngramError('INVALID_INPUT', 'Symbolic link pointing outside the memory directory; skipped.');
    }
    target = resolved;
  }
  const handle = await open(target, READ_FLAGS);
  try {
    const stats = await handle.stat();
    if (!stats.isFile()) throw new EngramError('INVALID_INPUT', 'Not a regular file; skipped.');
    if (stats.size > maxFileBytes) throw tooLarge(stats.size, maxFileBytes);
    // Read one byte past the cap so a file that grew since stat() is still caught.
    const buffer = Buffer.alloc(Math.min(stats.size, maxFileBytes) + 1);
    let length = 0;
    while (length < buffer.length) {
      const { bytesRead } = await handle.read(buffer, length, buffer.length - length, length);
      if (bytesRead === 0) break;
      length += bytesRead;
    }
    if (length > maxFileBytes) throw tooLarge(length, maxFileBytes);
    try {
      return new TextDecoder('utf-8', { fatal: true }).decode(buffer.subarray(0, length));
    } catch {
      throw new EngramError('INVALID_INPUT', 'Not valid UTF-8 text; skipped.');
    }
  } finally {
    await handle.close();
  }
}

function tooLarge(size: number, maxFileBytes: number): EngramError {
  return new EngramError(
    'PAYLOAD_TOO_LARGE',
    `File is ${size} bytes or more; topic files over ${maxFileBytes} bytes are skipped.`,
  );
}

function isInside(root: string, path: string): boolean {
  const fromRoot = relative(root, path);
  return fromRoot !== '' && fromRoot !== '..' && !fromRoot.startsWith(`..${sep}`) && !isAbsolute(fromRoot);
}

function errorCode(error: unknown): string {
  if (error !== null && typeof error === 'object' && 'code' in error && typeof error.code === 'string')
    return error.code;
  return error instanceof Error ? error.message : String(error);
}

function errorMessage(error: unknown): string {
  return error instanceof EngramError ? error.message : `Could not read the file (${errorCode(error)}).`;
}
