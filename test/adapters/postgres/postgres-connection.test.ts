import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { describe, expect, inject, it } from 'vitest';
import { openStore, parseStoreUrl } from '../../../src/node/open-store.js';
import {
  parsePostgresUrl,
  redactPostgresUrl,
  withPostgresSchema,
} from '../../../src/adapters/postgres/postgres-connection-url.js';
import { PostgresMemoryStore } from '../../../src/adapters/postgres/postgres-memory-store.js';
import { LATEST_POSTGRES_VERSION, POSTGRES_MIGRATIONS } from '../../../src/adapters/postgres/postgres-migrations.js';
import { DEFAULT_SETTINGS } from '../../../src/kernel/settings.js';
import { expectEngramError } from '../../../src/testing/store-suite-support.js';
import { dropSchema, freshSchemaName, freshSchemaUrl, withServerClient } from '../../support/postgres-schemas.js';
import { writeOnOldSchema } from '../../support/migrate-seed.js';
import { useCleanups } from '../../support/per-test.js';

// Connecting to Postgres: the URL and its parameters, and a clear EngramError, never quoting the
// password, for each way a connection goes wrong. Also migrations: upgrades keep data, a newer
// schema is refused untouched, and processes opening a fresh schema at once all succeed.

const serverUrl = inject('postgresUrl');
const skipReason = inject('postgresSkipReason');
const ACTOR = { actor: 'connection-test' };
const DEFAULTS = { poolSize: 10, statementTimeoutMs: 30_000, connectTimeoutMs: 10_000 };

const cleanup = useCleanups();

/** A URL for a fresh schema, dropped after the test. */
function freshUrl(prefix: string): { url: string; schema: string } {
  const fresh = freshSchemaUrl(serverUrl, prefix);
  cleanup(() => dropSchema(serverUrl, fresh.schema));
  return fresh;
}

async function opened(
  url: string,
  options: Partial<ConstructorParameters<typeof PostgresMemoryStore>[0]> = {},
): Promise<PostgresMemoryStore> {
  const store = new PostgresMemoryStore({ url, onWarning: () => undefined, ...options });
  await store.open();
  cleanup(() => store.close());
  return store;
}

/** The URL with another user and password. */
function asUser(url: string, user: string, password: string): string {
  const parsed = new URL(url);
  parsed.username = user;
  parsed.password = password;
  return parsed.toString();
}

/** A login role with a password, dropped after the test. */
async function temporaryRole(): Promise<{ name: string; password: string }> {
  const name = `engram_role_${randomBytes(4).toString('hex')}`;
  const password = `right-${randomBytes(6).toString('hex')}`;
  await withServerClient(serverUrl, (client) => client.query(`CREATE ROLE ${name} LOGIN PASSWORD '${password}'`));
  cleanup(async () => {
    await withServerClient(serverUrl, (client) => client.query(`DROP OWNED BY ${name}; DROP ROLE ${name}`));
  });
  return { name, password };
}

/** A port on 127.0.0.1 that nothing listens on. */
async function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Every row of every table of a schema, in a stable order: equal fingerprints mean nothing was written. */
async function schemaFingerprint(schema: string): Promise<string> {
  return withServerClient(serverUrl, async (client) => {
    const tables = (
      await client.query<{ name: string }>(
        'SELECT tablename AS name FROM pg_tables WHERE schemaname = $1 ORDER BY tablename',
        [schema],
      )
    ).rows;
    const parts: string[] = [];
    for (const { name } of tables) {
      const rows = await client.query(`SELECT t::text AS row FROM "${schema}"."${name}" t ORDER BY 1`);
      parts.push(`${name}:${rows.rows.map((row) => (row as { row: string }).row).join('|')}`);
    }
    return parts.join('\n');
  });
}

