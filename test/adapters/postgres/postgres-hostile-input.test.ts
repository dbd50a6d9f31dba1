import { randomBytes } from 'node:crypto';
import { describe, expect, inject, it } from 'vitest';
import { PostgresMemoryStore } from '../../../src/adapters/postgres/postgres-memory-store.js';
import { everything, expectEngramError, fingerprint } from '../../../src/testing/store-suite-support.js';
import { dropSchema, freshSchemaUrl, withServerClient } from '../../support/postgres-schemas.js';
import { LATEST_POSTGRES_VERSION } from '../../../src/adapters/postgres/postgres-migrations.js';
import { useCleanups } from '../../support/per-test.js';

// Hostile input on Postgres: SQL (and query syntax, placeholders, quotes, backslashes) in every
// text a caller can give is stored verbatim and read back unchanged, never run; what Postgres
// cannot hold (NUL) or engram will not (oversized) is refused with a clear error, changing nothing.

const serverUrl = inject('postgresUrl');
const skipReason = inject('postgresSkipReason');

const SQL = [
  "'; DROP TABLE memories; --",
  '"; DROP SCHEMA public CASCADE; --',
  "$1'); DELETE FROM memory_history; --",
  "\\'; TRUNCATE jobs; --",
  "E'\\x27'; SELECT pg_sleep(10); --",
  "'::tsvector || 'x' @@ 'y' & !z | <-> :*",
  '$$; DROP FUNCTION memory_vectors_drop_stale(); $$',
  '/* comment */ UNION SELECT * FROM pg_authid --',
];

const cleanup = useCleanups();

async function freshStore(
  options: { limits?: ConstructorParameters<typeof PostgresMemoryStore>[0]['limits'] } = {},
): Promise<{ store: PostgresMemoryStore; schema: string }> {
  const { url, schema } = freshSchemaUrl(serverUrl, 'hostile');
  const store = new PostgresMemoryStore({ url, onWarning: () => undefined, ...options });
  await store.open();
  cleanup(() => dropSchema(serverUrl, schema));
  cleanup(() => store.close());
  return { store, schema };
}

/** The tables of a schema and how many rows each holds. */
async function tables(schema: string): Promise<Record<string, number>> {
  return withServerClient(serverUrl, async (client) => {
    const names = (
      await client.query<{ name: string }>('SELECT tablename AS name FROM pg_tables WHERE schemaname = $1 ORDER BY 1', [
        schema,
      ])
    ).rows;
    const counts: Record<string, number> = {};
    for (const { name } of names)
      counts[name] = Number((await client.query(`SELECT count(*) AS n FROM "${schema}"."${name}"`)).rows[0].n);
    return counts;
  });
}

