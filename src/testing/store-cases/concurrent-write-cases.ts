import { expect } from 'vitest';
import { collectStoreWriteWorker, spawnStoreWriteWorker, unexpectedStderr } from '../store-write-worker-process.js';
import type { StoreSuiteGroup } from '../store-suite-support.js';

const WRITES_PER_PROCESS = 1_000;

export const concurrentWriteCases: StoreSuiteGroup = {
  title: 'concurrent writers',
  cases: [
    {
      name: `two processes writing ${WRITES_PER_PROCESS.toLocaleString('en')} memories each at once lose nothing`,
      timeoutMs: 120_000,
      async run({ store, url }) {
        const scope = 'project:concurrent-writers';
        const workers = ['first', 'second'].map((tag) =>
          collectStoreWriteWorker(spawnStoreWriteWorker({ url, scope, count: WRITES_PER_PROCESS, tag })),
        );
        const results = await Promise.all(workers);
        for (const result of results) {
          expect({ exitCode: result.exitCode, signal: result.signal, stderr: unexpectedStderr(result.stderr) }).toEqual({ exitCode: 0, signal: null, stderr: '' });
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
      },
    },
  ],
};