describe('Postgres store URLs', () => {
  it('reads engram parameters out of the URL and hands the rest to the driver', () => {
    const settings = parsePostgresUrl(
      'postgres://alice:s3cret@db.example:6543/memory?schema=team_a&pool=4&statement_timeout=500&connect_timeout=3&application_name=x',
      DEFAULTS,
    );
    expect(settings).toMatchObject({
      schema: 'team_a',
      poolSize: 4,
      statementTimeoutMs: 500,
      connectTimeoutMs: 3_000,
      user: 'alice',
      target: 'db.example:6543/memory as alice',
    });
    const driver = new URL(settings.driverUrl);
    expect([...driver.searchParams.keys()]).toEqual(['application_name']);
    expect(settings.redactedUrl).not.toContain('s3cret');
    expect(parsePostgresUrl('postgresql://bob@localhost/engram', DEFAULTS)).toMatchObject({
      schema: 'engram',
      poolSize: 10,
      statementTimeoutMs: 30_000,
      connectTimeoutMs: 10_000,
    });
    // libpq's meaning of sslmode, not the driver's (which would read require as verify-full).
    expect(
      new URL(parsePostgresUrl('postgres://bob@localhost/engram?sslmode=require', DEFAULTS).driverUrl).searchParams.get(
        'uselibpqcompat',
      ),
    ).toBe('true');
    expect(withPostgresSchema('postgres://u:p@h/d?pool=2', 'other')).toBe('postgres://u:p@h/d?pool=2&schema=other');
    expect(parseStoreUrl('postgres://u:p@h/d')).toEqual({ backend: 'postgres', url: 'postgres://u:p@h/d' });
  });

  it('refuses malformed parameters with CONFIG_INVALID and never repeats the password', async () => {
    const password = 'hunter2-do-not-print';
    const bad = [
      `postgres://u:${password}@localhost/db?schema=Has-Capitals`,
      `postgres://u:${password}@localhost/db?schema=${'x'.repeat(64)}`,
      `postgres://u:${password}@localhost/db?schema=a;drop`,
      `postgres://u:${password}@localhost/db?schema=a&schema=b`,
      `postgres://u:${password}@localhost/db?pool=0`,
      `postgres://u:${password}@localhost/db?pool=ten`,
      `postgres://u:${password}@localhost/db?pool=2000`,
      `postgres://u:${password}@localhost/db?statement_timeout=-1`,
      `postgres://u:${password}@localhost/db?statement_timeout=1e3`,
      `postgres://u:${password}@localhost/db?connect_timeout=soon`,
      `postgres://u:${password}@localhost/db?sslmode=sometimes`,
      `postgres://u:${password}@localhost/db?options=-c%20search_path%3Dpublic`,
      `postgres://u:${password}@[not-a-host/db`,
    ];
    for (const url of bad) {
      const error = await expectEngramError(async () => new PostgresMemoryStore({ url }), 'CONFIG_INVALID');
      expect(error.message, url).not.toContain(password);
      await expectEngramError(() => openStore(url), 'CONFIG_INVALID');
    }
    expect(redactPostgresUrl(`postgres://u:${password}@[broken/db`)).not.toContain(password);
    expect(redactPostgresUrl(`postgres://u@localhost/db?password=${password}`)).not.toContain(password);
  });
});

