import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { open, rename, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { EngramError, type EngramErrorCode } from '../errors.js';

// O_EXCL: the temporary name is fresh, so nothing (not even a planted symlink) is opened.
const CREATE_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | (constants.O_NOFOLLOW ?? 0);

/**
 * Writes a file so that a reader sees the old content or the new, never half of it: a fresh
 * temporary file (mode 0600, flushed to disk) renamed into place. rename() replaces the directory
 * entry itself, so a symlink at `path` is swapped out, never written through.
 */
export async function writeFileAtomically(
  path: string,
  text: string,
  failureCode: EngramErrorCode = 'STORE_ERROR',
): Promise<void> {
  const temporary = join(dirname(path), `.${basename(path)}.${randomBytes(6).toString('hex')}.tmp`);
  try {
    const handle = await open(temporary, CREATE_FLAGS, 0o600);
    try {
      await handle.writeFile(text, 'utf8');
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temporary, path);
  } catch (error) {
    await unlink(temporary).catch(() => undefined);
    const code = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new EngramError(failureCode, `Could not write ${path} (${code}).`, { cause: error });
  }
}
