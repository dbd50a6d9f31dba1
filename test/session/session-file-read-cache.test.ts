import { mkdtemp, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EngramError } from '../../src/kernel/errors.js';
import { DEFAULT_SETTINGS } from '../../src/kernel/settings.js';
import { FILE_UNCHANGED_MARKER, FileReadCache } from '../../src/session/file-read-cache.js';

const STAT = { mtimeMs: 1_700_000_000_000.25, size: 1_234 };

function defaults(): FileReadCache {
  return new FileReadCache({
    maxEntries: DEFAULT_SETTINGS.session.fileCacheEntries,
    maxBytes: DEFAULT_SETTINGS.session.fileCacheBytes,
  });
}

describe('FileReadCache', () => {
  it('says unchanged only for a recorded file with the same mtime and size', () => {
    const cache = defaults();
    expect(cache.check('/p/a.ts', STAT)).toBe(false);
    cache.record('/p/a.ts', { stat: STAT, bytes: 1_234 });
    expect(cache.check('/p/a.ts', STAT)).toBe(true);
    expect(cache.check('/p/a.ts', { ...STAT })).toBe(true);
    expect(cache.check('/p/b.ts', STAT)).toBe(false);
  });

  it('treats a changed mtime or size as changed, and forgets the stale entry', () => {
    const cache = defaults();
    cache.record('/p/a.ts', { stat: STAT, bytes: 1_234 });
    expect(cache.check('/p/a.ts', { ...STAT, mtimeMs: STAT.mtimeMs + 1 })).toBe(false);
    expect(cache.check('/p/a.ts', STAT)).toBe(false);
    cache.record('/p/a.ts', { stat: STAT, bytes: 1_234 });
    expect(cache.check('/p/a.ts', { ...STAT, size: STAT.size + 1 })).toBe(false);
    expect(cache.size).toBe(0);
  });

  it('follows real files: an edit or a touched mtime makes the next read a real one', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'engram-file-cache-'));
    try {
      const path = join(directory, 'notes.md');
      await writeFile(path, 'first version\n');
      const cache = defaults();
      const first = await stat(path);
      cache.record(path, { stat: first, bytes: first.size });
      expect(cache.check(path, await stat(path))).toBe(true);

      await writeFile(path, 'second, longer version\n');
      expect(cache.check(path, await stat(path))).toBe(false);

      const second = await stat(path);
      cache.record(path, { stat: second, bytes: second.size });
      await utimes(path, new Date(second.mtimeMs + 5_000), new Date(second.mtimeMs + 5_000));
      const touched = await stat(path);
      expect(touched.size).toBe(second.size);
      expect(cache.check(path, touched)).toBe(false);
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  });

  it('evicts the least recently used past the entry cap (a check counts as a use)', () => {
    const cache = new FileReadCache({ maxEntries: 3, maxBytes: 1_000_000 });
    for (const name of ['a', 'b', 'c']) cache.record(`/p/${name}`, { stat: STAT, bytes: 10 });
    expect(cache.check('/p/a', STAT)).toBe(true);
    cache.record('/p/d', { stat: STAT, bytes: 10 });
    expect(cache.size).toBe(3);
    expect(cache.check('/p/b', STAT)).toBe(false);
    expect(['/p/a', '/p/c', '/p/d'].map((path) => cache.check(path, STAT))).toEqual([true, true, true]);
  });

  it('evicts the least recently used past the byte cap, and never holds one read larger than the cap', () => {
    const cache = new FileReadCache({ maxEntries: 100, maxBytes: 100 });
    cache.record('/p/a', { stat: STAT, bytes: 40 });
    cache.record('/p/b', { stat: STAT, bytes: 40 });
    cache.record('/p/c', { stat: STAT, bytes: 40 });
    expect(cache.totalBytes).toBe(80);
    expect(cache.check('/p/a', STAT)).toBe(false);
    expect(cache.check('/p/b', STAT) && cache.check('/p/c', STAT)).toBe(true);

    cache.record('/p/huge', { stat: STAT, bytes: 101 });
    expect(cache.check('/p/huge', STAT)).toBe(false);
    expect(cache.totalBytes).toBe(80);

    // Recording a file again replaces its entry: its bytes are not counted twice.
    cache.record('/p/b', { stat: STAT, bytes: 60 });
    expect(cache.totalBytes).toBe(100);
    expect(cache.size).toBe(2);
  });

  it('holds the default 100 entries and 25 MB', () => {
    const cache = defaults();
    for (let index = 0; index < 101; index += 1) cache.record(`/p/${index}`, { stat: STAT, bytes: 1_000 });
    expect(cache.size).toBe(100);
    expect(cache.check('/p/0', STAT)).toBe(false);
    expect(cache.check('/p/100', STAT)).toBe(true);
    const byBytes = defaults();
    for (let index = 0; index < 3; index += 1) byBytes.record(`/big/${index}`, { stat: STAT, bytes: 10 * 1024 * 1024 });
    expect(byBytes.size).toBe(2);
    expect(byBytes.totalBytes).toBe(20 * 1024 * 1024);
  });

  it('forgets one file or all of them', () => {
    const cache = defaults();
    cache.record('/p/a', { stat: STAT, bytes: 5 });
    cache.record('/p/b', { stat: STAT, bytes: 7 });
    cache.forget('/p/a');
    cache.forget('/p/never-recorded');
    expect([cache.check('/p/a', STAT), cache.check('/p/b', STAT), cache.totalBytes]).toEqual([false, true, 7]);
    cache.clear();
    expect([cache.check('/p/b', STAT), cache.size, cache.totalBytes]).toEqual([false, 0, 0]);
  });

  it('a cap of zero entries remembers nothing', () => {
    const cache = new FileReadCache({ maxEntries: 0, maxBytes: 100 });
    cache.record('/p/a', { stat: STAT, bytes: 1 });
    expect(cache.check('/p/a', STAT)).toBe(false);
  });

  it('refuses malformed input with INVALID_INPUT and keeps what it held', () => {
    const cache = defaults();
    cache.record('/p/a', { stat: STAT, bytes: 5 });
    const bad: Array<() => unknown> = [
      () => cache.check('', STAT),
      () => cache.check('/p/a\0b', STAT),
      () => cache.check(42 as never, STAT),
      () => cache.check('/p/a', undefined as never),
      () => cache.check('/p/a', { mtimeMs: Number.NaN, size: 1 }),
      () => cache.check('/p/a', { mtimeMs: 1, size: -1 }),
      () => cache.record('/p/a', { stat: { mtimeMs: 1, size: 1.5 }, bytes: 5 }),
      () => cache.record('/p/a', { stat: STAT, bytes: -1 }),
      () => cache.record('/p/a', { stat: STAT, bytes: Number.POSITIVE_INFINITY }),
      () => cache.record('/p/a', undefined as never),
      () => new FileReadCache({ maxEntries: -1, maxBytes: 1 }),
      () => new FileReadCache({ maxEntries: 1, maxBytes: 0.5 }),
      () => new FileReadCache(undefined as never),
    ];
    for (const run of bad) {
      expect(run).toThrow(EngramError);
      try {
        run();
      } catch (error) {
        expect((error as EngramError).code).toBe('INVALID_INPUT');
      }
    }
    expect(cache.check('/p/a', STAT)).toBe(true);
    expect(cache.totalBytes).toBe(5);
  });

  it('has a short marker that tells the model to use the earlier result', () => {
    expect(Buffer.byteLength(FILE_UNCHANGED_MARKER)).toBeLessThan(300);
    expect(FILE_UNCHANGED_MARKER).toMatch(/unchanged/i);
  });
});
