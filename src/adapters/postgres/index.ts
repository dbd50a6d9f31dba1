export { PostgresMemoryStore, type PostgresMemoryStoreOptions } from './postgres-memory-store.js';
export { DEFAULT_POSTGRES_SCHEMA, parsePostgresUrl, redactPostgresUrl, withPostgresSchema, type PostgresConnectionSettings } from './postgres-connection-url.js';
export { POSTGRES_MIGRATIONS, LATEST_POSTGRES_VERSION, type PostgresMigration } from './postgres-migrations.js';
