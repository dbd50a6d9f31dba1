import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SqliteMemoryStore } from '../../../src/adapters/sqlite/sqlite-memory-store.js';
import { Engram } from '../../../src/engram.js';
import { startServer } from '../../../src/surfaces/http/http-server.js';
import { startAnthropicMessagesServer } from '../../../src/testing/anthropic-messages-server.js';
import type { LanguageModelServer } from '../../../src/testing/loopback-model-server.js';
import { serveInProcess, type ServingInProcess } from '../../support/serve-in-process.js';
import { useTemporaryFolder } from '../../support/per-test.js';

// `engram serve` runs extraction: POST /v1/turns queues a finished turn and answers 202 at once;
// the service's worker drains the queue (offline: explicit statements only; with a model: one call).

const directory = useTemporaryFolder('engram-service-extraction-');

async function until<T>(probe: () => Promise<T | undefined>, what: string): Promise<T> {
  for (let attempt = 0; attempt < 1_000; attempt += 1) {
    const value = await probe();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`timed out waiting for ${what}`);
}

function serve(name: string, env: Record<string, string> = {}): Promise<ServingInProcess> {
  return serveInProcess({
    cwd: directory(),
    env: {
      ENGRAM_HOME: join(directory(), name),
      ENGRAM_PORT: '0',
      ENGRAM_HOST: '127.0.0.1',
      ENGRAM_PROJECT: name,
      ...env,
    },
  });
}

function postTurn(url: string, body: unknown): Promise<Response> {
  return fetch(`${url}/v1/turns`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

/** A turn's body: one user message and the assistant's answer, each as [id, text]. */
function exchange(sessionId: string, user: [string, string], assistant: [string, string]) {
  return {
    sessionId,
    messages: [
      { id: user[0], role: 'user', text: user[1] },
      { id: assistant[0], role: 'assistant', text: assistant[1] },
    ],
  };
}

async function memoryContaining(url: string, text: string): Promise<any> {
  const listed = (await (await fetch(`${url}/v1/memories`)).json()) as { memories: Array<{ content: string }> };
  return listed.memories.find((memory) => memory.content.includes(text));
}

describe('POST /v1/turns in engram serve', () => {
  it('offline: queues the turn at once and the service writes the explicit statement, saying once that it runs offline', async () => {
    const service = await serve('offline');
    try {
      const turn = exchange(
        'session-1',
        ['m1', 'Remember that the staging database listens on port 5433.'],
        ['m2', 'Noted.'],
      );
      const response = await postTurn(service.url, turn);
      expect(response.status).toBe(202);
      expect(await response.json()).toMatchObject({ status: 'queued', messages: 2 });
      const memory = await until(() => memoryContaining(service.url, '5433'), 'the explicit memory');
      expect(memory.source).toMatchObject({ sessionId: 'session-1' });

      // The same turn again is nothing new: no second memory.
      const again = await postTurn(service.url, turn);
      expect(again.status).toBe(202);
      expect(await again.json()).toMatchObject({ status: 'nothing-new' });
      const listed = (await (await fetch(`${service.url}/v1/memories`)).json()) as { memories: unknown[] };
      expect(listed.memories).toHaveLength(1);
    } finally {
      await service.stop();
    }
    expect(service.stderr().match(/offline/gi)?.length ?? 0).toBeGreaterThanOrEqual(1);
    expect(
      service
        .stderr()
        .split('\n')
        .filter((line) => /offline/i.test(line)),
    ).toHaveLength(1);
  });

  it('with a model: the worker asks it once through the real SDK and stores what it extracted', async () => {
    const model: LanguageModelServer = await startAnthropicMessagesServer();
    model.script({
      message: {
        text: JSON.stringify({
          memories: [
            {
              type: 'project',
              name: 'deploy-day',
              description: 'Deploys happen on Fridays',
              content: 'The team deploys on Fridays after the code freeze.',
              importance: 0.7,
              scope: 'project',
            },
          ],
        }),
      },
    });
    const service = await serve('with-model', { ANTHROPIC_API_KEY: 'sk-ant-test-key', ANTHROPIC_BASE_URL: model.url });
    try {
      const response = await postTurn(
        service.url,
        exchange(
          'session-2',
          ['u1', 'We deploy on Fridays after the code freeze.'],
          ['a1', 'Understood, Fridays it is.'],
        ),
      );
      expect(response.status).toBe(202);
      const memory = await until(() => memoryContaining(service.url, 'deploys on Fridays'), 'the extracted memory');
      expect(memory.name).toBe('deploy-day');
      expect(model.requests.filter((request) => request.path.endsWith('/messages'))).toHaveLength(1);
    } finally {
      await service.stop();
      await model.close();
    }
  });

  it('refuses malformed and hostile turns with 4xx and stores nothing', async () => {
    const service = await serve('hostile');
    try {
      const bad: unknown[] = [
        '{"sessionId": "s", "messages": [',
        [],
        {},
        { sessionId: 's' },
        { sessionId: '', messages: [] },
        { sessionId: 's', messages: 'hello' },
        { sessionId: 's', messages: [{ id: 'm1', role: 'system', text: 'x' }] },
        { sessionId: 's', messages: [{ id: 'm1', role: 'user', text: 42 }] },
        {
          sessionId: 's',
          messages: [
            { id: 'm1', role: 'user', text: 'a' },
            { id: 'm1', role: 'user', text: 'b' },
          ],
        },
        { sessionId: 's\u0000x', messages: [{ id: 'm1', role: 'user', text: 'Remember that NUL ids are refused.' }] },
        { sessionId: 's', messages: [], extra: true },
        { sessionId: 'x'.repeat(5_000), messages: [] },
      ];
      for (const body of bad) {
        const response = await postTurn(service.url, body);
        expect(response.status, JSON.stringify(body).slice(0, 80)).toBeGreaterThanOrEqual(400);
        expect(response.status, JSON.stringify(body).slice(0, 80)).toBeLessThan(500);
        const answer = (await response.json()) as { error: { code: string; message: string } };
        expect(answer.error.message.length).toBeGreaterThan(0);
      }
      const huge = await postTurn(service.url, {
        sessionId: 's',
        messages: [{ id: 'm1', role: 'user', text: 'y'.repeat(2 * 1024 * 1024) }],
      });
      expect(huge.status).toBe(413);
      const listed = (await (await fetch(`${service.url}/v1/memories`)).json()) as { memories: unknown[] };
      expect(listed.memories).toEqual([]);
    } finally {
      await service.stop();
    }
  });

  it('answers 503 EXTRACTION_UNAVAILABLE on a server started without an extractor', async () => {
    const store = new SqliteMemoryStore({ path: join(directory(), 'bare.db') });
    await store.open();
    const engram = new Engram({ store, defaultScope: 'project:bare' });
    const server = await startServer({
      engram,
      host: '127.0.0.1',
      port: 0,
      maxBodyBytes: 1 << 20,
      version: 'test',
      mcpScopes: ['project:bare'],
      log: () => undefined,
    });
    try {
      const response = await postTurn(server.url, {
        sessionId: 's',
        messages: [{ id: 'm1', role: 'user', text: 'hello' }],
      });
      expect(response.status).toBe(503);
      expect(await response.json()).toMatchObject({ error: { code: 'EXTRACTION_UNAVAILABLE' } });
    } finally {
      await server.close();
      await store.close();
    }
  });
});
