import { afterAll, describe, inject } from 'vitest';
import { PostgresMemoryStore } from '../../src/adapters/postgres/postgres-memory-store.js';
import { CORPUS_NOW } from '../fixtures/dream-corpus.js';
import { dropSchema, freshSchemaUrl } from '../support/postgres-schemas.js';
import { concurrentEditCases } from './dream-concurrent-edit-cases.js';

const serverUrl = inject('postgresUrl') ?? '';
const schemas: string[] = [];
afterAll(async () => {
  for (const schema of schemas) await dropSchema(serverUrl, schema);
});

describe.skipIf(!serverUrl)('a dream and a concurrent edit (PostgreSQL, the edit from another process)', () => {
  concurrentEditCases(async () => {
    const { url, schema } = freshSchemaUrl(serverUrl, 'dream_edit');
    schemas.push(schema);
    const store = new PostgresMemoryStore({ url, now: () => new Date(CORPUS_NOW) });
    await store.open();
    return { store, url };
  });
});
