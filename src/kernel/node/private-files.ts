import { chmodSync, closeSync, lstatSync, openSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

// engram's files hold what users told their agents: readable by their owner only, whatever the
// umask (modes passed to open/mkdir are cut by the umask, never widened, so 0600/0700 hold; files
// made by others — SQLite's -wal and -shm, older engram versions — are tightened after the fact).

/** Mode of every file engram keeps (store, log, config, sessions). */
export const PRIVATE_FILE_MODE = 0o600;
/** Mode of every folder engram keeps (ENGRAM_HOME and below). */
export const PRIVATE_DIRECTORY_MODE = 0o700;

/**
 * Takes group and other bits off a file or folder the current user owns, keeping the owner's
 * (a symlink is left alone: chmod would follow it). False when it could not; a missing path is true.
 */
export function tightenMode(path: string): boolean {
  try {
    const stats = lstatSync(path);
    if (stats.isSymbolicLink()) return true;
    const own = typeof process.getuid !== 'function' || stats.uid === process.getuid();
    if ((stats.mode & 0o077) === 0) return true;
    if (!own) return false;
    chmodSync(path, stats.mode & 0o700);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ENOENT';
  }
}

/** Creates a file empty with mode 0600 unless it exists (SQLite then starts a database in it with that mode). */
export function createPrivateFile(path: string): void {
  try {
    closeSync(openSync(path, 'wx', PRIVATE_FILE_MODE));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
}

/** Tightens ENGRAM_HOME itself to 0700 and the files directly in it to 0600 (not below: sessions are made 0600 by their writers). */
export function tightenPrivateFolder(directory: string): void {
  if (!tightenMode(directory)) return;
  let entries: string[];
  try {
    entries = readdirSync(directory);
  } catch {
    return;
  }
  for (const entry of entries) {
    tightenMode(join(directory, entry));
  }
}
