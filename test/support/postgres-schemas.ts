import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { withPostgresSchema } from '../../src/adapters/postgres/postgres-connection-url.js';

/**
 * Fresh schemas on one test server: each store under test gets a schema of its own (one database,
 * many stores), dropped afterwards. Names are unique across processes and runs.
 */
export function freshSchemaName(prefix = 'test'): string {
  return `${prefix}_${process.pid}_${randomBytes(5).toString('hex')}`;
}

/** The server URL pointed at a fresh schema (created by the store's first open). */
export function freshSchemaUrl(serverUrl: string, prefix = 'test'): { url: string; schema: string } {
  const schema = freshSchemaName(prefix);
  return { url: withPostgresSchema(serverUrl, schema), schema };
}

const pools = new Map<string, pg.Pool>();

/** Runs SQL on the test server as the URL's user, outside any store (setup and checks of the tests). */
export async function withServerClient<T>(serverUrl: string, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const parsed = new URL(serverUrl);
  parsed.searchParams.delete('schema');
  const key = parsed.toString();
  let pool = pools.get(key);
  if (!pool) {
    // One connection per test file, reused: connecting costs more than most cases.
    pool = new pg.Pool({ connectionString: key, max: 1, allowExitOnIdle: true, idleTimeoutMillis: 1_000 });
    pools.set(key, pool);
  }
  const client = await pool.connect();
  try {
    return await work(client);
  } finally {
    client.release();
  }
}

/** Drops a schema and everything in it. */
export async function dropSchema(serverUrl: string, schema: string): Promise<void> {
  await withServerClient(serverUrl, (client) =>
    client.query(`DROP SCHEMA IF EXISTS "${schema.replace(/"/g, '""')}" CASCADE`),
  );
}
