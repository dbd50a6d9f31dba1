import { defineConfig } from 'vitest/config';

// Two projects: everything, and the tests that need a PostgreSQL server. The second one's global
// setup (test/support/postgres-server.ts) starts a throwaway server, or uses ENGRAM_TEST_POSTGRES_URL,
// and only when one of its files is selected: `npx vitest run test/recall` starts none.
export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
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
