import { describe, expect, it, type TestContext } from 'vitest';
import { missingRoles, type MemoryStore, type StoreRole, type StoreWith } from '../contracts/memory-store.js';
import { checkpointCases } from './store-cases/checkpoint-cases.js';
import { checkpointCleanupCases, jobCleanupCases } from './store-cases/cleanup-cases.js';
import { concurrentWriteCases } from './store-cases/concurrent-write-cases.js';
import { historyCases } from './store-cases/history-cases.js';
import { importCases } from './store-cases/import-cases.js';
import { jobQueueCases, jobWorkerCases } from './store-cases/job-queue-cases.js';
import { jobRecordCopyCases } from './store-cases/job-record-copy-cases.js';
import { lockCases, lockedCheckpointCases } from './store-cases/lock-cases.js';
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

/** The suite by role: the ledger first, then each optional role (a group's cases may use others too: see its `roles`). */
const ROLES: ReadonlyArray<{ title: string; groups: readonly StoreSuiteGroup[] }> = [
  { title: 'ledger', groups: [writeCases, importCases, readCases, scopeIsolationCases, searchCases, historyCases, concurrentWriteCases] },
  { title: 'vectors role', groups: [vectorCases] },
  { title: 'jobs role', groups: [jobQueueCases, jobWorkerCases, jobCleanupCases] },
  { title: 'checkpoints role', groups: [checkpointCases, checkpointCleanupCases] },
  { title: 'locks role', groups: [lockCases, lockedCheckpointCases] },
  { title: 'records role', groups: [recordCopyCases, jobRecordCopyCases] },
];

/**
 * Registers the MemoryStore conformance suite with vitest, organised by role. A backend with every
 * role (SQLite, Postgres) runs every case; a backend without an optional role has the cases that
 * need it skipped, each naming the role it lacks. Cases of the roles a backend has must pass unchanged.
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
  for (const role of ROLES) {
    for (const group of role.groups) {
      for (const suiteCase of group.cases) {
        if (names.has(suiteCase.name)) throw new Error(`Two conformance cases are named ${JSON.stringify(suiteCase.name)}.`);
        names.add(suiteCase.name);
      }
    }
  }
  const skip = options.skip ?? {};

  describe(`MemoryStore conformance: ${options.name}`, () => {
    it('skips only cases that exist, each with a reason', () => {
      expect(Object.keys(skip).filter((name) => !names.has(name)), 'skip names unknown cases').toEqual([]);
      expect(Object.keys(skip).filter((name) => !/\S/.test(skip[name] ?? '')), 'skipped cases without a reason').toEqual([]);
    });
    for (const role of ROLES) {
      describe(role.title, () => {
        for (const group of role.groups) {
          describe(group.title, () => {
            for (const suiteCase of group.cases) {
              const reason = Object.hasOwn(skip, suiteCase.name) ? skip[suiteCase.name] : undefined;
              if (reason !== undefined) {
                it.skip(`${suiteCase.name} [skipped: ${reason}]`, () => {});
              } else {
                it(suiteCase.name, (context) => runCase({ create: options.create, suiteCase, context }), suiteCase.timeoutMs);
              }
            }
          });
        }
      });
    }
  });
}

/** Runs one case on a fresh store, or skips it (naming the roles) when the backend lacks a role it needs. */
async function runCase(input: { create: MemoryStoreSuiteOptions['create']; suiteCase: StoreSuiteCase; context: TestContext }): Promise<void> {
  const { suiteCase, context } = input;
  const { store, url, cleanup } = await input.create();
  const missing = missingRoles(store, suiteCase.roles);
  if (missing.length > 0) {
    await store.close().catch(() => undefined);
    await cleanup?.().catch(() => undefined);
    context.skip(skipReason(missing));
  }
  // Every role the case names is there (checked above); the case's type lets it use only those.
  const caseContext: StoreSuiteContext<StoreRole> = { store: store as StoreWith<StoreRole>, url };
  try {
    await suiteCase.run(caseContext);
  } catch (error) {
    await store.close().catch(() => undefined);
    await cleanup?.().catch(() => undefined);
    throw error;
  }
  await store.close();
  await cleanup?.();
}

function skipReason(missing: readonly StoreRole[]): string {
  return `the backend has no ${missing.map((role) => `${role} role (store.${role})`).join(', ')}`;
}
