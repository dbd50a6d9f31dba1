import { EngramError } from '../../../kernel/errors.js';
import type { Memory } from '../../../memory/memory.js';
import { nextKeyset } from '../../viewer/viewer-usage.js';
import { readJsonBody, readRequiredJsonBody } from '../http-body.js';
import {
  createMemoryBody,
  deleteQuery,
  emptyBody,
  listQuery,
  parseInput,
  queryObject,
  scopedQuery,
  updateMemoryBody,
} from '../http-schemas.js';
import {
  assertNoBody,
  memoryId,
  notFound,
  ok,
  requestScopes,
  route,
  type JsonReply,
  type Route,
  type RouteContext,
} from '../http-route-context.js';

/** `/v1/memories`: create, list (offset or keyset pages), read, change, forget or purge, restore, history, chain. */
export const memoryRoutes: Route[] = [
  route('POST', '/v1/memories', createMemory),
  route('GET', '/v1/memories', listMemories),
  route('GET', '/v1/memories/:id', getMemory),
  route('PATCH', '/v1/memories/:id', updateMemory),
  route('DELETE', '/v1/memories/:id', forgetMemory),
  route('POST', '/v1/memories/:id/restore', restoreMemory),
  route('GET', '/v1/memories/:id/history', memoryHistory),
  route('GET', '/v1/memories/:id/chain', memoryChain),
];

const DEFAULT_LIST_LIMIT = 100;

async function createMemory(context: RouteContext): Promise<JsonReply> {
  const { dedupe, ...input } = parseInput(
    createMemoryBody,
    await readRequiredJsonBody(context.request, context.maxBodyBytes),
    'memory',
  );
  const result = await context.engram.save(input, { actor: context.actor, ...(dedupe !== undefined && { dedupe }) });
  const path = `/v1/memories/${encodeURIComponent(result.memory.id)}`;
  // 201 when a memory was created; 200 when the statement updated its near-duplicate (`action: merged`).
  return result.action === 'created'
    ? { status: 201, body: result, headers: { location: path } }
    : { status: 200, body: result, headers: { 'content-location': path } };
}

async function listMemories(context: RouteContext): Promise<JsonReply> {
  await assertNoBody(context);
  const query = parseInput(listQuery, queryObject(context.url.searchParams), 'query');
  if (query.cursor !== undefined && query.offset !== undefined)
    throw new EngramError('INVALID_INPUT', 'Page with cursor or with offset, not both.');
  const filter = {
    scopes: requestScopes(context, query.scope),
    ...(query.type && { types: query.type }),
    ...(query.archived && { archived: query.archived }),
    ...(query.invalid && { invalid: query.invalid }),
    ...(query.importanceBelow !== undefined && { importanceBelow: query.importanceBelow }),
    ...(query.importanceAtLeast !== undefined && { importanceAtLeast: query.importanceAtLeast }),
  };
  const limit = query.limit ?? DEFAULT_LIST_LIMIT;
  if (query.cursor !== undefined) {
    // Keyset paging over (updatedAt, the store's order): no count and no deep offset, so every page is as fast as the first.
    const [at, skip] = query.cursor.split('.').map(Number) as [number, number];
    // With `stale`, the stale cutoff bounds the keyset too; a cursor past it starts at the cutoff.
    const staleBefore = Date.now() - context.engram.settings.recall.staleDays * 86_400_000;
    const keyset =
      query.stale && staleBefore < at
        ? { before: new Date(staleBefore).toISOString(), skip: 0 }
        : { before: new Date(at).toISOString(), skip };
    const memories = await context.engram.list({
      ...filter,
      updatedBefore: keyset.before,
      offset: keyset.skip,
      limit,
    });
    return ok({ memories, limit, scopes: filter.scopes, nextCursor: nextCursor(memories, limit, keyset) });
  }
  const offset = query.offset ?? 0;
  const listed = { ...filter, ...(query.stale && { stale: true }) };
  if (query.total === 'only') return ok({ total: await context.engram.count(listed), scopes: filter.scopes });
  const [memories, total] = await Promise.all([
    context.engram.list({ ...listed, limit, offset }),
    query.total === 'false' ? null : context.engram.count(listed),
  ]);
  return ok({
    memories,
    total,
    limit,
    offset,
    scopes: filter.scopes,
    nextCursor: offset === 0 ? nextCursor(memories, limit, undefined) : null,
  });
}

