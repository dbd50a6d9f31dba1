import { randomBytes } from 'node:crypto';
import { closeSync, mkdirSync, openSync, readFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { PRIVATE_DIRECTORY_MODE, PRIVATE_FILE_MODE } from '../../kernel/node/private-files.js';

/** The key export seals are signed with (memory/export-seal.ts), one per ENGRAM_HOME, readable by its owner only. */
const KEY_FILE = 'export-key';

/** Reads the home's export key; with `create`, makes one first when there is none. Undefined when there is none. */
export function readExportKey(home: string, options: { create: boolean }): Uint8Array | undefined {
  const path = join(home, KEY_FILE);
  const read = (): Uint8Array | undefined => {
    try {
      const text = readFileSync(path, 'utf8').trim();
      return /^[0-9a-f]{64}$/.test(text) ? Buffer.from(text, 'hex') : undefined;
    } catch {
      return undefined;
    }
  };
  const existing = read();
  if (existing || !options.create) return existing;
  mkdirSync(home, { recursive: true, mode: PRIVATE_DIRECTORY_MODE });
  try {
    // 'wx': two exports at once make one key; the loser reads the winner's.
    const fd = openSync(path, 'wx', PRIVATE_FILE_MODE);
    try {
      writeSync(fd, `${randomBytes(32).toString('hex')}\n`);
    } finally {
      closeSync(fd);
    }
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') return undefined;
  }
  return read();
}
