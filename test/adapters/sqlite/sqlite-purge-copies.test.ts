import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SqliteMemoryStore } from '../../../src/adapters/sqlite/sqlite-memory-store.js';
import {
  buildPurgeScenario,
  CONVERSATION_ONLY,
  countNeedles,
  expectScenarioPurged,
  SECRET_WORD,
} from '../../support/purge-scenario.js';
import { useTemporaryFolders } from '../../support/per-test.js';

// Issue 26 item 11 on SQLite: after Engram.purge of a memory extraction wrote, no byte of it or of
// the conversation it came from is left in engram.db, -wal or -shm (jobs, progress, recent runs,
// change sets, history, FTS), and the report names the one place engram cannot clear.

const temporaryFolder = useTemporaryFolders('engram-purge-copies-');

/** A SQLite store in a temp folder removed after the test (closing the store is the test's). */
async function openStoreInTempFolder(): Promise<{ directory: string; store: SqliteMemoryStore }> {
  const directory = await temporaryFolder();
  const store = new SqliteMemoryStore({ path: join(directory, 'engram.db') });
  await store.open();
  return { directory, store };
}

async function rawFiles(directory: string): Promise<Buffer[]> {
  return Promise.all((await readdir(directory)).map((name) => readFile(join(directory, name))));
}

describe('purge on SQLite clears every place a memory came from or went to', () => {
  it('removes the source conversation, its progress, recent runs and change sets, byte for byte', async () => {
    const { directory, store } = await openStoreInTempFolder();
    const scenario = await buildPurgeScenario(store);
    const needles = [CONVERSATION_ONLY, SECRET_WORD];
    expect(countNeedles(await rawFiles(directory), needles)[CONVERSATION_ONLY]).toBeGreaterThan(0);

    const report = await scenario.engram.purge(scenario.memoryId);
    await expectScenarioPurged(store, scenario, report);
    for (const name of ['memory', 'history', 'full-text-index', 'vectors', 'freed-space', 'write-ahead-log'])
      expect(report.places.find((place) => place.place === name)).toMatchObject({ cleared: true });
    expect(countNeedles(await rawFiles(directory), needles)).toEqual({ [CONVERSATION_ONLY]: 0, [SECRET_WORD]: 0 });
    await store.close();
    expect(countNeedles(await rawFiles(directory), needles)).toEqual({ [CONVERSATION_ONLY]: 0, [SECRET_WORD]: 0 });
  });

  it('a checkpoint that quotes the memory and is not JSON is named as not cleared, with the reason', async () => {
    const { store } = await openStoreInTempFolder();
    const scenario = await buildPurgeScenario(store);
    await store.checkpoints!.set('notes:legacy', `plain text naming ${scenario.memoryId}`);
    const report = await scenario.engram.purge(scenario.memoryId);
    expect(report.places.find((place) => place.place === 'checkpoint:notes')).toMatchObject({
      cleared: false,
      reason: expect.stringContaining('not JSON'),
    });
    expect(report.copiesCleared).toBe(false);
    await store.close();
  });
});
