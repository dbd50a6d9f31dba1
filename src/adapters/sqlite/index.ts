export { SqliteMemoryStore, ftsMatchExpression, type SqliteMemoryStoreOptions } from './sqlite-memory-store.js';
export { SQLITE_MIGRATIONS, LATEST_SQLITE_VERSION, type SqliteMigration } from './sqlite-migrations.js';
