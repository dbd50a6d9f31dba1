import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

// Files at once. Vitest's default is one fewer than the cores: on a 2-core machine (CI's) that is one
// file at a time, one core mostly idle while a file waits on its child process (the CLI, a hook, an
// agent's CLI, git, Chromium) or a loopback server. At least two files at once keeps both busy;
// many-core machines keep vitest's default. Three on 2 cores timed out tests that wait a fixed time
// (cli-stop-signals, cli-queue-run-race) on a loaded machine. VITEST_MAX_WORKERS=<n> overrides it.
const cores = availableParallelism();
const maxWorkers = Math.max(cores - 1, Math.min(cores, 2));

// Two projects: everything, and the tests that need a PostgreSQL server. The second one's global
// setup (test/support/postgres-server.ts) starts a throwaway server, or uses ENGRAM_TEST_POSTGRES_URL,
// and only when one of its files is selected: `npx vitest run test/recall` starts none.
export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    maxWorkers,
    projects: [
      {
        extends: true,
        test: {
          name: 'engram',
          include: ['test/**/*.test.ts'],
          exclude: ['test/**/postgres-*.test.ts', 'test/**/migrate-*.test.ts'],
        },
      },
      {
        extends: true,
        test: {
          name: 'postgres',
          include: ['test/**/postgres-*.test.ts', 'test/**/migrate-*.test.ts'],
          globalSetup: ['test/support/postgres-server.ts'],
        },
      },
    ],
  },
});