describe.skipIf(!serverUrl)(
  `Postgres connection errors and migrations${serverUrl ? '' : ` [skipped: ${skipReason}]`}`,
  () => {
    it('an unreachable server is STORE_ERROR naming host and port, not the password', async () => {
      const port = await closedPort();
      const url = `postgres://engram:not-this-password@127.0.0.1:${port}/engram?connect_timeout=5`;
      const store = new PostgresMemoryStore({ url });
      const error = await expectEngramError(() => store.open(), 'STORE_ERROR');
      expect(error.message).toContain(`127.0.0.1:${port}`);
      expect(error.message).not.toContain('not-this-password');
      // Opening failed: the store is closed, not half-open.
      await expectEngramError(() => store.get('anything'), 'STORE_CLOSED');
    });

    it('wrong credentials and an unknown database are CONFIG_INVALID, not the password', async (context) => {
      const role = await temporaryRole();
      const wrong = 'wrong-password-do-not-print';
      const url = withPostgresSchema(asUser(serverUrl, role.name, wrong), freshSchemaName('creds'));
      const store = new PostgresMemoryStore({ url });
      const outcome = await store.open().then(
        () => undefined,
        (error: unknown) => error as Error & { code: string },
      );
      if (outcome === undefined) {
        await store.close();
        context.skip(
          `the server at ENGRAM_TEST_POSTGRES_URL lets ${role.name} in with any password (trust authentication), so a wrong password cannot be refused`,
        );
      }
      expect({ name: outcome!.name, code: outcome!.code }).toEqual({ name: 'EngramError', code: 'CONFIG_INVALID' });
      expect(outcome!.message).toContain(role.name);
      expect(outcome!.message).not.toContain(wrong);

      const missing = new URL(serverUrl);
      missing.pathname = `/no_such_database_${randomBytes(3).toString('hex')}`;
      const error = await expectEngramError(
        () => new PostgresMemoryStore({ url: missing.toString() }).open(),
        'CONFIG_INVALID',
      );
      expect(error.message).toContain('no such database');
    });

    it('a role without privileges is STORE_ERROR saying which grant is missing, and nothing is created', async () => {
      const { url, schema } = freshUrl('privileges');
      const owner = await opened(url);
      await owner.create({ scope: 'global', content: 'Only the owner may read this.' }, ACTOR);
      const role = await temporaryRole();
      const before = await schemaFingerprint(schema);

      // A schema owned by another role: no USAGE on it.
      const outsider = new PostgresMemoryStore({ url: asUser(url, role.name, role.password) });
      const denied = await expectEngramError(() => outsider.open(), 'STORE_ERROR');
      expect(denied.message).toMatch(/privilege/);
      expect(denied.message).toContain(`GRANT USAGE, CREATE ON SCHEMA ${schema} TO ${role.name}`);
      expect(denied.message).not.toContain(role.password);
      expect(await schemaFingerprint(schema)).toBe(before);

      // A new schema: no CREATE on the database.
      const fresh = freshSchemaName('privileges');
      cleanup(() => dropSchema(serverUrl, fresh));
      const creator = new PostgresMemoryStore({
        url: withPostgresSchema(asUser(serverUrl, role.name, role.password), fresh),
      });
      await expectEngramError(() => creator.open(), 'STORE_ERROR');
      const exists = await withServerClient(
        serverUrl,
        async (client) => (await client.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [fresh])).rowCount,
      );
      expect(exists).toBe(0);
    });

    it('a schema from a newer engram is refused with STORE_SCHEMA_NEWER and left untouched', async () => {
      const { url, schema } = freshUrl('newer');
      const store = await opened(url);
      await store.create({ scope: 'global', content: 'Written before the future arrived.' }, ACTOR);
      await store.close();
      await withServerClient(serverUrl, (client) =>
        client.query(
          `INSERT INTO "${schema}".schema_migrations (version, name, applied_at) VALUES ($1, 'from the future', 0)`,
          [LATEST_POSTGRES_VERSION + 1],
        ),
      );
      const before = await schemaFingerprint(schema);
      const error = await expectEngramError(() => new PostgresMemoryStore({ url }).open(), 'STORE_SCHEMA_NEWER');
      expect(error.message).toContain(String(LATEST_POSTGRES_VERSION + 1));
      expect(error.message).toContain(schema);
      await expectEngramError(() => openStore(url), 'STORE_SCHEMA_NEWER');
      expect(await schemaFingerprint(schema)).toBe(before);
    });

    it('sslmode=require against a server without SSL is STORE_UNSUPPORTED', async () => {
      const url = `${withPostgresSchema(serverUrl, freshSchemaName('ssl'))}&sslmode=require`;
      const store = new PostgresMemoryStore({ url });
      const outcome = await store.open().then(
        () => 'opened',
        (error: unknown) => (error as { code?: string }).code,
      );
      await store.close();
      // A server with SSL turned on (possible for ENGRAM_TEST_POSTGRES_URL) lets the store open.
      expect(['STORE_UNSUPPORTED', 'opened']).toContain(outcome);
    });

    it('a statement running past the statement timeout is cancelled with STORE_ERROR and changes nothing', async () => {
      const { url, schema } = freshUrl('timeout');
      const store = await opened(`${url}&statement_timeout=300`);
      const memory = await store.create({ scope: 'global', content: 'A row another session keeps locked.' }, ACTOR);
      // Another session holds the row: the update waits for it until the timeout cancels it.
      await withServerClient(serverUrl, async (client) => {
        await client.query('BEGIN');
        await client.query(`SELECT 1 FROM "${schema}".memories WHERE id = $1 FOR UPDATE`, [memory.id]);
        try {
          const error = await expectEngramError(
            () => store.update(memory.id, { importance: 0.9 }, ACTOR),
            'STORE_ERROR',
          );
          expect(error.message).toContain('300 ms');
        } finally {
          await client.query('ROLLBACK');
        }
      });
      expect(await store.get(memory.id)).toEqual(memory);
      expect(await store.history(memory.id)).toHaveLength(1);
    });

    it('upgrades a version 1 schema to the latest, keeping its data and full-text index', async () => {
      const { url, schema } = freshUrl('upgrade');
      const { written, edited } = await writeOnOldSchema(await opened(url, { targetVersion: 1 }), ACTOR);

      const store = await opened(url);
      expect(store.info()).toMatchObject({ backend: 'postgres', schemaVersion: LATEST_POSTGRES_VERSION });
      expect(store.info().location).not.toContain('engram-test-password');
      expect(await store.get(written.id)).toEqual(edited);
      expect((await store.history(written.id)).map((entry) => entry.action)).toEqual(['create', 'update']);
      expect(
        (await store.searchText({ scopes: ['project:legacy'], terms: ['billing'], limit: 5 })).map(
          (hit) => hit.memory.id,
        ),
      ).toEqual([written.id]);
      await store.vectors.setSpace({ model: 'm', dimensions: 2 });
      expect(await store.vectors.put([{ id: written.id, vector: Float32Array.from([1, 0]) }])).toBe(1);
      expect(await store.jobs.enqueue({ queue: 'q', key: 'k', payload: null })).toMatchObject({ created: true });
      const versions = await withServerClient(
        serverUrl,
        async (client) =>
          (await client.query(`SELECT version FROM "${schema}".schema_migrations ORDER BY version`)).rows,
      );
      expect(versions.map((row) => (row as { version: number }).version)).toEqual(
        POSTGRES_MIGRATIONS.map((migration) => migration.version),
      );
    });

    it('several stores opening one fresh schema at once all succeed and migrate it once', async () => {
      const { url, schema } = freshUrl('race');
      const stores = await Promise.all(Array.from({ length: 6 }, () => opened(url)));
      const ids = await Promise.all(
        stores.map((store, index) =>
          store.create({ scope: 'global', content: `Opened at once, number ${index}.` }, ACTOR),
        ),
      );
      expect(await stores[0]!.count({ scopes: ['global'] })).toBe(ids.length);
      const versions = await withServerClient(
        serverUrl,
        async (client) => (await client.query(`SELECT version FROM "${schema}".schema_migrations`)).rowCount,
      );
      expect(versions).toBe(POSTGRES_MIGRATIONS.length);
    });

    it('openStore opens a postgres:// URL with the pool and timeout settings, and one database holds separate stores', async () => {
      const first = freshUrl('separate');
      const second = freshUrl('separate');
      const a = await openStore(first.url, {
        poolSize: 2,
        statementTimeoutMs: DEFAULT_SETTINGS.store.statementTimeoutMs,
        onWarning: () => undefined,
      });
      cleanup(() => a.close());
      const b = await openStore(second.url, { onWarning: () => undefined });
      cleanup(() => b.close());
      expect(a.info().backend).toBe('postgres');
      const memory = await a.create({ scope: 'global', content: 'Only in the first schema.' }, ACTOR);
      expect(await b.get(memory.id)).toBeUndefined();
      expect(await b.count({ scopes: ['global'] })).toBe(0);
      // A pool of two still serves a lock holder and its queries (locks have their own connections).
      expect(
        await a.locks.hold(
          'memory-write:global',
          async () => (await Promise.all([a.get(memory.id), a.count({ scopes: ['global'] })]))[1],
        ),
      ).toBe(1);
    });
  },
);
