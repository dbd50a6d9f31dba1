import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openEngram, type OpenedEngram } from '../../../src/node/open-engram.js';
import { startServer, type RunningServer } from '../../../src/surfaces/http/http-server.js';
import { createWorkspace, type Workspace } from '../../support/cli-harness.js';

// `engram recall --json` and `POST /v1/recall` answer one shape (src/recall/recall-result-json.ts):
// the same store and query give deep-equal documents, whatever the options. The CLI runs as users
// run it (the built binary); the service runs on loopback over the same store file.
let workspace: Workspace;
let opened: OpenedEngram;
let server: RunningServer;

const DAY = 86_400_000;

beforeAll(async () => {
  workspace = createWorkspace();
  const scope = `project:${workspace.cwd}`;
  const at = (daysAgo: number) => new Date(Date.now() - daysAgo * DAY).toISOString();
  // Imported with their dates, so the age notes differ: fresh, aging, stale.
  const lines = [
    { id: 'mem_staging', content: 'Staging runs on Kubernetes in the eu-west cluster.', type: 'project', days: 0 },
    { id: 'mem_ci', content: 'The CI pipeline for staging runs on Jenkins agents.', type: 'reference', days: 5 },
    { id: 'mem_old', content: 'Staging deploys used to need a VPN login first.', type: 'project', days: 60 },
    { id: 'mem_user', content: 'The user prefers short staging reports.', type: 'user', days: 1 },
  ].map(({ days, ...memory }) =>
    JSON.stringify({
      ...memory,
      scope,
      name: memory.id.slice(4),
      description: memory.content,
      importance: 0.5,
      createdAt: at(days),
      updatedAt: at(days),
      validFrom: at(days),
    }),
  );
  const file = join(workspace.root, 'seed.jsonl');
  writeFileSync(file, `${lines.join('\n')}\n`);
  await workspace.json(['import', file]);
  opened = await openEngram({ cwd: workspace.cwd, env: { HOME: workspace.home, ENGRAM_HOME: workspace.home } });
  server = await startServer({
    engram: opened.engram,
    host: '127.0.0.1',
    port: 0,
    maxBodyBytes: 1024 * 1024,
    version: 'test',
    mcpScopes: opened.engram.readScopes,
    log: () => undefined,
  });
});

afterAll(async () => {
  await server?.close();
  await opened?.close();
  workspace?.cleanup();
});

/**
 * Scores and recency move with the clock between the two calls (the CLI starts a process after the
 * service answered): fractions may differ by 1e-4, everything else is deep-equal. Rounding both to a
 * fixed number of decimals failed whenever a value sat on a rounding edge.
 */
function expectSameDocument(actual: unknown, expected: unknown, path = '$'): void {
  if (typeof actual === 'number' && typeof expected === 'number' && !Number.isInteger(expected)) {
    expect(Math.abs(actual - expected), `${path}: ${actual} against ${expected}`).toBeLessThan(1e-4);
    return;
  }
  if (Array.isArray(expected) && Array.isArray(actual)) {
    expect(actual.length, `${path}.length`).toBe(expected.length);
    expected.forEach((item, index) => expectSameDocument(actual[index], item, `${path}[${index}]`));
    return;
  }
  if (expected !== null && typeof expected === 'object' && actual !== null && typeof actual === 'object') {
    expect(Object.keys(actual).sort(), `${path}: keys`).toEqual(Object.keys(expected).sort());
    for (const [key, value] of Object.entries(expected)) {
      expectSameDocument((actual as Record<string, unknown>)[key], value, `${path}.${key}`);
    }
    return;
  }
  expect(actual, path).toEqual(expected);
}

async function both(cliArgs: string[], body: Record<string, unknown>): Promise<{ cli: any; rest: any }> {
  // Both answer with the memories as they were before this recall; the service reads without
  // recording an access, the CLI records one afterwards: the service asks first, so both see the same counts.
  const response = await fetch(`${server.url}/v1/recall`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ ...body, recordAccess: false }),
  });
  expect(response.status).toBe(200);
  const rest: unknown = await response.json();
  const cli = await workspace.json(['recall', ...cliArgs]);
  return { cli, rest };
}

describe('recall results as JSON: one shape for the CLI and REST', () => {
  it('answers the documented shape: query, terms, scopes, warnings, memories of {memory, score, parts, age}', async () => {
    const { cli, rest } = await both(['staging', 'cluster'], { query: 'staging cluster' });
    for (const document of [cli, rest]) {
      expect(Object.keys(document)).toEqual(['query', 'terms', 'scopes', 'warnings', 'memories']);
      expect(document.memories.length).toBeGreaterThan(0);
      for (const entry of document.memories) {
        expect(Object.keys(entry)).toEqual(['memory', 'score', 'parts', 'age']);
        expect(entry.score).toBe(entry.parts.score);
        expect(typeof entry.memory.id).toBe('string');
        expect(entry.age.state).toMatch(/^(fresh|aging|stale)$/);
      }
    }
    expectSameDocument(cli, rest);
  });

  it.each([
    ['several terms, every age', ['staging', 'runs', 'deploys', 'reports'], { query: 'staging runs deploys reports' }],
    ['a type filter', ['staging', '--type', 'reference'], { query: 'staging', types: ['reference'] }],
    [
      'top-k and min-score',
      ['staging', '--top-k', '2', '--min-score', '0'],
      { query: 'staging', topK: 2, minScore: 0 },
    ],
    ['no match', ['zeppelin', 'hangar'], { query: 'zeppelin hangar' }],
    ['invalidated memories included', ['staging', '--include-invalid'], { query: 'staging', includeInvalid: true }],
    ['what was true then', ['staging', '--as-of', '2999-01-01'], { query: 'staging', asOf: '2999-01-01' }],
    ['a scope of its own', ['staging', '--scope', 'global'], { query: 'staging', scopes: ['global'] }],
  ])('is deep-equal for %s', async (_name, cliArgs, body) => {
    const { cli, rest } = await both(cliArgs, body);
    expectSameDocument(cli, rest);
  });

  it('carries the age notes in both (a stale memory says so)', async () => {
    const { cli, rest } = await both(['VPN', 'login'], { query: 'VPN login' });
    for (const document of [cli, rest]) {
      expect(document.memories[0]).toMatchObject({
        memory: { id: 'mem_old' },
        age: { state: 'stale', days: 60, note: expect.stringContaining('out of date') },
      });
    }
  });
});
