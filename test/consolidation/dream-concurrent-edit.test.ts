import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe } from 'vitest';
import { SqliteMemoryStore } from '../../src/adapters/sqlite/sqlite-memory-store.js';
import { CORPUS_NOW } from '../fixtures/dream-corpus.js';
import { concurrentEditCases } from './dream-concurrent-edit-cases.js';

let directory: string | undefined;
afterEach(async () => {
  if (directory) await rm(directory, { recursive: true, force: true });
  directory = undefined;
});

describe('a dream and a concurrent edit (SQLite, the edit from another process)', () => {
  concurrentEditCases(async () => {
    directory = await mkdtemp(join(tmpdir(), 'engram-dream-edit-'));
    const url = join(directory, 'memory.db');
    const store = new SqliteMemoryStore({ path: url, now: () => new Date(CORPUS_NOW) });
    await store.open();
    return { store, url };
  });
});
