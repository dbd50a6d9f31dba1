import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqliteMemoryStore } from '../../../src/adapters/sqlite/sqlite-memory-store.js';
import type { MemoryStore } from '../../../src/contracts/memory-store.js';
import { Engram } from '../../../src/engram.js';
import { startServer, type RunningServer } from '../../../src/surfaces/http/http-server.js';
import { runDream } from '../../../src/consolidation/run-dream.js';
import { useTemporaryFolder } from '../../support/per-test.js';

const PROJECT = 'project:github.com/acme/app';
const OTHER = 'project:github.com/acme/other';

const directory = useTemporaryFolder('engram-http-');
let store: SqliteMemoryStore;
let engram: Engram;
let server: RunningServer;
const logged: string[] = [];

interface ApiResult {
  status: number;
  headers: Headers;
  text: string;
  body: any;
}

async function api(
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<ApiResult> {
  const init: RequestInit = { method, headers: { ...headers } };
  if (body !== undefined) {
    init.headers = { 'content-type': 'application/json', ...headers };
    init.body = typeof body === 'string' ? body : JSON.stringify(body);
  }
  const response = await fetch(`${server.url}${path}`, init);
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  return { status: response.status, headers: response.headers, text, body: parsed };
}

/** A raw HTTP/1.1 request, for headers `fetch` will not send (Host) or bodies it would fix up. */
function rawRequest(
  url: string,
  options: { method?: string; path: string; headers?: Record<string, string>; body?: string; omitHost?: boolean },
): Promise<{ status: number; body: any }> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest(
      {
        host: target.hostname,
        port: target.port,
        method: options.method ?? 'GET',
        path: options.path,
        headers: options.headers ?? {},
        setHost: !options.omitHost,
      },
      (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () =>
          resolve({ status: response.statusCode ?? 0, body: text ? JSON.parse(text) : undefined }),
        );
      },
    );
    outgoing.on('error', reject);
    outgoing.end(options.body);
  });
}

/**
 * Sends a 10 MB JSON body in 1 MB pieces over a raw socket, stopping once the server answers. A
 * server that refuses early may close while the client still writes: real clients see EPIPE then,
 * so the write error is expected and the answer is read all the same.
 */
function sendOversizedBody(
  url: string,
  framing: 'declared' | 'chunked',
): Promise<{ status: number; body: any; piecesSent: number }> {
  const target = new URL(url);
  const piece = 'z'.repeat(1024 * 1024);
  const opening = '{"content":"';
  return new Promise((resolve, reject) => {
    const socket = connect(Number(target.port), target.hostname);
    let received = '';
    let piecesSent = 0;
    let answered = false;
    const finish = (): void => {
      const match = /^HTTP\/1\.1 (\d{3})[\s\S]*?\r\ncontent-length: (\d+)\r\n[\s\S]*?\r\n\r\n([\s\S]*)$/i.exec(
        received,
      );
      if (!match || Buffer.byteLength(match[3]!) < Number(match[2])) return;
      answered = true;
      socket.destroy();
      resolve({ status: Number(match[1]), body: JSON.parse(match[3]!), piecesSent });
    };
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      received += chunk;
      finish();
    });
    socket.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EPIPE' && error.code !== 'ECONNRESET') reject(error);
    });
    socket.on('close', () => {
      if (!answered)
        reject(new Error(`connection closed without a complete answer: ${JSON.stringify(received.slice(0, 200))}`));
    });
    socket.on('connect', async () => {
      const length = opening.length + 10 * piece.length + 2;
      const framingHeader = framing === 'declared' ? `content-length: ${length}` : 'transfer-encoding: chunked';
      socket.write(
        `POST /v1/memories HTTP/1.1\r\nhost: ${target.host}\r\ncontent-type: application/json\r\n${framingHeader}\r\n\r\n`,
      );
      const send = (text: string): void => {
        socket.write(framing === 'chunked' ? `${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n` : text);
      };
      send(opening);
      while (piecesSent < 10 && !answered && !socket.destroyed) {
        piecesSent += 1;
        send(piece);
        await new Promise((resolveTick) => setTimeout(resolveTick, 20));
      }
    });
  });
}

function expectError(result: ApiResult, status: number, code: string): void {
  expect(result.status, result.text).toBe(status);
  expect(result.headers.get('content-type')).toMatch(/^application\/json/);
  expect(Object.keys(result.body)).toEqual(['error']);
  expect(Object.keys(result.body.error).sort()).toEqual(['code', 'message']);
  expect(result.body.error.code).toBe(code);
  expect(result.body.error.message.length).toBeGreaterThan(10);
  expect(result.text).not.toMatch(/\bat .+\.(?:ts|js):\d+/);
}

