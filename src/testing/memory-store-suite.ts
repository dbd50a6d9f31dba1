import { describe, expect, it } from 'vitest';
import {
  missingRoles,
  STORE_ROLES,
  type MemoryStore,
  type StoreRole,
  type StoreWith,
} from '../contracts/memory-store.js';
import { changeFeedCases } from './store-cases/change-feed-cases.js';
import { checkpointCases } from './store-cases/checkpoint-cases.js';
import { checkpointCleanupCases, jobCleanupCases } from './store-cases/cleanup-cases.js';
import { concurrentWriteCases } from './store-cases/concurrent-write-cases.js';
import { historyCases } from './store-cases/history-cases.js';
import { importCases } from './store-cases/import-cases.js';
import { jobQueueCases } from './store-cases/job-queue-cases.js';
import { jobWorkerCases } from './store-cases/job-lease-cases.js';
import { jobRecordCopyCases } from './store-cases/job-record-copy-cases.js';
import { lockCases, lockedCheckpointCases } from './store-cases/lock-cases.js';
import { purgeCases, purgeJobCases } from './store-cases/purge-cases.js';
import { readCases } from './store-cases/read-cases.js';
import { textCases } from './store-cases/text-cases.js';
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
  /**
   * The optional roles the backend's stores have (default every one: vectors, jobs, locks,
   * checkpoints, records). Cases that need another are skipped, naming the role; a store that
   * lacks a role named here fails the cases that need it.
   */
  roles?: readonly StoreRole[];
  /** Cases this backend cannot pass, by case name, each with the reason (shown in the skipped test's title). */
  skip?: Record<string, string>;
}

/** The suite by role: the ledger first, then each optional role (a group's cases may use others too: see its `roles`). */
const ROLES: ReadonlyArray<{ title: string; groups: readonly StoreSuiteGroup[] }> = [
  {
    title: 'ledger',
    groups: [
      writeCases,
      importCases,
      readCases,
      scopeIsolationCases,
      searchCases,
      historyCases,
      concurrentWriteCases,
      purgeCases,
      textCases,
    ],
  },
  { title: 'vectors role', groups: [vectorCases] },
  { title: 'jobs role', groups: [jobQueueCases, jobWorkerCases, jobCleanupCases, purgeJobCases] },
  { title: 'checkpoints role', groups: [checkpointCases, checkpointCleanupCases] },
  { title: 'locks role', groups: [lockCases, lockedCheckpointCases] },
  { title: 'records role', groups: [recordCopyCases, jobRecordCopyCases] },
  { title: 'changes role', groups: [changeFeedCases] },
];

/**
 * Registers the MemoryStore conformance suite with vitest, organised by role. A backend with every
 * role (SQLite, Postgres) runs every case; one that names fewer `roles` has the cases that need
 * another skipped, each naming the role. Cases of the roles a backend has must pass unchanged.
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
  for (const part of ROLES) {
    for (const group of part.groups) {
      for (const suiteCase of group.cases) {
        if (names.has(suiteCase.name))
          throw new Error(`Two conformance cases are named ${JSON.stringify(suiteCase.name)}.`);
        names.add(suiteCase.name);
      }
    }
  }
  const skip = options.skip ?? {};
  const roles = new Set(options.roles ?? STORE_ROLES);

  describe(`MemoryStore conformance: ${options.name}`, () => {
    it('skips only cases that exist, each with a reason, and names only roles that exist', () => {
      expect(
        Object.keys(skip).filter((name) => !names.has(name)),
        'skip names unknown cases',
      ).toEqual([]);
      expect(
        Object.keys(skip).filter((name) => !/\S/.test(skip[name] ?? '')),
        'skipped cases without a reason',
      ).toEqual([]);
      expect(
        [...roles].filter((role) => !(STORE_ROLES as readonly string[]).includes(role)),
        'roles names unknown roles',
      ).toEqual([]);
    });
    for (const part of ROLES) {
      describe(part.title, () => {
        for (const group of part.groups) {
          describe(group.title, () => {
            for (const suiteCase of group.cases) {
              const lacking = suiteCase.roles.filter((role) => !roles.has(role));
              const reason = Object.hasOwn(skip, suiteCase.name)
                ? skip[suiteCase.name]
                : lacking.length > 0
                  ? lackingReason(lacking)
                  : undefined;
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
  });
}

/** Runs one case on a fresh store, which must have every role the case needs. */
async function runCase(create: MemoryStoreSuiteOptions['create'], suiteCase: StoreSuiteCase): Promise<void> {
  const { store, url, cleanup } = await create();
  try {
    const missing = missingRoles(store, suiteCase.roles);
    if (missing.length > 0) {
      throw new Error(
        `The store has no ${missing.map((role) => `store.${role}`).join(', ')}, which this case needs. A backend without a role names the roles it has: runMemoryStoreSuite({ roles: [...] }).`,
      );
    }
    // Every role the case names is there (checked above); the case's type lets it use only those.
    const caseContext: StoreSuiteContext<StoreRole> = { store: store as StoreWith<StoreRole>, url };
    await suiteCase.run(caseContext);
  } catch (error) {
    await store.close().catch(() => undefined);
    await cleanup?.().catch(() => undefined);
    throw error;
  }
  await store.close();
  await cleanup?.();
}

function lackingReason(roles: readonly StoreRole[]): string {
  return `the backend has no ${roles.map((role) => `${role} role (store.${role})`).join(', ')}`;
}
