import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { warningNotes } from '../../../src/recall/warning-notes.js';
import { startEmbeddingsServer, type EmbeddingsServer } from '../../../src/testing/index.js';
import { createWorkspace, embedderEnv, type Workspace } from '../../support/cli-harness.js';

// Without an embedder, full-text recall is the user's configuration: results keep the code
// `vector-search-unavailable` (STYLE.md), human text does not warn of it, `engram status` says
// "vector search: off". With an embedder configured, a degraded vector side is said on stderr.
let workspace: Workspace;
let server: EmbeddingsServer;
let embedding: Record<string, string>;
/** An embedder configured at a port nothing listens on: every embedding call fails at once. */
let broken: Record<string, string>;

beforeAll(async () => {
  workspace = createWorkspace();
  server = await startEmbeddingsServer({ dimensions: 16 });
  embedding = embedderEnv(server.baseUrl);
  broken = { ...embedding, ENGRAM_EMBEDDING_BASE_URL: 'http://127.0.0.1:9/v1' };
});

afterAll(async () => {
  await server.close();
  workspace.cleanup();
});

describe('warningNotes (the rule every human surface applies)', () => {
  it('leaves out vector-search-unavailable only when no embedder is configured', () => {
    expect(warningNotes(['vector-search-unavailable'], { embedderConfigured: false })).toEqual([]);
    expect(warningNotes(['vector-search-unavailable'], { embedderConfigured: true })).toEqual([
      expect.stringMatching(/^vector-search-unavailable: an embedder is configured but the store keeps no vectors/),
    ]);
  });

  it('says every other code whatever the configuration, once each, unknown codes as they are', () => {
    const codes = ['vector-search-unavailable', 'embedding-failed', 'embedding-failed', 'llm-selection-timeout'];
    const notes = warningNotes(codes, { embedderConfigured: false });
    expect(notes).toHaveLength(2);
    expect(notes[0]).toMatch(/^embedding-failed: /);
    expect(notes[1]).toBe('llm-selection-timeout');
    expect(warningNotes(['vectors-missing', 'vector-space-differs'], { embedderConfigured: true })).toEqual([
      expect.stringContaining('engram reindex'),
      expect.stringContaining('engram reindex'),
    ]);
  });
});

describe('the CLI without an embedder', () => {
  it('recalls and remembers without a warning on stderr; the JSON keeps the code', async () => {
    const remembered = await workspace.run(['remember', 'The staging cluster runs in eu-west.']);
    expect(remembered.code).toBe(0);
    expect(remembered.stderr).toBe('');
    for (const query of [
      ['staging', 'cluster'],
      ['nothing', 'matches', 'zeppelin'],
    ]) {
      const human = await workspace.run(['recall', ...query]);
      expect(human.code).toBe(0);
      expect(human.stderr).toBe('');
      expect(human.stdout).not.toContain('vector');
      expect((await workspace.json(['recall', ...query])).warnings).toEqual(['vector-search-unavailable']);
    }
  });

  it('status says vector search is off because no embedder is configured', async () => {
    const status = await workspace.run(['status']);
    expect(status.stdout).toMatch(/vector search\s+off \(no embedder configured/);
    expect((await workspace.json(['status'])).vectorSearch).toMatch(/^off /);
  });
});

describe('the CLI with an embedder configured', () => {
  it('says nothing when vector search works, and status says it is on', async () => {
    expect((await workspace.run(['reindex'], { env: embedding })).code).toBe(0);
    const human = await workspace.run(['recall', 'staging', 'cluster'], { env: embedding });
    expect(human.code).toBe(0);
    expect(human.stderr).toBe('');
    expect((await workspace.run(['status'], { env: embedding })).stdout).toMatch(/vector search\s+on \(hashed-words\)/);
  });

  it('warns on stderr when the embedder fails, on recall and on remember, never on stdout', async () => {
    const recall = await workspace.run(['recall', 'staging', 'cluster'], { env: broken });
    expect(recall.code).toBe(0);
    expect(recall.stderr).toMatch(/^engram: warning: embedding-failed: /m);
    expect(recall.stdout).not.toContain('warning');
    const json = await workspace.run(['recall', 'staging', 'cluster', '--json'], { env: broken });
    expect(json.json().warnings).toContain('embedding-failed');
    expect(json.stderr).not.toContain('warning');

    const remembered = await workspace.run(['remember', 'Deploys are frozen on Fridays.'], { env: broken });
    expect(remembered.code).toBe(0);
    expect(remembered.stderr).toMatch(/^engram: warning: embedding-failed: /m);
  });

  it('warns when the stored vectors come from another model', async () => {
    const other = { ...embedding, ENGRAM_EMBEDDING_MODEL: 'other-model' };
    const recall = await workspace.run(['recall', 'staging', 'cluster'], { env: other });
    expect(recall.code).toBe(0);
    expect(recall.stderr).toMatch(/engram: warning: vector-space-differs: .*engram reindex/);
  });
});