describe.skipIf(!serverUrl)(`Postgres store with hostile input${serverUrl ? '' : ` [skipped: ${skipReason}]`}`, () => {
  it('stores SQL in every text field verbatim and runs none of it', async () => {
    const { store, schema } = await freshStore();
    const scope = 'project:$1;drop*=!,&';
    for (const [index, text] of SQL.entries()) {
      const actor = { actor: text };
      const memory = await store.create(
        {
          scope,
          name: `sql-${index}`,
          description: text,
          content: `${text}\nSecond line: ${text}`,
          source: { sessionId: text, turnId: text.slice(0, 20), origin: text },
        },
        actor,
      );
      expect(await store.get(memory.id, [scope])).toEqual(memory);
      const updated = await store.update(
        memory.id,
        { content: `${text} (edited)`, description: `${text} (edited)` },
        actor,
      );
      expect(await store.get(memory.id)).toEqual(updated);
      expect((await store.history(memory.id)).map((entry) => entry.actor)).toEqual([text, text]);

      expect(await store.checkpoints.set(text, text)).toBe(true);
      expect(await store.checkpoints.get(text)).toBe(text);
      const { job } = await store.jobs.enqueue({ queue: text, key: text, payload: { text, list: [text] } });
      expect((await store.jobs.get(job.id))?.payload).toEqual({ text, list: [text] });
      const claimed = await store.jobs.claim({ queue: text, worker: text, leaseMs: 60_000 });
      expect(claimed?.lockedBy).toBe(text);
      expect((await store.jobs.fail(job.id, text, { error: text })).lastError).toBe(text);
      expect(await store.locks.hold(text, async () => 'held')).toBe('held');
    }
    await store.vectors.setSpace({ model: SQL[0]!, dimensions: 3 });
    expect(await store.vectors.space()).toEqual({ model: SQL[0], dimensions: 3 });

    // Searching for the words of SQL finds the memories that hold them, as words.
    const hits = await store.searchText({
      scopes: [scope],
      terms: ['drop', 'table', 'memories'],
      match: 'all',
      limit: 20,
    });
    expect(hits.length).toBeGreaterThan(0);
    for (const hit of hits) expect(hit.memory.content.toLowerCase()).toContain('drop');
    expect(await tables(schema)).toEqual({
      checkpoints: SQL.length,
      jobs: SQL.length,
      memories: SQL.length,
      memory_history: 2 * SQL.length,
      memory_vectors: 0,
      schema_migrations: LATEST_POSTGRES_VERSION,
      vector_space: 1,
    });
    // The schemas next to this one (public, other stores) were not touched either.
    const publicTables = await withServerClient(
      serverUrl,
      async (client) =>
        (await client.query("SELECT count(*)::int AS n FROM pg_namespace WHERE nspname = 'public'")).rows[0].n,
    );
    expect(publicTables).toBe(1);
  });

  it('refuses NUL, which Postgres text cannot hold, with INVALID_INPUT and changes nothing', async () => {
    const { store } = await freshStore();
    const kept = await store.create({ scope: 'global', content: 'Here before the hostile writes.' }, { actor: 'test' });
    const before = await fingerprint(store, ['global']);
    await expectEngramError(
      () => store.create({ scope: 'global', content: 'A fine fact.' }, { actor: 'nul\u0000actor' }),
      'INVALID_INPUT',
    );
    await expectEngramError(
      () => store.update(kept.id, { importance: 0.9 }, { actor: 'nul\u0000actor' }),
      'INVALID_INPUT',
    );
    await expectEngramError(() => store.vectors.setSpace({ model: 'nul\u0000model', dimensions: 2 }), 'INVALID_INPUT');
    await expectEngramError(() => store.checkpoints.set('name', 'nul\u0000value'), 'INVALID_INPUT');
    expect(await fingerprint(store, ['global'])).toEqual(before);
    // Inside JSON a NUL is an escape (text without NUL): a job payload keeps it.
    const { job } = await store.jobs.enqueue({ queue: 'q', key: 'k', payload: { text: 'nul\u0000inside' } });
    expect((await store.jobs.get(job.id))?.payload).toEqual({ text: 'nul\u0000inside' });
  });

  it('keeps huge and odd texts whole: 64 KB of SQL, a 60 KB word, 12,000 distinct words, 20,000 positions', async () => {
    const { store } = await freshStore();
    const actor = { actor: 'huge' };
    const sql = SQL.join(' ').repeat(Math.floor((64 * 1024) / (SQL.join(' ').length + 1)));
    const giantWord = `${'x'.repeat(60_000)} findme`;
    const distinct = Array.from({ length: 12_000 }, (_, index) => `w${index.toString(36)}`).join(' ');
    const repeated = `${'ab '.repeat(20_000)}lastword`;
    for (const content of [sql, giantWord, distinct, repeated]) {
      const memory = await store.create({ scope: 'project:huge', content }, actor);
      expect((await store.get(memory.id))?.content).toBe(content);
    }
    await expectEngramError(
      () => store.create({ scope: 'project:huge', content: 'y'.repeat(64 * 1024 + 1) }, actor),
      'PAYLOAD_TOO_LARGE',
    );
    const search = async (term: string): Promise<number> =>
      (await store.searchText({ scopes: ['project:huge'], terms: [term], limit: 10 })).length;
    // A word longer than Postgres can index is left out of the index; the rest of the memory is found.
    expect(await search('findme')).toBe(1);
    expect(await search('wa0')).toBe(1);
    expect(await search('lastword')).toBe(1);
    expect(await search('truncate')).toBe(1);
    expect(await store.count(everything(['project:huge']))).toBe(4);
  });

  it('past the 1 MB a Postgres tsvector holds, a store with a larger content limit still stores the text whole', async () => {
    const { store } = await freshStore({
      limits: { maxContentBytes: 4 * 1024 * 1024, maxNameLength: 80, maxDescriptionLength: 300 },
    });
    const words = Array.from({ length: 60_000 }, () => randomBytes(8).toString('hex')).join(' ');
    const memory = await store.create({ scope: 'project:huge', content: `opening ${words}` }, { actor: 'huge' });
    expect((await store.get(memory.id))?.content).toBe(`opening ${words}`);
    expect(
      (await store.searchText({ scopes: ['project:huge'], terms: ['opening'], limit: 5 })).map((hit) => hit.memory.id),
    ).toEqual([memory.id]);
  });
});
