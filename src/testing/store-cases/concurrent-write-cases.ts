import { expect } from 'vitest';
import { collectStoreWriteWorker, spawnStoreWriteWorker, unexpectedStderr } from '../store-write-worker-process.js';
import { storeCaseGroup } from '../store-suite-support.js';

const WRITES_PER_PROCESS = 1_000;

export const concurrentWriteCases = storeCaseGroup({
  title: 'concurrent writers',
  roles: [],
  cases: [
    {
      name: `two processes writing ${WRITES_PER_PROCESS.toLocaleString('en')} memories each at once lose nothing`,
      timeoutMs: 120_000,
      async run({ store, url }) {
        const scope = 'project:concurrent-writers';
        // Both open the store first, then start at the same moment (process start-up varies).
        const startAt = Date.now() + 2_000;
        const workers = ['first', 'second'].map((tag) =>
          collectStoreWriteWorker(spawnStoreWriteWorker({ url, scope, count: WRITES_PER_PROCESS, tag, startAt })),
        );
        const results = await Promise.all(workers);
        for (const result of results) {
          expect({ exitCode: result.exitCode, signal: result.signal, stderr: unexpectedStderr(result.stderr) }).toEqual(
            { exitCode: 0, signal: null, stderr: '' },
          );
          expect(result.ids).toHaveLength(WRITES_PER_PROCESS);
        }
        const printed = results.flatMap((result) => result.ids);
        expect(new Set(printed).size).toBe(2 * WRITES_PER_PROCESS);

        const filter = { scopes: [scope], archived: 'include', invalid: 'include' } as const;
        expect(await store.count(filter)).toBe(2 * WRITES_PER_PROCESS);
        const stored = await store.list(filter);
        const storedIds = new Set(stored.map((memory) => memory.id));
        expect(storedIds.size).toBe(2 * WRITES_PER_PROCESS);
        expect(printed.filter((id) => !storedIds.has(id))).toEqual([]);
        const names = new Set(stored.map((memory) => memory.name));
        expect(names.size).toBe(2 * WRITES_PER_PROCESS);
        // The writes interleaved: in creation order, the writer changes more than once.
        const writers = [...stored]
          .sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id))
          .map((memory) => memory.name.split('-')[0]);
        const switches = writers.filter((writer, index) => index > 0 && writer !== writers[index - 1]).length;
        expect(switches).toBeGreaterThan(1);
      },
    },
  ],
});