/** Everything a refused request must leave untouched: the rows, their states and the history. */
async function snapshot(): Promise<string> {
  const memories = await store.list({ scopes: [PROJECT, OTHER, 'global'], archived: 'include', invalid: 'include' });
  const stats = await store.stats();
  return JSON.stringify({
    stats,
    memories: memories.map(({ hitCount: _hits, lastAccessedAt: _accessed, ...rest }) => rest),
  });
}

async function create(body: Record<string, unknown>): Promise<any> {
  const result = await api('POST', '/v1/memories', body);
  expect(result.status, result.text).toBe(201);
  return result.body.memory;
}

beforeAll(async () => {
  store = new SqliteMemoryStore({ path: join(directory(), 'engram.db') });
  await store.open();
  engram = new Engram({ store, defaultScope: PROJECT, readScopes: [PROJECT, 'global'] });
  server = await startServer({
    engram,
    host: '127.0.0.1',
    port: 0,
    maxBodyBytes: 1024 * 1024,
    version: '9.9.9-test',
    mcpScopes: [PROJECT, 'global'],
    log: (message) => logged.push(message),
  });
});

afterAll(async () => {
  await server?.close();
  await store?.close();
});

describe('REST routes', () => {
  it('GET /health answers ok with the version', async () => {
    const result = await api('GET', '/health');
    expect(result.status).toBe(200);
    expect(result.body).toEqual({ status: 'ok', version: '9.9.9-test' });
    expect(result.headers.get('cache-control')).toBe('no-store');
  });

  it('POST /v1/memories creates in the default scope and answers 201 with a Location', async () => {
    const result = await api('POST', '/v1/memories', {
      content: 'The production database is PostgreSQL 15 on a private server.',
      type: 'project',
      importance: 0.8,
      source: { sessionId: 's-1' },
    });
    expect(result.status).toBe(201);
    const memory = result.body.memory;
    expect(memory).toMatchObject({
      scope: PROJECT,
      type: 'project',
      importance: 0.8,
      archived: false,
      source: { sessionId: 's-1' },
    });
    expect(result.headers.get('location')).toBe(`/v1/memories/${memory.id}`);
    expect(await store.get(memory.id)).toMatchObject({ content: memory.content });
  });

  it('GET /v1/memories/:id reads one memory; a memory outside the read scopes is not found unless its scope is named', async () => {
    const mine = await create({ content: 'The user prefers tabs over spaces.', type: 'user', scope: 'global' });
    expect((await api('GET', `/v1/memories/${mine.id}`)).body.memory).toMatchObject({ id: mine.id, scope: 'global' });

    const theirs = await create({ content: 'The other project deploys with Fly.io.', scope: OTHER });
    expectError(await api('GET', `/v1/memories/${theirs.id}`), 404, 'NOT_FOUND');
    expect((await api('GET', `/v1/memories/${theirs.id}?scope=${encodeURIComponent(OTHER)}`)).body.memory.id).toBe(
      theirs.id,
    );
    expectError(await api('GET', '/v1/memories/mem_does_not_exist'), 404, 'NOT_FOUND');
  });

  it('GET /v1/memories lists with scope, type, archived, limit and offset filters', async () => {
    const a = await create({
      content: 'Pipeline bugs are tracked in Linear project INGEST.',
      type: 'reference',
      name: 'pipeline-bugs',
    });
    const b = await create({
      content: 'Release notes live in docs/releases on the wiki.',
      type: 'reference',
      name: 'release-notes',
    });
    await api('DELETE', `/v1/memories/${b.id}`);

    const references = await api('GET', '/v1/memories?type=reference');
    expect(references.status).toBe(200);
    expect(references.body.memories.map((memory: any) => memory.id)).toEqual([a.id]);
    expect(references.body.total).toBe(1);
    expect(references.body.scopes).toEqual([PROJECT, 'global']);

    const withArchived = await api('GET', '/v1/memories?type=reference&archived=include');
    expect(withArchived.body.memories.map((memory: any) => memory.id).sort()).toEqual([a.id, b.id].sort());
    const onlyArchived = await api('GET', '/v1/memories?type=reference&archived=only');
    expect(onlyArchived.body.memories.map((memory: any) => memory.id)).toEqual([b.id]);

    const other = await api('GET', `/v1/memories?scope=${encodeURIComponent(OTHER)}`);
    expect(other.body.memories.every((memory: any) => memory.scope === OTHER)).toBe(true);
    expect(other.body.memories.length).toBeGreaterThan(0);
    const mine = await api('GET', '/v1/memories?limit=1000');
    expect(mine.body.memories.some((memory: any) => memory.scope === OTHER)).toBe(false);

    const pageOne = await api('GET', '/v1/memories?limit=1&offset=0');
    const pageTwo = await api('GET', '/v1/memories?limit=1&offset=1');
    expect(pageOne.body.memories).toHaveLength(1);
    expect(pageTwo.body.memories).toHaveLength(1);
    expect(pageOne.body.memories[0].id).not.toBe(pageTwo.body.memories[0].id);
    expect(pageOne.body.total).toBe(mine.body.total);
    // The count apart from the page: total=false lists without counting, total=only counts without listing.
    const uncounted = await api('GET', '/v1/memories?type=reference&archived=include&total=false');
    expect(uncounted.body.memories.map((memory: any) => memory.id).sort()).toEqual([a.id, b.id].sort());
    expect(uncounted.body.total).toBeNull();
    const counted = await api('GET', '/v1/memories?type=reference&archived=include&total=only');
    expect(counted.body).toEqual({ total: 2, scopes: [PROJECT, 'global'] });
    expect((await api('GET', '/v1/memories?total=some')).status).toBe(400);

    expect((await api('GET', '/v1/memories?stale=true')).body.memories).toEqual([]);
    expect((await api('GET', '/v1/memories?invalid=only')).body.memories).toEqual([]);
  });

  it('PATCH, DELETE (archive), restore, history and hard DELETE work end to end', async () => {
    const memory = await create({ content: 'Integration tests use the real database, no mocks.', type: 'feedback' });
    const patched = await api('PATCH', `/v1/memories/${memory.id}`, {
      importance: 0.9,
      description: 'Tests hit the real database',
    });
    expect(patched.status).toBe(200);
    expect(patched.body.memory).toMatchObject({ importance: 0.9, description: 'Tests hit the real database' });

    const archived = await api('DELETE', `/v1/memories/${memory.id}`);
    expect(archived.body).toMatchObject({ id: memory.id, deleted: false, memory: { archived: true } });
    expectError(await api('DELETE', `/v1/memories/${memory.id}?hard=maybe`), 400, 'INVALID_INPUT');

    const restored = await api('POST', `/v1/memories/${memory.id}/restore`);
    expect(restored.status).toBe(200);
    expect(restored.body.memory.archived).toBe(false);
    expectError(await api('POST', `/v1/memories/${memory.id}/restore`, {}), 409, 'CONFLICT');

    const history = await api('GET', `/v1/memories/${memory.id}/history`);
    expect(history.body.history.map((entry: any) => entry.action)).toEqual(['create', 'update', 'archive', 'restore']);

    const deleted = await api('DELETE', `/v1/memories/${memory.id}?hard=true`);
    expect(deleted.body).toEqual({ id: memory.id, deleted: true });
    expectError(await api('GET', `/v1/memories/${memory.id}`), 404, 'NOT_FOUND');
    // History outlives the delete, so the delete can be undone.
    const afterDelete = await api('GET', `/v1/memories/${memory.id}/history`);
    expect(afterDelete.body.history.at(-1).action).toBe('delete');
    const undone = await api('POST', '/v1/undo', { changeId: afterDelete.body.history.at(-1).id });
    expect(undone.status).toBe(200);
    expect((await api('GET', `/v1/memories/${memory.id}`)).body.memory.importance).toBe(0.9);
  });

  it('DELETE ?purge=true erases a memory with its history (live or already deleted), within the read scopes', async () => {
    const memory = await create({ content: 'Private: the user is treated for zqxvortex syndrome.' });
    await api('PATCH', `/v1/memories/${memory.id}`, { importance: 0.9 });
    expectError(await api('DELETE', `/v1/memories/${memory.id}?purge=maybe`), 400, 'INVALID_INPUT');
    const purged = await api('DELETE', `/v1/memories/${memory.id}?purge=true`);
    expect(purged.status, purged.text).toBe(200);
    expect(purged.body).toMatchObject({ id: memory.id, deleted: true, purged: true, historyEntriesRemoved: 2 });
    expectError(await api('GET', `/v1/memories/${memory.id}`), 404, 'NOT_FOUND');
    const history = (await api('GET', `/v1/memories/${memory.id}/history`)).body.history;
    expect(history.map(({ action, before, after }: any) => ({ action, before, after }))).toEqual([
      { action: 'purge', before: null, after: null },
    ]);
    expectError(await api('POST', '/v1/undo', { changeId: history[0].id }), 404, 'NOT_FOUND');
    expectError(await api('DELETE', `/v1/memories/${memory.id}?purge=true`), 404, 'NOT_FOUND');

    const deleted = await create({ content: 'Private: the user banks with Zqxbank.' });
    await api('DELETE', `/v1/memories/${deleted.id}?hard=true`);
    expect((await api('DELETE', `/v1/memories/${deleted.id}?purge=true`)).body).toMatchObject({ memoryRemoved: false });
    expect(JSON.stringify(await store.history(deleted.id))).not.toContain('Zqxbank');

    const theirs = await create({ content: 'The other project keeps a private note.', scope: OTHER });
    const before = await snapshot();
    expectError(await api('DELETE', `/v1/memories/${theirs.id}?purge=true`), 404, 'NOT_FOUND');
    expect(await snapshot()).toBe(before);
  });

  it('POST /v1/undo reverts a change and refuses one that newer changes depend on', async () => {
    const memory = await create({ content: 'Deploys happen on Tuesdays.' });
    await api('PATCH', `/v1/memories/${memory.id}`, { content: 'Deploys happen on Thursdays.' });
    await api('PATCH', `/v1/memories/${memory.id}`, { importance: 0.2 });
    const history = (await api('GET', `/v1/memories/${memory.id}/history`)).body.history;
    expectError(await api('POST', '/v1/undo', { changeId: history[1].id }), 409, 'UNDO_CONFLICT');
    const undone = await api('POST', '/v1/undo', { changeId: history[2].id });
    expect(undone.body.change).toMatchObject({ memoryId: memory.id, undoOf: history[2].id });
    expect((await api('GET', `/v1/memories/${memory.id}`)).body.memory.importance).toBe(0.5);
    expectError(await api('POST', '/v1/undo', { changeId: 'chg_nothing_here' }), 404, 'NOT_FOUND');
  });

  it('POST /v1/undo and history refuse changes of memories outside the named scopes', async () => {
    const theirs = await create({ content: 'The other project uses MySQL 8.', scope: OTHER });
    const before = await snapshot();
    const history = await store.history(theirs.id);
    expectError(await api('POST', '/v1/undo', { changeId: history[0]!.id }), 404, 'NOT_FOUND');
    expectError(await api('GET', `/v1/memories/${theirs.id}/history`), 404, 'NOT_FOUND');
    expectError(await api('PATCH', `/v1/memories/${theirs.id}`, { importance: 1 }), 404, 'NOT_FOUND');
    expectError(await api('DELETE', `/v1/memories/${theirs.id}?hard=true`), 404, 'NOT_FOUND');
    expect(await snapshot()).toBe(before);
  });

  it('POST /v1/recall ranks natural-language questions with score parts, within the read scopes', async () => {
    await create({ content: 'Staging runs on Kubernetes in the eu-west cluster.', type: 'project', importance: 0.9 });
    await create({ content: 'The staging cluster of the other project is in us-east.', scope: OTHER });
    const result = await api('POST', '/v1/recall', { query: 'where does staging run?', minScore: 0 });
    expect(result.status).toBe(200);
    expect(result.body.scopes).toEqual([PROJECT, 'global']);
    expect(result.body.memories.length).toBeGreaterThan(0);
    const first = result.body.memories[0];
    expect(first.memory.content).toContain('Kubernetes');
    expect(Object.keys(first.parts).sort()).toEqual(['importanceWeight', 'recency', 'relevance', 'score']);
    expect(first.score).toBe(first.parts.score);
    expect(result.body.memories.some((entry: any) => entry.memory.scope === OTHER)).toBe(false);

    const typed = await api('POST', '/v1/recall', { query: 'staging', types: ['user'], minScore: 0 });
    expect(typed.body.memories).toEqual([]);
  });

  it('POST /v1/recall leaves invalidated memories out unless asOf or includeInvalid asks what was true then', async () => {
    const old = await create({ content: 'The billing queue runs on RabbitMQ brokers.', type: 'project' });
    const now = await create({ content: 'The billing queue runs on Kafka brokers since the move.', type: 'project' });
    await store.invalidate(old.id, { supersededBy: now.id }, { actor: 'test' });
    const ids = (result: ApiResult): string[] => result.body.memories.map((entry: any) => entry.memory.id);
    const query = { query: 'billing queue brokers', minScore: 0, recordAccess: false };
    const current = await api('POST', '/v1/recall', query);
    expect(ids(current)).toContain(now.id);
    expect(ids(current)).not.toContain(old.id);
    const all = await api('POST', '/v1/recall', { ...query, includeInvalid: true });
    expect(all.status, all.text).toBe(200);
    expect(ids(all)).toEqual(expect.arrayContaining([old.id, now.id]));
    const later = await api('POST', '/v1/recall', { ...query, asOf: '2999-01-01' });
    expect(ids(later)).toContain(now.id);
    expect(ids(later)).not.toContain(old.id);
    const before = await api('POST', '/v1/recall', { ...query, asOf: '2020-01-01T00:00:00Z' });
    expect(ids(before)).not.toContain(old.id);
    expect(ids(before)).not.toContain(now.id);

    const hits = (await store.get(now.id))!.hitCount;
    for (const asOf of ['2026-02-30', 'not-a-date', 'March 9', '1', '2026-03-09T25:00', 'x'.repeat(41), 20260309, null])
      expectError(await api('POST', '/v1/recall', { query: 'billing queue', asOf }), 400, 'INVALID_INPUT');
    expectError(
      await api('POST', '/v1/recall', { query: 'billing queue', includeInvalid: 'yes' }),
      400,
      'INVALID_INPUT',
    );
    expect((await store.get(now.id))!.hitCount).toBe(hits);
  });

  it('lists change sets, shows one with its changes, and undoes a whole one through POST /v1/undo', async () => {
    const first = await api('POST', '/v1/memories', {
      content: 'Releases are cut from the trunk branch every Monday.',
      dedupe: false,
    });
    const copy = await api('POST', '/v1/memories', {
      content: 'Releases are cut from the trunk branch every Monday.',
      dedupe: false,
    });
    expect(copy.status, copy.text).toBe(201);
    const report = await runDream(
      { store, settings: engram.settings, now: () => new Date() },
      { trigger: 'manual', scopes: [PROJECT] },
    );
    expect(report.status).toBe('applied');
    const listed = await api('GET', '/v1/change-sets');
    expect(listed.status, listed.text).toBe(200);
    expect(listed.body.changeSets[0]).toMatchObject({ id: report.changeSetId, actor: 'dream', scopes: [PROJECT] });
    expect(listed.body.dream.status).toBe('done');
    const shown = await api('GET', `/v1/change-sets/${report.changeSetId}`);
    expect(shown.body.entries.map((entry: any) => entry.action)).toContain('invalidate');
    // Another project's scope cannot be read, and bad ids are refused.
    expectError(await api('GET', `/v1/change-sets?scope=${encodeURIComponent(OTHER)}`), 400, 'INVALID_SCOPE');
    expectError(await api('GET', '/v1/change-sets?limit=0'), 400, 'INVALID_INPUT');
    expectError(await api('GET', '/v1/change-sets/cs_00000000000000000000000000'), 404, 'NOT_FOUND');
    expectError(await api('GET', '/v1/change-sets/..%2F..%2Fetc'), 400, 'INVALID_INPUT');
    expectError(await api('POST', '/v1/undo', { changeId: report.changeSetId, scopes: [OTHER] }), 400, 'INVALID_SCOPE');
    const undone = await api('POST', '/v1/undo', { changeId: report.changeSetId });
    expect(undone.status, undone.text).toBe(200);
    expect(undone.body.undone.length).toBe(report.diffs.length);
    expect((await store.get(copy.body.memory.id))!.invalidAt).toBeNull();
    expect((await store.get(first.body.memory.id))!.invalidAt).toBeNull();
    expectError(await api('POST', '/v1/undo', { changeId: report.changeSetId }), 409, 'UNDO_CONFLICT');
    expect((await api('GET', '/v1/change-sets')).body.changeSets[0].undoneAt).toBeDefined();
  });

  it('GET /v1/stats counts the read scopes (or the named ones)', async () => {
    const result = await api('GET', '/v1/stats');
    expect(result.status).toBe(200);
    expect(result.body.scopes).toEqual([PROJECT, 'global']);
    expect(result.body.stats.byScope[OTHER]).toBeUndefined();
    expect(result.body.stats.total).toBeGreaterThan(0);
    const other = await api('GET', `/v1/stats?scope=${encodeURIComponent(OTHER)}`);
    expect(Object.keys(other.body.stats.byScope)).toEqual([OTHER]);
  });

  it('unknown routes are 404 and wrong methods 405 with Allow', async () => {
    expectError(await api('GET', '/v2/memories'), 404, 'ROUTE_NOT_FOUND');
    expectError(await api('GET', '/v1/memories/'), 404, 'ROUTE_NOT_FOUND');
    const wrong = await api('PUT', '/v1/memories', { content: 'x' });
    expectError(wrong, 405, 'METHOD_NOT_ALLOWED');
    expect(wrong.headers.get('allow')).toBe('POST, GET');
    expectError(await api('GET', '/v1/recall'), 405, 'METHOD_NOT_ALLOWED');
    expectError(await api('GET', '/mcp'), 405, 'METHOD_NOT_ALLOWED');
    expectError(await api('DELETE', '/mcp'), 405, 'METHOD_NOT_ALLOWED');
  });
});