/** The cursor of the page after this one, or null when this one was the last. */
function nextCursor(
  page: readonly Memory[],
  limit: number,
  previous: { before: string; skip: number } | undefined,
): string | null {
  if (page.length < limit || page.length === 0) return null;
  const next = nextKeyset(page, previous);
  return `${Date.parse(next.before)}.${next.skip}`;
}

async function getMemory(context: RouteContext): Promise<JsonReply> {
  await assertNoBody(context);
  const { scope } = parseInput(scopedQuery, queryObject(context.url.searchParams), 'query');
  const memory = await context.engram.get(memoryId(context), requestScopes(context, scope));
  return ok({ memory });
}

async function updateMemory(context: RouteContext): Promise<JsonReply> {
  const { scope } = parseInput(scopedQuery, queryObject(context.url.searchParams), 'query');
  const id = memoryId(context);
  const patch = parseInput(
    updateMemoryBody,
    await readRequiredJsonBody(context.request, context.maxBodyBytes),
    'update',
  );
  const memory = await context.engram.update(id, patch, {
    actor: context.actor,
    scopes: requestScopes(context, scope),
  });
  return ok({ memory });
}

async function forgetMemory(context: RouteContext): Promise<JsonReply> {
  await assertNoBody(context);
  const query = parseInput(deleteQuery, queryObject(context.url.searchParams), 'query');
  const id = memoryId(context);
  if (query.purge === true) {
    // Purge: the memory, its history and every copy the store holds go; `places` says what may remain.
    const purged = await context.engram.purge(id, {
      actor: context.actor,
      scopes: requestScopes(context, query.scope),
    });
    return ok({ id, deleted: true, purged: true, ...purged });
  }
  const hard = query.hard ?? false;
  const memory = await context.engram.forget(id, {
    hard,
    actor: context.actor,
    scopes: requestScopes(context, query.scope),
  });
  return ok(hard ? { id, deleted: true } : { id, deleted: false, memory });
}

async function restoreMemory(context: RouteContext): Promise<JsonReply> {
  const { scope } = parseInput(scopedQuery, queryObject(context.url.searchParams), 'query');
  const id = memoryId(context);
  const body = await readJsonBody(context.request, context.maxBodyBytes);
  parseInput(emptyBody, body ?? {}, 'body');
  const memory = await context.engram.restore(id, { actor: context.actor, scopes: requestScopes(context, scope) });
  return ok({ memory });
}

async function memoryHistory(context: RouteContext): Promise<JsonReply> {
  await assertNoBody(context);
  const { scope } = parseInput(scopedQuery, queryObject(context.url.searchParams), 'query');
  const id = memoryId(context);
  // History outlives a hard delete; the library confines it by the recorded states' scopes.
  const history = await context.engram.history(id, requestScopes(context, scope));
  if (history.length === 0) throw notFound('memory', id);
  return ok({ memoryId: id, history });
}

/** The supersede chain around a memory (as `engram show` prints it): what replaced it, and what it replaced, with why. */
async function memoryChain(context: RouteContext): Promise<JsonReply> {
  await assertNoBody(context);
  const { scope } = parseInput(scopedQuery, queryObject(context.url.searchParams), 'query');
  const scopes = requestScopes(context, scope);
  const id = memoryId(context);
  return ok({ memoryId: id, chain: await context.engram.supersedeChain(id, scopes) });
}
