// `engram/postgres`: the PostgreSQL backend. Its own entry so that `engram/node` (and every SQLite
// user) never loads the `pg` driver; `openStore('postgres://…')` loads this module only when asked.
// test/exports.test.ts pins this list: a change to it is a deliberate diff.
export { PostgresMemoryStore, type PostgresMemoryStoreOptions } from './postgres-memory-store.js';