describe('hostile input is refused with a JSON error and changes nothing', () => {
  it('refuses bad bodies on create', async () => {
    const before = await snapshot();
    const post = (body: unknown, headers?: Record<string, string>) => api('POST', '/v1/memories', body, headers);
    expectError(await post({ content: 'x', scope: 'team:red' }), 400, 'INVALID_SCOPE');
    expectError(await post({ content: 'x', scope: 'project:' }), 400, 'INVALID_SCOPE');
    expectError(await post({ content: 'x', scope: 'project:a b' }), 400, 'INVALID_SCOPE');
    expectError(await post({ content: 'x', importance: 7 }), 400, 'INVALID_INPUT');
    expectError(await post({ content: 'x', importance: '0.5' }), 400, 'INVALID_INPUT');
    expectError(await post({ content: 'x', type: 'opinion' }), 400, 'INVALID_INPUT');
    expectError(await post({ content: 'bell \u0007 and escape \u001b[31m' }), 400, 'INVALID_INPUT');
    expectError(await post({ content: 'ok', description: 'two\nlines' }), 400, 'INVALID_INPUT');
    expectError(await post({ content: 'ok', name: '../../etc/passwd' }), 400, 'INVALID_INPUT');
    expectError(await post({ content: '   ' }), 400, 'INVALID_INPUT');
    expectError(await post({ content: 'x', id: 'mem_chosen' }), 400, 'INVALID_INPUT');
    expectError(await post({ content: 'x', archived: true }), 400, 'INVALID_INPUT');
    expectError(await post('{"content":"x","__proto__":{"polluted":true}}'), 400, 'INVALID_INPUT');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expectError(await post([{ content: 'x' }]), 400, 'INVALID_INPUT');
    expectError(await post('null'), 400, 'INVALID_INPUT');
    expectError(await post('{"content": "x",'), 400, 'INVALID_JSON');
    expectError(await post("{'content': 'x'}"), 400, 'INVALID_JSON');
    expectError(
      await post(JSON.stringify({ content: 'x' }), { 'content-type': 'text/plain' }),
      415,
      'UNSUPPORTED_MEDIA_TYPE',
    );
    expectError(
      await post(JSON.stringify({ content: 'x' }), { 'content-type': 'application/x-www-form-urlencoded' }),
      415,
      'UNSUPPORTED_MEDIA_TYPE',
    );
    expectError(
      await post(JSON.stringify({ content: 'x' }), { 'content-type': 'application/json; charset=latin1' }),
      415,
      'UNSUPPORTED_MEDIA_TYPE',
    );
    expectError(await api('POST', '/v1/memories'), 400, 'INVALID_INPUT');
    // Within the body limit but past one memory's content limit (64 KB).
    expectError(await post({ content: 'y'.repeat(200 * 1024) }), 413, 'PAYLOAD_TOO_LARGE');
    expect(await snapshot()).toBe(before);
  });

  it('answers a 10 MB body with 413 without reading it all, declared or chunked', async () => {
    const before = await snapshot();
    for (const framing of ['declared', 'chunked'] as const) {
      const answer = await sendOversizedBody(server.url, framing);
      expect(answer.status, framing).toBe(413);
      expect(answer.body.error.code).toBe('PAYLOAD_TOO_LARGE');
      expect(answer.piecesSent, framing).toBeLessThan(10);
    }
    // The server still serves the next request.
    expect((await api('GET', '/health')).status).toBe(200);
    expect(await snapshot()).toBe(before);
  });

  it('refuses unknown fields and bad values on update, and path traversal in ids', async () => {
    const memory = await create({ content: 'The team uses trunk-based development.' });
    const before = await snapshot();
    expectError(await api('PATCH', `/v1/memories/${memory.id}`, { scope: 'global' }), 400, 'INVALID_INPUT');
    expectError(await api('PATCH', `/v1/memories/${memory.id}`, { importance: 7 }), 400, 'INVALID_INPUT');
    expectError(await api('PATCH', `/v1/memories/${memory.id}`, { content: 'nul \u0000 byte' }), 400, 'INVALID_INPUT');
    expectError(await api('PATCH', `/v1/memories/${memory.id}`, {}), 400, 'INVALID_INPUT');
    expectError(await api('PATCH', `/v1/memories/${memory.id}`, { hitCount: 99 }), 400, 'INVALID_INPUT');
    expectError(await api('PATCH', `/v1/memories/${memory.id}?scope=team:x`, { importance: 1 }), 400, 'INVALID_SCOPE');
    // `%2e%2e` is a dot segment: the URL collapses before routing and names no memory route at all.
    expectError(await api('GET', '/v1/memories/%2e%2e/%2e%2e/etc'), 404, 'ROUTE_NOT_FOUND');
    for (const id of ['..%2F..%2Fetc%2Fpasswd', '..%5C..%5Cwindows', '...', 'a%00b', "x'%20OR%201=1", '%E0%A4%A']) {
      expectError(await api('GET', `/v1/memories/${id}`), 400, 'INVALID_INPUT');
      expectError(await api('PATCH', `/v1/memories/${id}`, { importance: 1 }), 400, 'INVALID_INPUT');
      expectError(await api('DELETE', `/v1/memories/${id}?hard=true`), 400, 'INVALID_INPUT');
      expectError(await api('GET', `/v1/memories/${id}/history`), 400, 'INVALID_INPUT');
    }
    expectError(await api('POST', `/v1/memories/${memory.id}/restore`, { force: true }), 400, 'INVALID_INPUT');
    expect(await snapshot()).toBe(before);
  });

  it('refuses bad list queries', async () => {
    expectError(await api('GET', '/v1/memories?scope=team:red'), 400, 'INVALID_SCOPE');
    expectError(await api('GET', '/v1/memories?scope=,'), 400, 'INVALID_SCOPE');
    expectError(await api('GET', '/v1/memories?type=opinion'), 400, 'INVALID_INPUT');
    expectError(await api('GET', '/v1/memories?archived=sometimes'), 400, 'INVALID_INPUT');
    expectError(await api('GET', '/v1/memories?limit=abc'), 400, 'INVALID_INPUT');
    expectError(await api('GET', '/v1/memories?limit=0'), 400, 'INVALID_INPUT');
    expectError(await api('GET', '/v1/memories?limit=-1'), 400, 'INVALID_INPUT');
    expectError(await api('GET', '/v1/memories?limit=100000'), 400, 'INVALID_INPUT');
    expectError(await api('GET', '/v1/memories?limit=1&limit=2'), 400, 'INVALID_INPUT');
    expectError(await api('GET', '/v1/memories?sort=desc'), 400, 'INVALID_INPUT');
    expectError(await api('GET', '/v1/memories?__proto__=x'), 400, 'INVALID_INPUT');
  });

  it('treats full-text syntax in recall queries as plain words', async () => {
    await create({ content: 'The foo service restarts nightly.' });
    const before = await snapshot();
    for (const query of [
      '"foo AND (',
      'foo OR bar NOT',
      'NEAR(foo bar)',
      'foo*',
      '^foo',
      'content:foo',
      "'; DROP TABLE memories; --",
      '\u0000\u0007',
      '',
      '((((((',
    ]) {
      const result = await api('POST', '/v1/recall', { query, recordAccess: false });
      expect(result.status, `${query}: ${result.text}`).toBe(200);
      expect(Array.isArray(result.body.memories)).toBe(true);
    }
    const quoted = await api('POST', '/v1/recall', { query: '"foo AND (', minScore: 0, recordAccess: false });
    expect(quoted.body.memories.some((entry: any) => entry.memory.content.includes('foo service'))).toBe(true);
    expectError(await api('POST', '/v1/recall', { query: 'x', scopes: ['team:red'] }), 400, 'INVALID_SCOPE');
    expectError(await api('POST', '/v1/recall', { query: 'x', topK: 0 }), 400, 'INVALID_INPUT');
    expectError(await api('POST', '/v1/recall', { query: 'x', limit: 3 }), 400, 'INVALID_INPUT');
    expectError(await api('POST', '/v1/recall', { query: 42 }), 400, 'INVALID_INPUT');
    expectError(await api('POST', '/v1/undo', { changeId: 'x', force: true }), 400, 'INVALID_INPUT');
    expect(await snapshot()).toBe(before);
  });

  /** GET /v1/memories from a server of its own over `store`, closed after: the status and the body. */
  async function listThrough(store: MemoryStore): Promise<{ status: number; text: string }> {
    const server = await startServer({
      engram: new Engram({ store, defaultScope: PROJECT }),
      host: '127.0.0.1',
      port: 0,
      maxBodyBytes: 1024,
      version: 't',
      mcpScopes: [PROJECT],
      log: () => undefined,
    });
    try {
      const response = await fetch(`${server.url}/v1/memories`);
      return { status: response.status, text: await response.text() };
    } finally {
      await server.close();
    }
  }

  it('answers an unexpected failure with a bare 500: no message, path or stack from inside', async () => {
    const realStore = new SqliteMemoryStore({ path: join(directory(), 'failing.db') });
    await realStore.open();
    // A store that fails the way a bug would: a plain Error carrying internal details.
    const failingStore = new Proxy(realStore, {
      get(target, property, receiver) {
        if (property === 'list')
          return async () => {
            throw new TypeError('secret detail at /home/engram/src/internal.ts:42');
          };
        const value = Reflect.get(target, property, receiver);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    try {
      const { status, text } = await listThrough(failingStore);
      expect(status).toBe(500);
      expect(JSON.parse(text).error.code).toBe('INTERNAL');
      expect(text).not.toMatch(/secret|internal\.ts|TypeError|\bat \S+:\d+/);
    } finally {
      await realStore.close();
    }
  });

  it('reports a closed store as 503 without its internals', async () => {
    const closedStore = new SqliteMemoryStore({ path: join(directory(), 'closed.db') });
    const { status, text } = await listThrough(closedStore);
    expect(status).toBe(503);
    expect(JSON.parse(text).error.code).toBe('STORE_CLOSED');
    expect(text).not.toContain('sqlite-memory-store');
  });
});

describe('security', () => {
  /** Starts a server of its own over the shared engram, 1 KiB bodies unless `options` says otherwise; the test closes it. */
  const startOwn = (options: Partial<Parameters<typeof startServer>[0]> & { host: string }) =>
    startServer({ engram, port: 0, maxBodyBytes: 1024, version: 't', mcpScopes: [PROJECT], ...options });

  it('refuses to bind beyond loopback without a token', async () => {
    for (const host of ['0.0.0.0', '::', '192.168.1.20', 'example.com']) {
      await expect(startOwn({ host })).rejects.toMatchObject({
        code: 'CONFIG_INVALID',
        message: expect.stringContaining('token'),
      });
    }
    const open = await startOwn({ host: '0.0.0.0', token: 'c3f1a9e07b5d42c8e6a1f0d9b7c2e4a8' });
    await open.close();
  });

  it('refuses a weak token beyond loopback, naming why; loopback keeps working with any token or none', async () => {
    const weak = [
      'x',
      'secret-token',
      'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa',
      'abababababababababababababababab',
      'passwordpasswordpassword',
    ];
    for (const token of weak) {
      for (const host of ['0.0.0.0', '192.168.1.20']) {
        await expect(startOwn({ host, token }), `${host} ${token}`).rejects.toMatchObject({
          code: 'CONFIG_INVALID',
          message: expect.stringMatching(/weak token \(/),
        });
      }
    }
    for (const token of [undefined, 'x', 'secret-token']) {
      const local = await startOwn({ host: '127.0.0.1', ...(token !== undefined && { token }) });
      await local.close();
    }
    const strong = await startOwn({ host: '0.0.0.0', token: 'Zq7-vortex-Kappa-19-lantern-Oslo' });
    await strong.close();
  });

  it('says clearly when the port is taken', async () => {
    await expect(startOwn({ host: '127.0.0.1', port: server.port })).rejects.toMatchObject({
      code: 'CONFIG_INVALID',
      message: expect.stringContaining('already in use'),
    });
  });

  it('requires the bearer token on every route, /health and /mcp included', async () => {
    const guarded = await startOwn({ host: '127.0.0.1', token: 's3cret-token', maxBodyBytes: 1 << 20 });
    try {
      const before = await snapshot();
      const paths: Array<[string, string]> = [
        ['GET', '/health'],
        ['GET', '/v1/memories'],
        ['POST', '/v1/memories'],
        ['POST', '/mcp'],
        ['GET', '/nowhere'],
      ];
      for (const [method, path] of paths) {
        for (const authorization of [
          undefined,
          'Bearer wrong',
          'Bearer s3cret-token-longer',
          'Basic czNjcmV0LXRva2Vu',
          's3cret-token',
        ]) {
          const response = await fetch(`${guarded.url}${path}`, {
            method,
            headers: { 'content-type': 'application/json', ...(authorization && { authorization }) },
            ...(method === 'POST' && { body: JSON.stringify({ content: 'intruder was here' }) }),
          });
          expect(response.status, `${method} ${path} ${authorization}`).toBe(401);
          expect(response.headers.get('www-authenticate')).toBe('Bearer');
          expect(((await response.json()) as any).error.code).toBe('UNAUTHORIZED');
        }
      }
      expect(await snapshot()).toBe(before);
      const ok = await fetch(`${guarded.url}/health`, { headers: { authorization: 'Bearer s3cret-token' } });
      expect(ok.status).toBe(200);
    } finally {
      await guarded.close();
    }
  });

  it('refuses Host headers that are not loopback names (DNS rebinding)', async () => {
    const before = await snapshot();
    for (const host of [
      'evil.example.com',
      'evil.example.com:80',
      '127.0.0.1.nip.io',
      'localhost.evil.com',
      '10.0.0.1',
      undefined,
    ]) {
      const result = await rawRequest(server.url, {
        method: 'POST',
        path: '/v1/memories',
        headers: { ...(host !== undefined && { host }), 'content-type': 'application/json' },
        body: JSON.stringify({ content: 'planted by a web page' }),
        omitHost: host === undefined,
      });
      if (host === undefined) {
        // Node's HTTP parser itself refuses an HTTP/1.1 request without Host.
        expect(result.status).toBe(400);
        continue;
      }
      expect(result.status, host).toBe(403);
      expect(result.body.error.code).toBe('FORBIDDEN_HOST');
    }
    expect(await snapshot()).toBe(before);
    const port = new URL(server.url).port;
    for (const host of [`localhost:${port}`, `127.0.0.1:${port}`, `127.8.9.10`, `[::1]:${port}`]) {
      expect((await rawRequest(server.url, { path: '/health', headers: { host } })).status, host).toBe(200);
    }
  });
});
