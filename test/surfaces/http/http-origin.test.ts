import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXTRACTION_QUEUE } from '../../../src/extraction/extraction-job-payload.js';
import {
  startViewerFixture,
  VIEWER_PROJECT,
  type ViewerFixture,
  fixtureSnapshot,
} from '../../support/viewer-support.js';

// Issue 17 item 5: every state-changing request on every route refuses an Origin or Sec-Fetch-Site
// that is not the service's own; one check in the request pipeline, tested here route by route.

let fixture: ViewerFixture;
let memoryId: string;
let archivedId: string;
let changeId: string;
let failedJobId: string;

const snapshot = (): Promise<string> => fixtureSnapshot(fixture);

beforeAll(async () => {
  fixture = await startViewerFixture();
  const { engram, store } = fixture;
  memoryId = (await engram.save({ content: 'The staging cluster deploys on Fridays.', type: 'project' })).memory.id;
  archivedId = (await engram.save({ content: 'An archived note about the old CI.', type: 'project' })).memory.id;
  await engram.forget(archivedId);
  changeId = (await engram.history(memoryId))[0]!.id;
  const { job } = await store.jobs.enqueue({ queue: EXTRACTION_QUEUE, key: 'turn-1', payload: {}, maxAttempts: 1 });
  await store.jobs.claim({ queue: EXTRACTION_QUEUE, worker: 'w', leaseMs: 60_000 });
  await store.jobs.fail(job.id, 'w', { error: 'model timed out' });
  failedJobId = job.id;
});

afterAll(async () => {
  await fixture?.close();
});

/** Every state-changing route, with a body a same-origin client could send. */
function stateChangingRequests(): Array<{ method: string; path: string; body?: unknown }> {
  return [
    { method: 'POST', path: '/v1/memories', body: { content: 'planted by another page' } },
    { method: 'PATCH', path: `/v1/memories/${memoryId}`, body: { content: 'changed by another page' } },
    { method: 'DELETE', path: `/v1/memories/${memoryId}` },
    { method: 'DELETE', path: `/v1/memories/${memoryId}?hard=true` },
    { method: 'DELETE', path: `/v1/memories/${memoryId}?purge=true` },
    { method: 'POST', path: `/v1/memories/${archivedId}/restore` },
    { method: 'POST', path: '/v1/undo', body: { changeId } },
    { method: 'POST', path: '/v1/recall', body: { query: 'staging cluster', recordAccess: true } },
    { method: 'POST', path: '/v1/context', body: { query: 'staging cluster', recordAccess: true } },
    { method: 'POST', path: '/v1/turns', body: { sessionId: 's', messages: [] } },
    { method: 'POST', path: `/v1/jobs/${failedJobId}/retry` },
    { method: 'POST', path: '/mcp', body: { jsonrpc: '2.0', id: 1, method: 'tools/list' } },
    { method: 'POST', path: '/v1/nowhere' },
  ];
}

/** Expects each path, fetched with GET from `server` (the shared fixture's by default), to answer `status`. */
async function expectGetStatus(status: number, paths: string[], server = fixture.server.url): Promise<void> {
  for (const path of paths) expect((await fetch(`${server}${path}`)).status, path).toBe(status);
}

