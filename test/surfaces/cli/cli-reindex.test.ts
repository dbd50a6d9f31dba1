import { spawn, spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmbeddingsServer, type EmbeddingsServer } from '../../../src/testing/index.js';
import { ENGRAM_BINARY, createWorkspace, embedderEnv, type Workspace } from '../../support/cli-harness.js';

let workspace: Workspace;
let server: EmbeddingsServer;
let embedding: Record<string, string>;

beforeAll(async () => {
  workspace = createWorkspace();
  server = await startEmbeddingsServer({ dimensions: 24, synonyms: { automobile: 'car', sedan: 'car' } });
  embedding = embedderEnv(server.baseUrl);
});

afterAll(async () => {
  await server.close();
  workspace.cleanup();
});

describe('engram reindex and hybrid recall from the command line', () => {
  it('without an embedder sends nothing, recalls by full-text, and reindex says what to configure', async () => {
    await workspace.json(['remember', 'The user drives an automobile to the office.']);
    await workspace.json(['remember', 'Integration tests use the real database, no mocks.']);
    await workspace.json(['remember', 'Deploys go through ArgoCD with a manual approval step.']);
    const recall = await workspace.json(['recall', 'which car do I have?']);
    expect(recall.memories).toEqual([]);
    expect(recall.warnings).toEqual(['vector-search-unavailable']);
    const refused = await workspace.json(['reindex'], 2);
    expect(refused.error.code).toBe('CONFIG_INVALID');
    expect(refused.error.message).toContain('embedding.provider');
    expect(server.requests).toHaveLength(0);
  });

  it('reindex backfills every memory, records model and length, and reports counts in --json', async () => {
    const report = await workspace.json(['reindex'], 0, { env: embedding });
    expect(report).toMatchObject({
      model: 'hashed-words',
      dimensions: 24,
      total: 3,
      embedded: 3,
      skipped: 0,
      spaceChanged: false,
      vectors: { stored: 3, missing: 0 },
    });
    expect(server.requests.every((request) => request.headers.authorization === 'Bearer sk-cli-test')).toBe(true);
    const again = await workspace.json(['reindex'], 0, { env: embedding });
    expect(again).toMatchObject({ total: 0, embedded: 0, vectors: { stored: 3, missing: 0 } });
    const text = await workspace.run(['reindex'], { env: embedding });
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/model\s+hashed-words \(24 dimensions\)/);
    // Not a terminal: no progress bar on stderr.
    expect(text.stderr).toBe('');
  });

  it('remember computes the vector at once, and recall --explain shows the text and vector parts', async () => {
    await workspace.json(['remember', 'The user parks the sedan in garage B.'], 0, { env: embedding });
    expect(await workspace.json(['reindex'], 0, { env: embedding })).toMatchObject({
      total: 0,
      vectors: { stored: 4, missing: 0 },
    });
    const recall = await workspace.json(['recall', 'which car do I have?', '--explain'], 0, { env: embedding });
    expect(recall.warnings).toEqual([]);
    const contents = recall.memories.map((entry: { memory: { content: string } }) => entry.memory.content);
    expect(contents).toContain('The user drives an automobile to the office.');
    const automobile = recall.memories.find((entry: { memory: { content: string } }) =>
      entry.memory.content.includes('automobile'),
    );
    expect(automobile.parts.vector.rank).toBeGreaterThanOrEqual(1);
    expect(automobile.parts.text).toBeUndefined();
    const table = await workspace.run(['recall', 'which car do I have?', '--explain'], { env: embedding });
    expect(table.stdout).toMatch(/TEXT\s+VECTOR/);
    expect(table.stdout).toContain(
      "relevance = full text (TEXT) × 0.85 + the vector similarity (VECTOR) scaled from the query's weakest to its strongest vector hit × 0.15 (embedding.fusionWeight), ÷ the best candidate's",
    );
  });

  it('a changed model re-embeds everything instead of mixing spaces', async () => {
    const report = await workspace.json(['reindex'], 0, {
      env: { ...embedding, ENGRAM_EMBEDDING_MODEL: 'hashed-words-v2' },
    });
    expect(report).toMatchObject({
      model: 'hashed-words-v2',
      spaceChanged: true,
      dropped: 4,
      embedded: 4,
      previousSpace: { model: 'hashed-words', dimensions: 24 },
    });
    const stale = await workspace.json(['recall', 'which car do I have?'], 0, { env: embedding });
    expect(stale.warnings).toEqual(['vector-space-differs']);
  });

  it('refuses malformed flags and settings with exit code 2, and an unreachable embedder with exit code 3, changing nothing', async () => {
    for (const args of [
      ['reindex', '--batch-size', '0'],
      ['reindex', '--batch-size', 'lots'],
      ['reindex', 'extra'],
    ]) {
      const result = await workspace.json(args, 2, { env: embedding });
      expect(result.error.code, args.join(' ')).toBe('INVALID_INPUT');
    }
    const configurations: Array<Record<string, string | undefined>> = [
      { ...embedding, ENGRAM_EMBEDDING_PROVIDER: 'mystery' },
      { ...embedding, ENGRAM_EMBEDDING_DIMENSIONS: 'many' },
      { ...embedding, ENGRAM_EMBEDDING_BASE_URL: 'not a url' },
      { ...embedding, ENGRAM_EMBEDDING_BASE_URL: undefined },
    ];
    for (const env of configurations) {
      const result = await workspace.json(['list'], 2, { env });
      expect(result.error.code, JSON.stringify(env)).toBe('CONFIG_INVALID');
    }
    const before = await workspace.json(['reindex'], 0, {
      env: { ...embedding, ENGRAM_EMBEDDING_MODEL: 'hashed-words-v2' },
    });
    const down = await workspace.json(['reindex'], 3, {
      env: {
        ...embedding,
        ENGRAM_EMBEDDING_MODEL: 'hashed-words-v3',
        ENGRAM_EMBEDDING_BASE_URL: 'http://127.0.0.1:9/v1',
        ENGRAM_EMBEDDING_TIMEOUT_MS: '2000',
      },
    });
    expect(down.error.code).toBe('EMBEDDING_FAILED');
    expect(down.error.message).toContain('could not be reached');
    const after = await workspace.json(['reindex'], 0, {
      env: { ...embedding, ENGRAM_EMBEDDING_MODEL: 'hashed-words-v2' },
    });
    expect(after).toMatchObject({ spaceChanged: false, total: 0, vectors: before.vectors });
  });
});

const hasScript = spawnSync('script', ['--version'], { stdio: 'ignore' }).status === 0;

describe.skipIf(!hasScript)('engram reindex on a terminal (skipped: util-linux "script" is not installed)', () => {
  it('draws a progress bar on stderr', async () => {
    const quote = (text: string): string => `'${text.replace(/'/g, `'\\''`)}'`;
    const command = [process.execPath, ENGRAM_BINARY, 'reindex'].map(quote).join(' ');
    const child = spawn('script', ['-qec', command, '/dev/null'], {
      cwd: workspace.cwd,
      env: {
        PATH: process.env.PATH,
        HOME: workspace.home,
        ENGRAM_HOME: workspace.home,
        TERM: 'xterm',
        ...embedding,
        ENGRAM_EMBEDDING_MODEL: 'hashed-words-v5',
        ENGRAM_EMBEDDING_BATCH_SIZE: '2',
      },
    });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    const code = await new Promise((resolve) => child.on('close', resolve));
    expect(code).toBe(0);
    expect(output).toMatch(/embedding \[#{30}\] 4\/4/);
    expect(output).toMatch(/embedding \[\.{30}\] 0\/4/);
  });
});
