import { describe, expect, it } from 'vitest';
import type { MemoryStore } from '../contracts/memory-store.js';
import { checkpointCases } from './store-cases/checkpoint-cases.js';
import { cleanupCases } from './store-cases/cleanup-cases.js';
import { concurrentWriteCases } from './store-cases/concurrent-write-cases.js';
import { historyCases } from './store-cases/history-cases.js';
import { importCases } from './store-cases/import-cases.js';
import { jobQueueCases } from './store-cases/job-queue-cases.js';
import { jobRecordCopyCases } from './store-cases/job-record-copy-cases.js';
import { lockCases } from './store-cases/lock-cases.js';
import { readCases } from './store-cases/read-cases.js';
import { recordCopyCases } from './store-cases/record-copy-cases.js';
import { scopeIsolationCases } from './store-cases/scope-isolation-cases.js';
import { searchCases } from './store-cases/search-cases.js';
import { vectorCases } from './store-cases/vector-cases.js';
import { writeCases } from './store-cases/write-cases.js';
import type { StoreSuiteCase, StoreSuiteContext, StoreSuiteGroup } from './store-suite-support.js';

/** A fresh store for one case: opened and empty, with a URL another process can pass to `openStore`. */
export interface MemoryStoreUnderTest {
  store: MemoryStore;
  url: string;
  /** Removes what `create` made (files, schemas); called after the suite has closed the store. */
  cleanup?: () => Promise<void>;
}

export interface MemoryStoreSuiteOptions {
  /** Names the backend in test titles. */
  name: string;
  /** Makes a fresh, opened, empty store; called once per case. */
  create: () => Promise<MemoryStoreUnderTest>;
  /** Cases this backend cannot pass, by case name, each with the reason (shown in the skipped test's title). */
  skip?: Record<string, string>;
}

const GROUPS: readonly StoreSuiteGroup[] = [
  writeCases,
  importCases,
  readCases,
  scopeIsolationCases,
  searchCases,
  vectorCases,
  historyCases,
  concurrentWriteCases,
  recordCopyCases,
  jobRecordCopyCases,
  jobQueueCases,
  checkpointCases,
  cleanupCases,
  lockCases,
];

/**
 * Registers the MemoryStore conformance suite with vitest: every backend must pass it unchanged.
 *
 * @example
 * runMemoryStoreSuite({
 *   name: 'sqlite',
 *   create: async () => {
 *     const path = join(await mkdtemp(join(tmpdir(), 'engram-')), 'memory.db');
 *     const store = new SqliteMemoryStore({ path });
 *     await store.open();
 *     return { store, url: path };
 *   },
 * });
 */
export function runMemoryStoreSuite(options: MemoryStoreSuiteOptions): void {
  const names = new Set<string>();
  for (const group of GROUPS) {
    for (const suiteCase of group.cases) {
      if (names.has(suiteCase.name)) throw new Error(`Two conformance cases are named ${JSON.stringify(suiteCase.name)}.`);
      names.add(suiteCase.name);
    }
  }
  const skip = options.skip ?? {};

  describe(`MemoryStore conformance: ${options.name}`, () => {
    it('skips only cases that exist, each with a reason', () => {
      expect(Object.keys(skip).filter((name) => !names.has(name)), 'skip names unknown cases').toEqual([]);
      expect(Object.keys(skip).filter((name) => !/\S/.test(skip[name] ?? '')), 'skipped cases without a reason').toEqual([]);
    });
    for (const group of GROUPS) {
      describe(group.title, () => {
        for (const suiteCase of group.cases) {
          const reason = Object.hasOwn(skip, suiteCase.name) ? skip[suiteCase.name] : undefined;
          if (reason !== undefined) {
            it.skip(`${suiteCase.name} [skipped: ${reason}]`, () => {});
          } else {
            it(suiteCase.name, () => runCase(options.create, suiteCase), suiteCase.timeoutMs);
          }
        }
      });
    }
  });
}

async function runCase(create: MemoryStoreSuiteOptions['create'], suiteCase: StoreSuiteCase): Promise<void> {
  const { store, url, cleanup } = await create();
  const context: StoreSuiteContext = { store, url };
  try {
    await suiteCase.run(context);
  } catch (error) {
    await store.close().catch(() => undefined);
    await cleanup?.().catch(() => undefined);
    throw error;
  }
  await store.close();
  await cleanup?.();
}
