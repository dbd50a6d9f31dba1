import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SqliteMemoryStore } from '../../../src/adapters/sqlite/sqlite-memory-store.js';
import { useTemporaryFolders } from '../../support/per-test.js';

// Issue 17 item 3: a purge leaves no copy of the memory in the database files. Read as an attacker
// would: the raw bytes of engram.db, -wal and -shm, not through SQL.

const ACTOR = { actor: 'purge-test' };
const temporaryFolder = useTemporaryFolders('engram-purge-');

/** How many times each needle occurs in the raw bytes of every file in the folder. */
async function rawCopies(directory: string, needles: readonly string[]): Promise<Record<string, number>> {
  const counts: Record<string, number> = Object.fromEntries(needles.map((needle) => [needle, 0]));
  for (const name of await readdir(directory)) {
    const bytes = await readFile(join(directory, name));
    for (const needle of needles) {
      const pattern = Buffer.from(needle, 'utf8');
      for (let at = bytes.indexOf(pattern); at !== -1; at = bytes.indexOf(pattern, at + 1)) counts[needle]! += 1;
    }
  }
  return counts;
}

/** A store with other memories around the secret one, so pages are shared and reused, as in real use. */
async function storeWithSecret(secret: string): Promise<{ store: SqliteMemoryStore; directory: string; id: string }> {
  const directory = await temporaryFolder();
  const store = new SqliteMemoryStore({ path: join(directory, 'engram.db') });
  await store.open();
  for (let index = 0; index < 40; index += 1)
    await store.create({ scope: 'project:vault', content: `Ordinary fact number ${index} about the build.` }, ACTOR);
  const memory = await store.create(
    {
      scope: 'project:vault',
      name: `vault-${secret.slice(0, 14).replace(/ /g, '-')}`,
      content: `Dana's diagnosis is ${secret}.`,
    },
    ACTOR,
  );
  await store.update(memory.id, { content: `Dana's diagnosis is ${secret}; she sees the clinic in May.` }, ACTOR);
  await store.jobs.enqueue({
    queue: 'extraction',
    key: 'turn-1',
    payload: { messages: [{ role: 'user', content: `Dana's diagnosis is ${secret}.` }] },
  });
  for (let index = 40; index < 60; index += 1)
    await store.create({ scope: 'project:vault', content: `Ordinary fact number ${index} about the deploy.` }, ACTOR);
  return { store, directory, id: memory.id };
}

describe('purge on SQLite leaves no copy in the files', () => {
  const cases = [
    { label: 'a private fact', secret: 'zqxvortexkappa syndrome' },
    { label: 'a secret on overflow pages', secret: `longnotezq ${'the clinic notes say more '.repeat(150)}` },
  ];
  for (const { label, secret } of cases) {
    it(`forget --hard keeps ${label} in the files; purge removes every copy (db, wal, shm; rows, FTS, job payload)`, async () => {
      const { store, directory, id } = await storeWithSecret(secret);
      // The FTS index keeps the word lowercased and stemmed: look for its stem too.
      const needles = [secret.slice(0, 24), secret.toLowerCase().slice(0, 12)];
      await store.delete(id, ACTOR);
      const afterDelete = await rawCopies(directory, needles);
      expect(afterDelete[needles[0]!]).toBeGreaterThan(0);

      const report = await store.purge(id, ACTOR);
      expect(report).toMatchObject({
        memoryRemoved: false,
        historyEntriesRemoved: 3,
        jobsRemoved: 1,
        copiesCleared: true,
      });
      expect(await rawCopies(directory, needles)).toEqual(Object.fromEntries(needles.map((needle) => [needle, 0])));
      // The other memories are intact and still searchable.
      expect(await store.count({ scopes: ['project:vault'] })).toBe(60);
      expect((await store.searchText({ scopes: ['project:vault'], terms: ['deploy'], limit: 50 })).length).toBe(20);
      await store.close();
      expect(await rawCopies(directory, needles)).toEqual(Object.fromEntries(needles.map((needle) => [needle, 0])));
    });
  }

  it('a purge of a live memory while another connection reads reports whether the log was cleared', async () => {
    const { store, directory, id } = await storeWithSecret('zqxreaderheld syndrome');
    const reader = new SqliteMemoryStore({ path: join(directory, 'engram.db') });
    await reader.open();
    expect(await reader.count({ scopes: ['project:vault'] })).toBe(61);
    const report = await store.purge(id, ACTOR);
    expect(report.memoryRemoved).toBe(true);
    expect(typeof report.copiesCleared).toBe('boolean');
    await reader.close();
    await store.close();
  });
});
