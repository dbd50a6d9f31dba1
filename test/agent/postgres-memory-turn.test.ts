import pg from 'pg';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { MemoryTurn } from '../../src/agent/memory-turn.js';
import type { MemoryTurnEvent } from '../../src/agent/memory-injection.js';
import { PostgresMemoryStore } from '../../src/adapters/postgres/postgres-memory-store.js';
import { Engram } from '../../src/engram.js';
import { dropSchema, freshSchemaUrl } from '../support/postgres-schemas.js';

// The memory turn's time cap against a store that is really slow: a Postgres table another
// connection has locked, so recall's reads wait on the server until the lock goes.

const serverUrl = inject('postgresUrl');
const skipReason = inject('postgresSkipReason');

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe.skipIf(!serverUrl)(
  `MemoryTurn over a locked Postgres store${serverUrl ? '' : ` [skipped: ${skipReason}]`}`,
  () => {
    it('past the time cap the request goes on without memory and an event says so; once the lock goes, the next request has it', async () => {
      const { url, schema } = freshSchemaUrl(serverUrl, 'turn');
      const store = new PostgresMemoryStore({ url, onWarning: () => undefined });
      await store.open();
      cleanups.push(() => dropSchema(serverUrl, schema));
      cleanups.push(() => store.close());
      const engram = new Engram({
        store,
        defaultScope: 'project:github.com/acme/app',
        actor: 'test',
        onWarning: () => undefined,
      });
      await engram.remember({
        name: 'deploy-region',
        content: 'The API deploys to the Frankfurt region (eu-central-1).',
        type: 'project',
      });
      const events: MemoryTurnEvent[] = [];
      const memoryTurn = new MemoryTurn({ engram, recallTimeoutMs: 200, onEvent: (event) => events.push(event) });
      cleanups.push(() => memoryTurn.flush());

      const locker = new pg.Client({ connectionString: serverUrl });
      await locker.connect();
      cleanups.push(() => locker.end());
      await locker.query('BEGIN');
      await locker.query(`LOCK TABLE "${schema}".memories IN ACCESS EXCLUSIVE MODE`);

      const locked = await memoryTurn.beforeRequest('Where does the API deploy, Frankfurt?');
      expect(locked).toMatchObject({
        status: 'timed-out',
        staticPart: '',
        block: '',
        memories: [],
        warnings: ['recall-timed-out'],
      });
      expect(events).toEqual([{ type: 'recall-timed-out', timeoutMs: 200, kept: 0 }]);

      await locker.query('ROLLBACK');
      const next = await memoryTurn.beforeRequest('Where does the API deploy, Frankfurt?', { recallTimeoutMs: 30_000 });
      expect(next.status).toBe('injected');
      expect(next.staticPart).toContain('deploy-region');
      expect(next.block).toContain('eu-central-1');
    });
  },
);
