import { mkdir, open, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { EngramError, isEngramError } from '../../kernel/errors.js';
import { writeFileAtomically } from '../../kernel/node/atomic-write.js';
import type { NotesFiles } from '../notes/session-notes-resources.js';

/** Session notes on the local disk: bounded reads that never open a FIFO, atomic whole-file writes. */
export const nodeNotesFiles: NotesFiles = Object.freeze({
  read: readLimited,
  async write(path: string, text: string): Promise<void> {
    await mkdir(dirname(path), { recursive: true, mode: 0o700 });
    await writeFileAtomically(path, text);
  },
});

/** A UTF-8 file of at most `maxBytes`, or undefined when there is none. */
async function readLimited(path: string, options: Parameters<NotesFiles['read']>[1]): Promise<string | undefined> {
  const { maxBytes, label: what, code = 'STORE_ERROR' } = options;
  let handle;
  try {
    // Checked before opening: opening a FIFO would wait for a writer.
    if (!(await stat(path)).isFile())
      throw new EngramError(code, `${what} (${path}) is not a regular file; remove it or point the setting at a file.`);
    handle = await open(path, 'r');
  } catch (error) {
    if (isEngramError(error)) throw error;
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new EngramError(
      code,
      `${what} (${path}) could not be read (${(error as NodeJS.ErrnoException).code ?? String(error)}).`,
      { cause: error },
    );
  }
  try {
    const info = await handle.stat();
    if (!info.isFile())
      throw new EngramError(code, `${what} (${path}) is not a regular file; remove it or point the setting at a file.`);
    if (info.size > maxBytes) {
      throw new EngramError(
        'PAYLOAD_TOO_LARGE',
        `${what} (${path}) is ${info.size} bytes, over notes.maxFileBytes (${maxBytes}); shorten the file or raise the setting.`,
      );
    }
    return await handle.readFile('utf8');
  } catch (error) {
    if (isEngramError(error)) throw error;
    throw new EngramError(
      code,
      `${what} (${path}) could not be read (${(error as NodeJS.ErrnoException).code ?? String(error)}).`,
      { cause: error },
    );
  } finally {
    await handle.close();
  }
}
