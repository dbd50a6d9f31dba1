import { EngramError } from '../kernel/errors.js';

/**
 * File-read dedupe (SPEC §2): the files the model has read in this session, as an LRU bounded by
 * entries and bytes (100 and 25 MB by default). A read tool asks `check` before returning content;
 * when the file's mtime and size are what they were at the last read, it returns
 * {@link FILE_UNCHANGED_MARKER} instead of the same content again. The session calls `clear()`
 * once a compaction or microcompaction removed earlier results, since the content is then gone from
 * the context. Keys are the caller's: an absolute path, or a path with its range for partial reads.
 */

/** What a read tool returns in place of content the model already has. */
export const FILE_UNCHANGED_MARKER =
  'File unchanged since it was last read in this conversation: the content in that earlier tool result is still current, so refer to it instead of reading the file again.';

/** The facts that tell whether a file changed (from fs.stat). */
export interface FileReadStat {
  mtimeMs: number;
  size: number;
}

export interface FileReadCacheOptions {
  /** Files remembered at most (`session.fileCacheEntries`). */
  maxEntries: number;
  /** Bytes of content remembered at most (`session.fileCacheBytes`); a read larger than this is not remembered. */
  maxBytes: number;
}

interface Entry {
  mtimeMs: number;
  size: number;
  bytes: number;
}

/** An LRU of the files read in a session: `check` says whether a file is unchanged since it was recorded. */
export class FileReadCache {
  readonly maxEntries: number;
  readonly maxBytes: number;
  // A Map iterates in insertion order: the first key is the least recently used.
  readonly #entries = new Map<string, Entry>();
  #bytes = 0;

  constructor(options: FileReadCacheOptions) {
    this.maxEntries = wholeNumber(options?.maxEntries, 'maxEntries (session.fileCacheEntries)');
    this.maxBytes = wholeNumber(options?.maxBytes, 'maxBytes (session.fileCacheBytes)');
  }

  /** Files remembered now. */
  get size(): number {
    return this.#entries.size;
  }

  /** Bytes of content remembered now. */
  get totalBytes(): number {
    return this.#bytes;
  }

  /**
   * True when `path` was recorded with exactly this mtime and size (the model already has its
   * content); the entry becomes the most recently used. A changed file is forgotten and gives false.
   */
  check(path: string, stat: FileReadStat): boolean {
    checkPath(path);
    checkStat(stat);
    const entry = this.#entries.get(path);
    if (!entry) return false;
    if (entry.mtimeMs !== stat.mtimeMs || entry.size !== stat.size) {
      this.forget(path);
      return false;
    }
    this.#entries.delete(path);
    this.#entries.set(path, entry);
    return true;
  }

  /** Remembers that the model read `path` (`bytes` of content) at this mtime and size, evicting the least recently used past the caps. */
  record(path: string, read: { stat: FileReadStat; bytes: number }): void {
    if (read === null || typeof read !== 'object')
      throw new EngramError(
        'INVALID_INPUT',
        'record(path, { stat, bytes }) takes the stat and byte count of the read.',
      );
    const { stat, bytes } = read;
    checkPath(path);
    checkStat(stat);
    if (!(Number.isSafeInteger(bytes) && bytes >= 0))
      throw new EngramError('INVALID_INPUT', `bytes must be a whole number of at least 0, got ${String(bytes)}.`);
    this.forget(path);
    // Holding one read larger than the whole budget would evict everything else for it.
    if (bytes > this.maxBytes || this.maxEntries === 0) return;
    this.#entries.set(path, { mtimeMs: stat.mtimeMs, size: stat.size, bytes });
    this.#bytes += bytes;
    for (const [oldest, entry] of this.#entries) {
      if (this.#entries.size <= this.maxEntries && this.#bytes <= this.maxBytes) break;
      this.#entries.delete(oldest);
      this.#bytes -= entry.bytes;
    }
  }

  /** Forgets one file (after the session wrote it, or when its earlier content left the context). */
  forget(path: string): void {
    const entry = this.#entries.get(path);
    if (!entry) return;
    this.#entries.delete(path);
    this.#bytes -= entry.bytes;
  }

  /** Forgets every file (after a compaction or microcompaction removed the earlier reads from the context). */
  clear(): void {
    this.#entries.clear();
    this.#bytes = 0;
  }
}

function checkPath(path: string): void {
  if (typeof path !== 'string' || path.length === 0 || path.includes('\0')) {
    throw new EngramError('INVALID_INPUT', 'A file-read cache key must be a non-empty path without NUL characters.');
  }
}

function checkStat(stat: FileReadStat): void {
  if (!(stat && Number.isFinite(stat.mtimeMs) && Number.isSafeInteger(stat.size) && stat.size >= 0)) {
    throw new EngramError(
      'INVALID_INPUT',
      "A file-read cache check needs the file's stat: a finite mtimeMs and a whole, non-negative size.",
    );
  }
}

function wholeNumber(value: number, name: string): number {
  if (!(Number.isSafeInteger(value) && value >= 0))
    throw new EngramError(
      'INVALID_INPUT',
      `FileReadCache ${name} must be a whole number of at least 0, got ${String(value)}.`,
    );
  return value;
}
