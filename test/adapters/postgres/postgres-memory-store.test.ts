import { inject, it } from 'vitest';
import { PostgresMemoryStore } from '../../../src/adapters/postgres/postgres-memory-store.js';
import { runMemoryStoreSuite } from '../../../src/testing/suites.js';
import { dropSchema, freshSchemaUrl } from '../../support/postgres-schemas.js';

// The same conformance suite as SQLite, on a real PostgreSQL server (see test/support/postgres-server.ts):
// every case gets a schema of its own, dropped afterwards.

const serverUrl = inject('postgresUrl');

if (serverUrl) {
  runMemoryStoreSuite({
    name: 'postgres',
    create: async () => {
      const { url, schema } = freshSchemaUrl(serverUrl, 'suite');
      // Warnings (vector search computed in engram, without pgvector) are expected here and said once per store.
      const store = new PostgresMemoryStore({ url, onWarning: () => undefined });
      await store.open();
      return { store, url, cleanup: () => dropSchema(serverUrl, schema) };
    },
  });
} else {
  it.skip(`MemoryStore conformance: postgres [skipped: ${inject('postgresSkipReason')}]`, () => {});
}
