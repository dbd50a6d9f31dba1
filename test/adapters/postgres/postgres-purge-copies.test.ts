import { constants } from 'node:fs';
import { access, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import pg from 'pg';
import { describe, expect, inject, it } from 'vitest';
import { PostgresMemoryStore } from '../../../src/adapters/postgres/postgres-memory-store.js';
import {
  buildPurgeScenario,
  CONVERSATION_ONLY,
  countNeedles,
  expectScenarioPurged,
  SECRET_WORD,
} from '../../support/purge-scenario.js';
import { dropSchema, freshSchemaUrl, withServerClient } from '../../support/postgres-schemas.js';

// Issue 26 item 11 on Postgres: the purge deletes every copy (the same places as on SQLite), then
// VACUUM FULL rewrites the tables, so the table files hold no byte of the memory or of its source
// conversation (read from the server's data folder, byte for byte). The write-ahead log may still
// hold them until its segments are recycled, and the report says so: it is never called cleared.

const serverUrl = inject('postgresUrl');
const dataDirectory = inject('postgresDataDirectory');

/** The table files (heap, TOAST and indexes) of the schema's tables, as the server has them now. */
async function tableFiles(schema: string): Promise<Buffer[]> {
  const paths = await withServerClient(serverUrl, async (client) => {
    const result = await client.query<{ path: string }>(
      `SELECT pg_relation_filepath(c.oid) AS path
         FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = $1 OR c.oid IN (
          SELECT reltoastrelid FROM pg_class t JOIN pg_namespace tn ON tn.oid = t.relnamespace WHERE tn.nspname = $1)`,
      [schema],
    );
    return result.rows.map((row) => row.path).filter(Boolean);
  });
  const files: Buffer[] = [];
  for (const path of paths) {
    for (let segment = 0; ; segment += 1) {
      const file = join(dataDirectory, segment === 0 ? path : `${path}.${segment}`);
      try {
        files.push(await readFile(file));
      } catch {
        break;
      }
    }
  }
  return files;
}

async function readable(folder: string): Promise<boolean> {
  if (!folder) return false;
  return access(join(folder, 'base'), constants.R_OK).then(
    () => true,
    () => false,
  );
}

describe.skipIf(!serverUrl)('purge on Postgres clears every place a memory came from or went to', () => {
  it('removes the copies, rewrites the table files without them, and says the WAL may keep them', async (context) => {
    const { url, schema } = freshSchemaUrl(serverUrl, 'purgecopies');
    const store = new PostgresMemoryStore({ url, onWarning: () => undefined });
    await store.open();
    try {
      const scenario = await buildPurgeScenario(store);
      const canRead = await readable(dataDirectory);
      if (canRead) {
        await withServerClient(serverUrl, (client) => client.query('CHECKPOINT').catch(() => undefined));
        const before = countNeedles(await tableFiles(schema), [CONVERSATION_ONLY]);
        expect(before[CONVERSATION_ONLY]).toBeGreaterThan(0);
      }
      const report = await scenario.engram.purge(scenario.memoryId);
      await expectScenarioPurged(store, scenario, report);
      expect(report.places.find((place) => place.place === 'freed-space')).toMatchObject({ cleared: true });
      const wal = report.places.find((place) => place.place === 'write-ahead-log');
      expect(wal).toMatchObject({ cleared: false });
      expect(wal!.reason).toMatch(/log/);
      expect(wal!.reason).toMatch(/WAL archive, replica or base backup/);
      if (!canRead) {
        context.skip(
          `the server's data folder is not readable here (${dataDirectory || 'unknown'}): the bytes were not checked`,
        );
        return;
      }
      await withServerClient(serverUrl, (client) => client.query('CHECKPOINT').catch(() => undefined));
      expect(countNeedles(await tableFiles(schema), [CONVERSATION_ONLY, SECRET_WORD])).toEqual({
        [CONVERSATION_ONLY]: 0,
        [SECRET_WORD]: 0,
      });
    } finally {
      await store.close();
      await dropSchema(serverUrl, schema);
    }
  });

  it('waits for a transaction begun before it (VACUUM FULL would keep what that one can still see), and says so when one stays open', async (context) => {
    const { url, schema } = freshSchemaUrl(serverUrl, 'purgereader');
    const store = new PostgresMemoryStore({ url, onWarning: () => undefined });
    await store.open();
    const bare = new URL(serverUrl);
    bare.searchParams.delete('schema');
    const reader = new pg.Client({ connectionString: bare.toString() });
    await reader.connect();
    try {
      // A reader whose snapshot is taken before the purge: until it ends, the deleted rows are visible
      // to it. It reads no table of the store (a lock there would make VACUUM FULL wait, another case).
      const openReader = async () => {
        await reader.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
        await reader.query('SELECT count(*) FROM pg_class');
      };
      const first = await buildPurgeScenario(store);
      await openReader();
      const ending = new Promise((resolve) => setTimeout(resolve, 1_000)).then(() => reader.query('COMMIT'));
      const report = await first.engram.purge(first.memoryId);
      await ending;
      expect(report.places.find((place) => place.place === 'freed-space')).toMatchObject({ cleared: true });
      if (await readable(dataDirectory)) {
        await withServerClient(serverUrl, (client) => client.query('CHECKPOINT').catch(() => undefined));
        expect(countNeedles(await tableFiles(schema), [CONVERSATION_ONLY, SECRET_WORD])).toEqual({
          [CONVERSATION_ONLY]: 0,
          [SECRET_WORD]: 0,
        });
      } else context.annotate?.('the data folder is not readable: the bytes were not checked');

      // One that stays open past the wait: the purge goes on and does not call the space cleared.
      await store.close();
      await dropSchema(serverUrl, schema);
      await store.open();
      const second = await buildPurgeScenario(store);
      await openReader();
      const { rows } = await reader.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      const kept = await second.engram.purge(second.memoryId);
      await reader.query('COMMIT');
      const freed = kept.places.find((place) => place.place === 'freed-space');
      expect(freed).toMatchObject({ cleared: false });
      expect(freed!.reason).toContain(`server process ${rows[0]!.pid}`);
      expect(freed!.reason).toMatch(/VACUUM FULL/);
    } finally {
      await reader.end();
      await store.close();
      await dropSchema(serverUrl, schema);
    }
  }, 60_000);
});
