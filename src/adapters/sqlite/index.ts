export { SqliteMemoryStore, type SqliteMemoryStoreOptions } from './sqlite-memory-store.js';
export { ftsMatchExpression } from './sqlite-queries.js';
export { SQLITE_MIGRATIONS, LATEST_SQLITE_VERSION, type SqliteMigration } from './sqlite-migrations.js';