async function send(
  request: { method: string; path: string; body?: unknown },
  headers: Record<string, string>,
): Promise<{ status: number; body: any }> {
  const response = await fetch(`${fixture.server.url}${request.path}`, {
    method: request.method,
    headers: {
      ...headers,
      ...(request.body !== undefined && {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      }),
    },
    ...(request.body !== undefined && { body: JSON.stringify(request.body) }),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

describe('same-origin check on every state-changing route', () => {
  const port = (): string => new URL(fixture.server.url).port;
  const foreign = (): Array<[string, Record<string, string>]> => [
    ['another loopback port', { origin: `http://127.0.0.1:${Number(port()) + 1}` }],
    ['localhost on another port', { origin: `http://localhost:${Number(port()) + 1}` }],
    ['a web site', { origin: 'https://evil.example' }],
    ['a sandboxed frame', { origin: 'null' }],
    ['a garbled origin', { origin: 'http://[bad' }],
    ['a file page', { origin: 'file://' }],
    ['same-site, no Origin', { 'sec-fetch-site': 'same-site' }],
    ['cross-site, no Origin', { 'sec-fetch-site': 'cross-site' }],
    ['own Origin but cross-site', { origin: fixture.server.url, 'sec-fetch-site': 'cross-site' }],
  ];

  it('refuses each foreign origin on each route with 403 FORBIDDEN_ORIGIN and changes nothing', async () => {
    const before = await snapshot();
    for (const request of stateChangingRequests()) {
      for (const [label, headers] of foreign()) {
        const result = await send(request, headers);
        expect(result.status, `${request.method} ${request.path} from ${label}`).toBe(403);
        expect(result.body.error.code).toBe('FORBIDDEN_ORIGIN');
      }
    }
    expect(await snapshot()).toBe(before);
  });

  it('lets the service’s own origin and clients without browser headers through', async () => {
    const own = { origin: fixture.server.url, 'sec-fetch-site': 'same-origin' };
    expect((await send({ method: 'POST', path: `/v1/memories/${archivedId}/restore` }, own)).status).toBe(200);
    expect((await send({ method: 'DELETE', path: `/v1/memories/${archivedId}` }, {})).status).toBe(200);
    const localhost = { origin: `http://localhost:${port()}` };
    const viaLocalhost = await fetch(`http://localhost:${port()}/v1/memories/${archivedId}/restore`, {
      method: 'POST',
      headers: localhost,
    });
    expect(viaLocalhost.status).toBe(200);
    expect((await send({ method: 'POST', path: `/v1/jobs/${failedJobId}/retry` }, own)).body.job.state).toBe('pending');
  });

  it('reads stay open to the same page rules as before (GET is not state-changing)', async () => {
    const result = await send({ method: 'GET', path: '/v1/memories' }, { 'sec-fetch-site': 'cross-site' });
    expect(result.status).toBe(200);
  });
});

describe('the viewer’s files and headers', () => {
  it('serves the page with a strict Content-Security-Policy and no framing', async () => {
    const response = await fetch(`${fixture.server.url}/`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const policy = response.headers.get('content-security-policy') ?? '';
    expect(policy).toContain("script-src 'self'");
    expect(policy).toContain("frame-ancestors 'none'");
    expect(policy).not.toMatch(/unsafe-(inline|eval)/);
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
    expect(response.headers.get('x-frame-options')).toBe('DENY');
    const html = await response.text();
    expect(html).toContain('/viewer/app.js');
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    const script = await fetch(`${fixture.server.url}/viewer/app.js`);
    expect(script.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    const api = await fetch(`${fixture.server.url}/v1/info`);
    expect(api.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
  });

  it('serves only its own files: traversal, unknown names and other methods are refused', async () => {
    const notItsFiles = [
      '/viewer/..%2Fviewer-assets.ts',
      '/viewer/nothing.js',
      '/viewer/',
      '/viewer/a/b.js',
      '/index.html',
    ];
    await expectGetStatus(404, notItsFiles);
    expect((await fetch(`${fixture.server.url}/`, { method: 'DELETE' })).status).toBe(405);
  });
});

describe('off loopback with a token', () => {
  it('serves the page (which holds no data) but refuses every API read and write without the token', async () => {
    const guarded = await startViewerFixture({ token: 'a-long-test-token-0123456789' });
    try {
      expect((await fetch(`${guarded.server.url}/`)).status).toBe(200);
      await expectGetStatus(
        401,
        ['/v1/info', '/v1/memories', '/v1/jobs', '/v1/stats/usage', '/viewer-not-a-file'],
        guarded.server.url,
      );
      const ok = await fetch(`${guarded.server.url}/v1/info`, {
        headers: { authorization: 'Bearer a-long-test-token-0123456789' },
      });
      expect(ok.status).toBe(200);
    } finally {
      await guarded.close();
    }
  });
});

describe('viewer API input', () => {
  it('pages with a cursor through every memory exactly once, ties included', async () => {
    const { store } = fixture;
    // One transaction: many memories share one updatedAt, the case a keyset must not lose.
    await store.createMany(
      Array.from({ length: 23 }, (_, index) => ({ scope: 'global', content: `bulk memory ${index}` })),
      { actor: 'test' },
    );
    const all = await store.list({ scopes: [VIEWER_PROJECT, 'global'] });
    const seen: string[] = [];
    let cursor: string | null = null;
    let first = true;
    while (first || cursor !== null) {
      const page: any = await (
        await fetch(`${fixture.server.url}/v1/memories?limit=4${cursor ? `&cursor=${cursor}` : ''}`)
      ).json();
      if (first) expect(page.total).toBe(all.length);
      first = false;
      seen.push(...page.memories.map((memory: { id: string }) => memory.id));
      cursor = page.nextCursor;
    }
    expect(seen).toEqual(all.map((memory) => memory.id));
  });

  it('refuses bad cursors, bad importance, cursor with offset, unknown job states and bad job ids', async () => {
    await expectGetStatus(400, [
      '/v1/memories?cursor=abc',
      '/v1/memories?cursor=1.2.3',
      '/v1/memories?cursor=1.0&offset=4',
      '/v1/memories?importanceBelow=2',
      '/v1/memories?importanceBelow=-0.1',
      '/v1/memories?importanceAtLeast=1.5',
      '/v1/memories?importanceAtLeast=abc',
      '/v1/change-sets?limit=1000',
      '/v1/change-sets/not..an..id',
      '/v1/jobs?state=exploded',
      '/v1/jobs?limit=0',
      '/v1/info?x=1',
    ]);
    const before = await snapshot();
    const post = (path: string, body?: string) =>
      fetch(`${fixture.server.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        ...(body !== undefined && { body }),
      });
    expect((await post('/v1/jobs/..%2F..%2Fx/retry')).status).toBe(400);
    expect((await post('/v1/jobs/job_missing/retry')).status).toBe(404);
    expect((await post(`/v1/jobs/${failedJobId}/retry`, '{"force":true}')).status).toBe(400);
    expect((await post('/v1/context', '{"query":"x","maxTokens":-1}')).status).toBe(400);
    expect((await post('/v1/context', '{"query":"x","extra":1}')).status).toBe(400);
    expect((await post('/v1/context', JSON.stringify({ query: 'x'.repeat(10_001) }))).status).toBe(400);
    expect(await snapshot()).toBe(before);
  });

  it('previews the injection without counting hits', async () => {
    const response = await fetch(`${fixture.server.url}/v1/context`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: 'when does the staging cluster deploy?', maxTokens: 500 }),
    });
    const body: any = await response.json();
    expect(response.status).toBe(200);
    expect(body.block).toContain('<memory_context>');
    expect(body.tokens.budget).toBe(500);
    expect((await fixture.store.get(memoryId))!.hitCount).toBe(0);
  });
});
