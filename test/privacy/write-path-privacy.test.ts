import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OpenAiCompatibleEmbedder } from '../../src/adapters/embedding/openai-compatible-embedder.js';
import { SqliteMemoryStore } from '../../src/adapters/sqlite/sqlite-memory-store.js';
import { sanitizeMemoryFields } from '../../src/privacy/memory-privacy.js';
import { DEFAULT_SETTINGS } from '../../src/kernel/settings.js';
import { Engram } from '../../src/engram.js';
import { MemoryTool } from '../../src/memory-tool/memory-tool.js';
import { applyExplicitMemory } from '../../src/remember/explicit-memory-writes.js';
import { startServer, type RunningServer } from '../../src/surfaces/http/http-server.js';
import { startEmbeddingsServer, type EmbeddingsServer } from '../../src/testing/openai-compatible-embeddings-server.js';
import { createWorkspace, type Workspace } from '../support/cli-harness.js';
import { SECRET_CASES } from '../fixtures/secrets-corpus.js';
import { closeSqlite, openSqlite } from '../../src/adapters/sqlite/sqlite-driver.js';

/**
 * SPEC §3, "never stored": every secret of the corpus is fed through every write path — the library
 * (save, update, import, with an embedder), explicit statements, the memory tool, `engram remember`,
 * `engram import` (JSON Lines and a Claude Code memory directory), REST and MCP — and then the store
 * is read directly: every row of every table (memories, history before/after, full-text index) and
 * the raw bytes of the database files. None of the secrets may be anywhere.
 */

const SECRETS = [...new Set(SECRET_CASES.flatMap((entry) => entry.secrets))];
// The full-text index keeps words lowercased and split at punctuation: look for those pieces too.
const INDEX_PIECES = [
  ...new Set(
    SECRETS.flatMap((secret) => secret.toLowerCase().match(/[a-z0-9]{16,}/g) ?? []).map((piece) => piece.slice(0, 16)),
  ),
];
const ONE_LINE = SECRET_CASES.filter((entry) => !entry.text.includes('\n') && entry.text.length <= 280);
const DOCUMENT = SECRET_CASES.map((entry) => entry.text).join('\n\n');

function leaked(text: string): string[] {
  const lower = text.toLowerCase();
  return [
    ...SECRETS.filter((secret) => text.includes(secret)),
    ...INDEX_PIECES.filter((piece) => lower.includes(piece)),
  ];
}

/** Every row of every table of a SQLite file, as text, and the raw bytes of the file and its WAL. */
function readStoreFiles(path: string): { rows: string; bytes: string; tables: Record<string, number> } {
  const database = openSqlite(path, { readOnly: true });
  const tables: Record<string, number> = {};
  let rows = '';
  try {
    const names = database.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as Array<{
      name: string;
    }>;
    for (const { name } of names) {
      const all = database.prepare(`SELECT * FROM "${name.replace(/"/g, '""')}"`).all() as Array<
        Record<string, unknown>
      >;
      tables[name] = all.length;
      for (const row of all) {
        for (const value of Object.values(row))
          rows += `${Buffer.isBuffer(value) ? value.toString('latin1') : String(value)}\n`;
      }
    }
  } finally {
    closeSqlite(database);
  }
  let bytes = '';
  for (const suffix of ['', '-wal', '-journal']) {
    try {
      bytes += readFileSync(`${path}${suffix}`).toString('latin1');
    } catch {
      // No such file: nothing to read.
    }
  }
  return { rows, bytes, tables };
}

/** Checks a store after the writes: something was stored (redacted), the history is there, and no secret is anywhere. */
function expectNoSecrets(path: string, minimumMemories: number): void {
  const { rows, bytes, tables } = readStoreFiles(path);
  expect(tables.memories).toBeGreaterThanOrEqual(minimumMemories);
  expect(tables.memory_history).toBeGreaterThanOrEqual(minimumMemories);
  expect(rows).toContain('[REDACTED:');
  expect(leaked(rows)).toEqual([]);
  expect(leaked(bytes)).toEqual([]);
}

