import { constants } from 'node:fs';
import { open, readdir, lstat } from 'node:fs/promises';
import { join } from 'node:path';
import { EngramError } from '../../kernel/errors.js';
import type { Settings } from '../../kernel/settings.js';
import { sandboxDenied } from '../sandbox-denied.js';
import { checkProjectPath, type CheckedPath, type SandboxRoot } from './sandbox-paths.js';

/** Limits of the sandboxed file tools (from settings.sandbox). */
export type SandboxLimits = Settings['sandbox'];

// O_NOFOLLOW refuses a symlink swapped in after the check; O_NONBLOCK keeps a FIFO from hanging the open.
const READ_FLAGS = constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0);
// Bytes looked at to tell text from binary, as git and grep do: a NUL byte means binary.
const BINARY_PROBE_BYTES = 8_000;

/** Reads at most `maxBytes` bytes of a checked regular file: refuses folders, devices, FIFOs and sockets. */
export async function readProjectFile(
  checked: CheckedPath,
  maxBytes: number,
): Promise<{ bytes: Buffer; size: number }> {
  if (!checked.exists) throw new EngramError('NOT_FOUND', `No file ${checked.shown} in the project.`);
  let handle;
  try {
    handle = await open(checked.absolute, READ_FLAGS);
  } catch (error) {
    throw fileError(error, checked.shown);
  }
  try {
    const info = await handle.stat();
    if (info.isDirectory())
      throw new EngramError('INVALID_INPUT', `${checked.shown} is a folder; list it with list_directory.`);
    if (!info.isFile())
      throw sandboxDenied(`${checked.shown} is not a regular file (a device, FIFO or socket); only files can be read.`);
    const length = Math.min(info.size, maxBytes);
    const buffer = Buffer.alloc(length);
    let read = 0;
    while (read < length) {
      const { bytesRead } = await handle.read(buffer, read, length - read, read);
      if (bytesRead === 0) break;
      read += bytesRead;
    }
    return { bytes: buffer.subarray(0, read), size: info.size };
  } finally {
    await handle.close();
  }
}

/** Whether bytes look binary (a NUL byte near the start). */
export function looksBinary(bytes: Uint8Array): boolean {
  return bytes.subarray(0, BINARY_PROBE_BYTES).includes(0);
}

/**
 * The read_file tool: lines of a project file, numbered like `cat -n`, from `offset` (1-based)
 * for `limit` lines, within the byte budget; binary files are named, not shown.
 */
export async function readFileTool(
  root: SandboxRoot,
  limits: SandboxLimits,
  input: { path: unknown; offset?: unknown; limit?: unknown },
): Promise<string> {
  const offset = optionalCount(input.offset, 'offset') ?? 1;
  const limit = optionalCount(input.limit, 'limit');
  const checked = await checkProjectPath(root, input.path, { maxLength: limits.maxPathLength });
  // Lines are picked from the first searchMaxFileBytes of the file; the answer is cut to readMaxBytes.
  const { bytes, size } = await readProjectFile(checked, limits.searchMaxFileBytes);
  if (looksBinary(bytes)) return `${checked.shown} is a binary file (${size} bytes); it is not shown.`;
  const text = bytes.toString('utf8');
  const lines = (text.endsWith('\n') ? text.slice(0, -1) : text).split('\n');
  if (text.length === 0) return `${checked.shown} is empty.`;
  if (offset > lines.length)
    throw new EngramError(
      'INVALID_INPUT',
      `offset ${offset} is past the end of ${checked.shown} (${lines.length} lines).`,
    );
  const last = Math.min(lines.length, limit === undefined ? lines.length : offset + limit - 1);
  let output = '';
  let shownLast = offset - 1;
  for (let number = offset; number <= last; number += 1) {
    const line = `${String(number).padStart(6, ' ')}\t${lines[number - 1]}\n`;
    if (Buffer.byteLength(output + line, 'utf8') > limits.readMaxBytes && number > offset) break;
    output += line;
    shownLast = number;
  }
  const partial = size > bytes.length;
  if (shownLast < lines.length || partial) {
    const more = shownLast < lines.length ? ` Read on with offset ${shownLast + 1}.` : '';
    output += `[Lines ${offset}-${shownLast} of ${partial ? `the first ${lines.length}` : lines.length} shown.${more}${partial ? ` The file is ${size} bytes; only its first ${bytes.length} can be read here.` : ''}]\n`;
  }
  return output.replace(/\n$/, '');
}

/** The list_directory tool: a folder's entries, folders with "/", links with "@", files with their size. */
export async function listDirectoryTool(
  root: SandboxRoot,
  limits: SandboxLimits,
  input: { path?: unknown },
): Promise<string> {
  const checked = await checkProjectPath(root, input.path ?? '.', {
    maxLength: limits.maxPathLength,
    refuseSecrets: false,
  });
  if (!checked.exists) throw new EngramError('NOT_FOUND', `No folder ${checked.shown} in the project.`);
  const info = await lstat(checked.absolute);
  if (!info.isDirectory())
    throw new EngramError('INVALID_INPUT', `${checked.shown} is not a folder; read it with read_file.`);
  const entries = (await readdir(checked.absolute, { withFileTypes: true })).sort((a, b) =>
    a.name < b.name ? -1 : a.name > b.name ? 1 : 0,
  );
  const lines: string[] = [];
  for (const entry of entries.slice(0, limits.listMaxEntries)) {
    if (entry.isDirectory()) lines.push(`${entry.name}/`);
    else if (entry.isSymbolicLink()) lines.push(`${entry.name}@`);
    else if (entry.isFile())
      lines.push(
        `${entry.name} (${(await lstat(join(checked.absolute, entry.name)).catch(() => undefined))?.size ?? '?'} bytes)`,
      );
    else lines.push(`${entry.name} (special file)`);
  }
  const header = `${checked.shown}/ (${entries.length} ${entries.length === 1 ? 'entry' : 'entries'})`;
  const cut =
    entries.length > limits.listMaxEntries
      ? [`[${entries.length - limits.listMaxEntries} more entries not shown.]`]
      : [];
  return [header, ...lines, ...cut].join('\n');
}

function optionalCount(value: unknown, field: string): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw new EngramError('INVALID_INPUT', `${field} must be a whole number from 1.`);
  }
  return value;
}

function fileError(error: unknown, shown: string): EngramError {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'ELOOP') return sandboxDenied(`${shown} became a symbolic link while being read; it is not followed.`);
  if (code === 'ENOENT') return new EngramError('NOT_FOUND', `No file ${shown} in the project.`, { cause: error });
  return new EngramError('INVALID_INPUT', `${shown} cannot be read (${code ?? 'error'}).`, { cause: error });
}
