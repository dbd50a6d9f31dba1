/**
 * Re-measures purge completeness (issue 26 item 11) as an attacker would: a memory written by a real
 * extraction run (a loopback Anthropic server answers), so the store holds the source conversation
 * in the job, the model's answer in the job's progress, the run in the recent extractions, and a
 * change set names it; then `Engram.purge`, and the raw bytes of the store are searched for the
 * words only the conversation held and for the memory's own. On SQLite: engram.db, -wal and -shm.
 * On Postgres (when ENGRAM_TEST_POSTGRES_URL is set): the table files, read from
 * ENGRAM_TEST_POSTGRES_DATA when this process may; the server's WAL must be reported as not cleared.
 * Every place but the agent's own transcript must be cleared. Exits 1 on any failure.
 * Run: npx tsx scripts/check-purge.ts
 */
import { readdirSync, readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { AnthropicLanguageModel } from '../src/adapters/models/anthropic-language-model.js';
import { withPostgresSchema } from '../src/adapters/postgres/postgres-connection-url.js';
import { PostgresMemoryStore } from '../src/adapters/postgres/postgres-memory-store.js';
import { SqliteMemoryStore } from '../src/adapters/sqlite/sqlite-memory-store.js';
import type { MemoryStore } from '../src/contracts/memory-store.js';
import { Engram } from '../src/engram.js';
import { Extractor } from '../src/extraction/extractor.js';
import { startAnthropicMessagesServer } from '../src/testing/anthropic-messages-server.js';

const SCOPE = 'project:check-purge';
const CONVERSATION_ONLY = 'quokkasundaeplan';
const MEMORY_WORD = 'zqxheliotrope';
const failures: string[] = [];

function count(files: readonly Buffer[], needle: string): number {
  const pattern = Buffer.from(needle, 'utf8');
  let found = 0;
  for (const bytes of files)
    for (let at = bytes.indexOf(pattern); at !== -1; at = bytes.indexOf(pattern, at + 1)) found += 1;
  return found;
}

/** Writes the memory through a real extraction run, names it in a change set, purges it; returns what was left where. */
async function run(label: string, store: MemoryStore, files: () => Promise<Buffer[]>): Promise<void> {
  const server = await startAnthropicMessagesServer();
  try {
    const engram = new Engram({ store, defaultScope: SCOPE, readScopes: [SCOPE], onWarning: () => {} });
    const model = new AnthropicLanguageModel({
      model: 'claude-haiku-5-5',
      baseUrl: server.url,
      apiKey: 'sk-ant-check',
      maxRetries: 0,
    });
    const extractor = new Extractor({ engram, model, autoStart: false, onWarning: () => {} });
    const content = `Dana's badge code word is ${MEMORY_WORD}, rotated in May.`;
    server.script({
      message: {
        text: JSON.stringify([
          { type: 'project', name: 'dana-badge', description: 'Dana badge code word', content, importance: 0.7 },
        ]),
      },
    });
    await extractor.afterTurn({
      sessionId: 'check-purge-session',
      messages: [
        {
          id: 'u1',
          role: 'user',
          text: `Dana said (${CONVERSATION_ONLY}) her badge word is ${MEMORY_WORD}; keep it for the door.`,
        },
        { id: 'a1', role: 'assistant', text: 'Understood, I will keep that in mind.' },
      ],
    });
    const outcomes = await extractor.drain();
    const [memory] = await engram.list({ limit: 10 });
    if (!memory || outcomes[0]?.state !== 'done') {
      failures.push(
        `${label}: the extraction run wrote no memory (${outcomes.map((outcome) => outcome.state).join(', ')})`,
      );
      return;
    }
    await store.checkpoints!.set('change-set:cs_checkpurge000000000000000:0', JSON.stringify([memory.id]));
    const before = await files();
    const report = await engram.purge(memory.id);
    const after = await files();
    const left = report.places.filter((place) => !place.cleared).map((place) => place.place);
    const expectedLeft = label === 'postgres' ? ['write-ahead-log', 'source-transcript'] : ['source-transcript'];
    console.log(
      `${label}: ${report.places.map((place) => `${place.place} ${place.removed}${place.cleared ? '' : ' (not cleared)'}`).join(', ')}`,
    );
    if (left.sort().join() !== [...expectedLeft].sort().join())
      failures.push(`${label}: places not cleared ${JSON.stringify(left)}, expected ${JSON.stringify(expectedLeft)}`);
    if (report.copiesCleared) failures.push(`${label}: copiesCleared is true while the transcript was not cleared`);
    if (before.length === 0) console.log(`${label}: the store's files are not readable here; bytes not checked`);
    else {
      if (count(before, CONVERSATION_ONLY) === 0)
        failures.push(`${label}: the conversation was never in the files (nothing measured)`);
      for (const needle of [CONVERSATION_ONLY, MEMORY_WORD]) {
        const found = count(after, needle);
        console.log(`${label}: copies of "${needle}" in the files after the purge: ${found}`);
        if (found > 0)
          failures.push(`${label}: ${found} cop${found === 1 ? 'y' : 'ies'} of "${needle}" left in the files`);
      }
    }
  } finally {
    await server.close();
  }
}

const folder = mkdtempSync(join(tmpdir(), 'engram-check-purge-'));
try {
  const sqlite = new SqliteMemoryStore({ path: join(folder, 'engram.db') });
  await sqlite.open();
  await run('sqlite', sqlite, async () => readdirSync(folder).map((name) => readFileSync(join(folder, name))));
  await sqlite.close();

  const serverUrl = process.env.ENGRAM_TEST_POSTGRES_URL;
  const data = process.env.ENGRAM_TEST_POSTGRES_DATA;
  if (serverUrl) {
    const schema = `check_purge_${process.pid}`;
    const admin = new pg.Client({ connectionString: serverUrl });
    await admin.connect();
    const store = new PostgresMemoryStore({ url: withPostgresSchema(serverUrl, schema), onWarning: () => {} });
    await store.open();
    try {
      await run('postgres', store, async () => {
        if (!data) return [];
        await admin.query('CHECKPOINT').catch(() => undefined);
        const paths = await admin.query<{ path: string }>(
          `SELECT pg_relation_filepath(c.oid) AS path FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = $1 OR c.oid IN (SELECT reltoastrelid FROM pg_class t JOIN pg_namespace tn ON tn.oid = t.relnamespace WHERE tn.nspname = $1)`,
          [schema],
        );
        try {
          return paths.rows.filter((row) => row.path).map((row) => readFileSync(join(data, row.path)));
        } catch {
          return [];
        }
      });
    } finally {
      await store.close();
      await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await admin.end();
    }
  } else console.log('postgres: ENGRAM_TEST_POSTGRES_URL is unset; checked SQLite only');
} finally {
  rmSync(folder, { recursive: true, force: true });
}
for (const failure of failures) console.log(`  FAILED: ${failure}`);
process.exitCode = failures.length > 0 ? 1 : 0;