function filesUnder(directory: string): string[] {
  return readdirSync(directory).flatMap((entry) => {
    const path = join(directory, entry);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

let directory: string;

beforeAll(() => {
  directory = mkdtempSync(join(tmpdir(), 'engram-privacy-'));
});

afterAll(() => {
  rmSync(directory, { recursive: true, force: true });
});

describe('the library, explicit statements and the memory tool', () => {
  const path = (): string => join(directory, 'library.db');
  let store: SqliteMemoryStore;
  let engram: Engram;
  let embeddings: EmbeddingsServer;
  const warnings: string[] = [];

  beforeAll(async () => {
    embeddings = await startEmbeddingsServer({ dimensions: 32 });
    store = new SqliteMemoryStore({ path: path() });
    await store.open();
    const embedder = new OpenAiCompatibleEmbedder({
      baseUrl: embeddings.baseUrl,
      model: 'hashed-words',
      maxRetries: 0,
    });
    engram = new Engram({
      store,
      defaultScope: 'project:github.com/acme/app',
      embedder,
      onWarning: (warning) => warnings.push(warning),
    });
  });

  afterAll(async () => {
    await store?.close();
    await embeddings?.close();
  });

  it('save: every case, with the kinds reported and never the secret', async () => {
    for (const entry of SECRET_CASES) {
      const result = await engram.save({ content: entry.text, type: 'reference' }, { dedupe: false });
      expect(result.warnings).toContain('secrets-redacted');
      expect(result.redacted).toContain(entry.kind);
      expect(leaked(JSON.stringify(result))).toEqual([]);
    }
    // Secrets in the name and the description are redacted too; the name stays a slug.
    const named = await engram.save({
      content: 'The release bot token lives in the vault.',
      name: SECRET_CASES.find((entry) => entry.kind === 'github-token')!.secrets[0]!,
      description: ONE_LINE[0]!.text,
    });
    expect(named.memory.name).toBe('redacted-github-token');
    expect(named.memory.description).toContain('[REDACTED:anthropic-api-key]');
    expect(leaked(warnings.join('\n'))).toEqual([]);
  });

  it('a name derived from unredacted text loses the secret it holds in lowercase', async () => {
    const token = SECRET_CASES.find(
      (entry) => entry.kind === 'credential-assignment' && entry.text.startsWith('The deploy token'),
    )!.secrets[0]!;
    const aws = SECRET_CASES.find((entry) => entry.kind === 'aws-access-key-id')!.secrets[0]!;
    const saved = await engram.save({
      content: `The deploy token is ${token}; the CI key is ${aws}.`,
      name: `deploy-token-is-${token.slice(0, 20)}-ci-key-${aws.toLowerCase()}`,
    });
    expect(saved.memory.name).toBe('deploy-token-is-redacted-ci-key-redacted');
    expect(saved.warnings).toContain('secrets-redacted');
  });

  it('update: a clean memory edited to hold every secret keeps none, in the row or its history', async () => {
    const memory = await engram.remember({ content: 'The deploy checklist lives in the wiki.' });
    const updated = await engram.update(memory.id, {
      content: DOCUMENT.slice(0, 60_000),
      description: ONE_LINE[1]!.text,
    });
    expect(leaked(JSON.stringify(updated))).toEqual([]);
    const history = await engram.history(memory.id);
    expect(history.at(-1)!.after!.content).toContain('[REDACTED:');
    expect(warnings.some((warning) => warning.startsWith('secrets-redacted:'))).toBe(true);
  });

  it('importMemories: memories that carry ids, replacing existing ones too', async () => {
    const inputs = SECRET_CASES.map((entry, index) => ({
      id: `mem_import_${index}`,
      scope: 'project:github.com/acme/app',
      content: entry.text,
      description: 'Imported note',
    }));
    const report = await engram.importMemories(inputs);
    expect(report.created).toBe(SECRET_CASES.length);
    expect(new Set(report.redacted)).toEqual(new Set(SECRET_CASES.map((entry) => entry.kind)));
    const replaced = await engram.importMemories(
      inputs.map((input) => ({ ...input, content: `${input.content} (v2)` })),
      { onExisting: 'replace' },
    );
    expect(replaced.replaced).toBe(SECRET_CASES.length);
  });

  it('explicit statements: "remember that …" with a secret in it', async () => {
    for (const entry of ONE_LINE) {
      // Its own scope, so the statement is written rather than merged into the copy saved above.
      const result = await applyExplicitMemory(
        engram,
        `Remember that we use this: ${entry.text.replace(/[.!?]$/, '')}.`,
        { scope: 'session:explicit' },
      );
      expect(
        result.outcomes.map((outcome) => outcome.action),
        entry.text.slice(0, 50),
      ).toEqual(['created']);
      expect(result.outcomes[0], entry.text.slice(0, 50)).toMatchObject({
        warnings: expect.arrayContaining(['secrets-redacted']),
      });
    }
  });

  it('the memory tool: create, str_replace and insert with secrets', async () => {
    const tool = new MemoryTool({ engram });
    const created = await tool.run({
      command: 'create',
      path: '/memories/credentials-note.md',
      file_text: `${ONE_LINE[2]!.text}\n\nKeys are kept in the vault.\n`,
    });
    expect(created.isError, created.content).toBe(false);
    const replaced = await tool.run({
      command: 'str_replace',
      path: '/memories/credentials-note.md',
      old_str: 'kept in the vault',
      new_str: ONE_LINE[3]!.text,
    });
    expect(replaced.isError, replaced.content).toBe(false);
    const before = await tool.run({ command: 'view', path: '/memories/credentials-note.md' });
    const lines = before.content.split('\n').filter((line) => /^\s*\d+\t/.test(line)).length;
    const inserted = await tool.run({
      command: 'insert',
      path: '/memories/credentials-note.md',
      insert_line: lines,
      insert_text: `${ONE_LINE[4]!.text}\n`,
    });
    expect(inserted.isError, inserted.content).toBe(false);
    const view = await tool.run({ command: 'view', path: '/memories/credentials-note.md' });
    expect(view.content).toContain('[REDACTED:');
    expect(leaked(view.content)).toEqual([]);
  });

  it('no secret reached the embeddings service, and none is anywhere in the store file', async () => {
    expect(embeddings.requests.length).toBeGreaterThan(0);
    expect(leaked(JSON.stringify(embeddings.requests.map((request) => request.body)))).toEqual([]);
    await store.close();
    expectNoSecrets(path(), SECRET_CASES.length * 2);
    await store.open();
  });
});

describe('long fields allowed by raised limits', () => {
  it('raising memory.maxDescriptionLength and maxNameLength never switches redaction off', async () => {
    const limits = { maxContentBytes: 64 * 1024, maxNameLength: 5_000, maxDescriptionLength: 50_000 };
    const settings = { ...DEFAULT_SETTINGS, memory: limits };
    const path = join(directory, 'long-fields.db');
    const store = new SqliteMemoryStore({ path, limits });
    await store.open();
    try {
      const engram = new Engram({ store, settings, defaultScope: 'project:github.com/acme/app' });
      const anthropic = SECRET_CASES.find((entry) => entry.kind === 'anthropic-api-key')!.secrets[0]!;
      const openrouter = SECRET_CASES.find((entry) => entry.kind === 'openrouter-api-key')!.secrets[0]!;
      const description = `${'Notes on the rollout plan. '.repeat(800)}The eval key is ${anthropic}.`;
      const name = `${'rollout-notes-'.repeat(150)}${openrouter}`;
      expect(description.length).toBeGreaterThan(20_000);
      expect(name.length).toBeGreaterThan(2_000);
      const saved = await engram.save(
        { content: 'Rollout notes, with the keys it used.', description, name },
        { dedupe: false },
      );
      expect(saved.redacted).toEqual(expect.arrayContaining(['anthropic-api-key', 'openrouter-api-key']));
      expect(saved.memory.description).toContain('[REDACTED:anthropic-api-key]');
      expect(saved.memory.name).toMatch(/redacted-openrouter-api-key$/);
      const updated = await engram.update(saved.memory.id, { description: `${description} Also ${openrouter}.` });
      expect(updated.description).not.toContain(openrouter);
    } finally {
      await store.close();
    }
    const { rows, bytes } = readStoreFiles(path);
    expect(leaked(rows)).toEqual([]);
    expect(leaked(bytes)).toEqual([]);
  });

  it('a field is left unscanned only past a limit the caller gives, which its validation then refuses', () => {
    const secret = SECRET_CASES.find((entry) => entry.kind === 'github-token')!.secrets[0]!;
    const long = `${'a'.repeat(30_000)} ${secret}`;
    expect(sanitizeMemoryFields({ description: long }).value.description).not.toContain(secret);
    expect(
      sanitizeMemoryFields({ description: long }, { maxDescriptionChars: 50_000 }).value.description,
    ).not.toContain(secret);
    // Past the caller's own limit it is left as given: the caller's validation refuses it (see the store test above).
    expect(sanitizeMemoryFields({ description: long }, { maxDescriptionChars: 300 }).value.description).toBe(long);
  });
});

describe('the CLI: engram remember and engram import', () => {
  let workspace: Workspace;
  const outputs: string[] = [];

  beforeAll(() => {
    workspace = createWorkspace();
  });

  afterAll(() => {
    workspace?.cleanup();
  });

  it('engram remember --stdin with every secret, and with secrets in arguments and options', async () => {
    const result = await workspace.json<{ warnings: string[]; redacted: string[]; memory: { content: string } }>(
      ['remember', '--stdin', '--no-dedupe', '--scope', 'global'],
      0,
      { input: DOCUMENT },
    );
    expect(result.warnings).toContain('secrets-redacted');
    expect(result.memory.content).toContain('[REDACTED:private-key]');
    outputs.push(JSON.stringify(result));
    for (const entry of ONE_LINE.slice(0, 6)) {
      const run = await workspace.run([
        'remember',
        entry.text,
        '--description',
        entry.text.slice(0, 200),
        '--scope',
        'global',
        '--no-dedupe',
      ]);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stderr).toContain('secrets-redacted');
      outputs.push(run.stdout, run.stderr);
    }
  });

  it('engram import of a JSON Lines file and of a Claude Code memory directory', async () => {
    const jsonl = join(workspace.root, 'memories.jsonl');
    writeFileSync(
      jsonl,
      `${SECRET_CASES.map((entry, index) => JSON.stringify({ kind: 'memory', id: `mem_jsonl_${index}`, scope: 'global', content: entry.text })).join('\n')}\n`,
    );
    const imported = await workspace.json<{ created: number }>(['import', jsonl, '--scope', 'global']);
    expect(imported.created).toBe(SECRET_CASES.length);
    outputs.push(JSON.stringify(imported));

    const claude = join(workspace.root, 'claude-memory');
    mkdirSync(claude);
    ONE_LINE.slice(0, 10).forEach((entry, index) => {
      writeFileSync(
        join(claude, `note_${index}.md`),
        // Worded apart from the memories remembered above: a directory import matches a file to a memory with the same content.
        `---\nname: note-${index}\ndescription: ${JSON.stringify(entry.text.slice(0, 200))}\ntype: reference\n---\n\nFrom the team notes: ${entry.text}\n`,
      );
    });
    writeFileSync(
      join(claude, 'MEMORY.md'),
      ONE_LINE.slice(0, 10)
        .map((_, index) => `- [note-${index}](note_${index}.md)`)
        .join('\n'),
    );
    const fromDirectory = await workspace.json<{ created: number }>(['import', claude, '--scope', 'global']);
    expect(fromDirectory.created).toBe(10);
    outputs.push(JSON.stringify(fromDirectory));
  });

  it('left no secret in the store, in any file under ENGRAM_HOME, or in what the CLI printed', () => {
    expectNoSecrets(join(workspace.home, 'engram.db'), SECRET_CASES.length + 10);
    for (const file of filesUnder(workspace.home))
      expect(leaked(readFileSync(file).toString('latin1')), file).toEqual([]);
    expect(leaked(outputs.join('\n'))).toEqual([]);
  });
});

describe('REST and MCP', () => {
  const path = (): string => join(directory, 'service.db');
  let store: SqliteMemoryStore;
  let server: RunningServer;
  let client: Client;
  const logged: string[] = [];
  const answers: string[] = [];

  beforeAll(async () => {
    store = new SqliteMemoryStore({ path: path() });
    await store.open();
    const engram = new Engram({
      store,
      defaultScope: 'project:github.com/acme/app',
      onWarning: (warning) => logged.push(warning),
    });
    server = await startServer({
      engram,
      host: '127.0.0.1',
      port: 0,
      maxBodyBytes: 1024 * 1024,
      version: 'privacy-test',
      mcpScopes: ['project:github.com/acme/app', 'global'],
      log: (message) => logged.push(message),
    });
    client = new Client({ name: 'privacy-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`)));
  });

  afterAll(async () => {
    await client?.close();
    await server?.close();
    await store?.close();
  });

  async function api(
    method: string,
    route: string,
    body: unknown,
  ): Promise<{ status: number; body: any; text: string }> {
    const response = await fetch(`${server.url}${route}`, {
      method,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const text = await response.text();
    answers.push(text);
    return { status: response.status, body: JSON.parse(text), text };
  }

  it('POST /v1/memories and PATCH /v1/memories/:id', async () => {
    for (const entry of SECRET_CASES) {
      const created = await api('POST', '/v1/memories', { content: entry.text, dedupe: false });
      expect(created.status, created.text).toBe(201);
    }
    const plain = await api('POST', '/v1/memories', { content: 'The on-call rota is in PagerDuty.' });
    const patched = await api('PATCH', `/v1/memories/${plain.body.memory.id}`, {
      content: DOCUMENT.slice(0, 60_000),
      description: ONE_LINE[5]!.text,
    });
    expect(patched.status, patched.text).toBe(200);
  });

  it('MCP memory_save and memory_update', async () => {
    for (const entry of SECRET_CASES) {
      // In global, so each is written rather than merged into its REST twin in the project scope.
      const result = (await client.callTool({
        name: 'memory_save',
        arguments: { content: entry.text, scope: 'global' },
      })) as CallToolResult;
      expect(result.isError, JSON.stringify(result)).toBeFalsy();
      answers.push(JSON.stringify(result));
    }
    const saved = (await client.callTool({
      name: 'memory_save',
      arguments: { content: 'Staging deploys go through Argo CD.' },
    })) as CallToolResult;
    const id = (saved.structuredContent as { memory: { id: string } }).memory.id;
    const updated = (await client.callTool({
      name: 'memory_update',
      arguments: { id, content: DOCUMENT.slice(0, 60_000), description: ONE_LINE[6]!.text },
    })) as CallToolResult;
    expect(updated.isError, JSON.stringify(updated)).toBeFalsy();
    answers.push(JSON.stringify(updated));
  });

  it('left no secret in the store, in the answers or in the logs', async () => {
    expect(leaked(answers.join('\n'))).toEqual([]);
    expect(leaked(logged.join('\n'))).toEqual([]);
    await client.close();
    await server.close();
    await store.close();
    expectNoSecrets(path(), SECRET_CASES.length * 2 + 2);
  });
});
