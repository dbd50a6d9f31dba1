import type { IncomingMessage, ServerResponse } from 'node:http';
import { EngramError } from '../../kernel/errors.js';
import { assertMemoryId } from '../../memory/memory.js';
import { assertScope, type Scope } from '../../memory/scope.js';
import type { Engram } from '../../engram.js';
import type { Conversation } from '../../contracts/conversation.js';
import type { AfterTurnOptions, AfterTurnResult } from '../../extraction/extractor.js';
import { readJsonBody, readRequiredJsonBody } from './http-body.js';
import { HttpProblem } from './http-errors.js';
import { handleMcpPost } from './http-mcp-endpoint.js';
import type { Memory } from '../../memory/memory.js';
import type { JobOutcome } from '../../extraction/extraction-worker.js';
import { jobOutcomeJson } from '../../extraction/engram-jobs.js';
import { sendViewerAsset } from '../viewer/viewer-assets.js';
import { resolveSyncConflictRoute, syncStatusRoute, type SyncRouteCalls } from './http-sync-route.js';
import { isChangeSetId } from '../../consolidation/change-sets.js';
import { changeSetUndoJson } from '../../consolidation/engram-change-sets.js';
import { nextKeyset, usageStats } from '../viewer/viewer-usage.js';
import { recallResultJson } from '../../recall/recall-result-json.js';
import {
  contextBody,
  jobsQuery,
  createMemoryBody,
  deleteQuery,
  emptyBody,
  listQuery,
  parseInput,
  queryObject,
  recallBody,
  changeSetsQuery,
  scopedQuery,
  turnBody,
  undoBody,
  updateMemoryBody,
} from './http-schemas.js';

/** Everything a route handler may use: the library, the request, and the server's limits. */
export interface RouteContext {
  engram: Engram;
  request: IncomingMessage;
  response: ServerResponse;
  url: URL;
  params: Record<string, string>;
  maxBodyBytes: number;
  version: string;
  actor: string;
  mcpScopes: readonly Scope[];
  extractor?: TurnExtractor;
  /** The extraction runs this service finished lately, newest first (the viewer's Activity page). */
  recentExtractions?: () => readonly JobOutcome[];
  /** Sync's status and conflict resolution (`/v1/sync`), when the service syncs. */
  sync?: SyncRouteCalls;
}

/** What `POST /v1/turns` needs of the extraction pipeline: queue one finished turn (the Extractor). */
export interface TurnExtractor {
  afterTurn(conversation: Conversation, options?: AfterTurnOptions): Promise<AfterTurnResult>;
}

/** A JSON answer; a handler that wrote the response itself (MCP) returns undefined. */
export interface JsonReply {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

type RouteHandler = (context: RouteContext) => Promise<JsonReply | undefined>;

interface Route {
  method: string;
  segments: string[];
  handler: RouteHandler;
  /** Served without the bearer token: the viewer's static files, which hold no data (the page asks for the token). */
  public?: boolean;
}

const DEFAULT_LIST_LIMIT = 100;

const routes: Route[] = [
  route('GET', '/health', async ({ version }) => ok({ status: 'ok', version })),
  route('POST', '/v1/memories', createMemory),
  route('GET', '/v1/memories', listMemories),
  route('GET', '/v1/memories/:id', getMemory),
  route('PATCH', '/v1/memories/:id', updateMemory),
  route('DELETE', '/v1/memories/:id', forgetMemory),
  route('POST', '/v1/memories/:id/restore', restoreMemory),
  route('GET', '/v1/memories/:id/history', memoryHistory),
  route('GET', '/v1/memories/:id/chain', memoryChain),
  route('POST', '/v1/recall', recall),
  route('POST', '/v1/turns', queueTurn),
  route('POST', '/v1/undo', undo),
  route('GET', '/v1/stats', stats),
  // The web viewer (src/surfaces/viewer): its page and files, and the reads and writes only it needs.
  route('GET', '/', async ({ response }) => sendAsset(response, 'index.html'), { public: true }),
  route('GET', '/viewer/:file', async ({ response, params }) => sendAsset(response, params.file ?? ''), {
    public: true,
  }),
  route('GET', '/v1/info', info),
  route('POST', '/v1/context', memoryContext),
  route('GET', '/v1/stats/usage', usage),
  route('GET', '/v1/jobs', listJobs),
  route('POST', '/v1/jobs/:id/retry', retryJob),
  route('GET', '/v1/change-sets', listChangeSetsRoute),
  route('GET', '/v1/change-sets/:id', getChangeSet),
  route('GET', '/v1/sync', syncStatusRoute),
  route('POST', '/v1/sync/conflicts/:memoryId/resolve', resolveSyncConflictRoute),
  route('POST', '/mcp', async (context) => {
    const body = await readRequiredJsonBody(context.request, context.maxBodyBytes);
    await handleMcpPost(context.request, context.response, body, {
      engram: context.engram,
      scopes: context.mcpScopes,
      version: context.version,
    });
    return undefined;
  }),
  // The stateless MCP endpoint has no SSE stream to open and no session to end.
  route('GET', '/mcp', methodNotAllowedForMcp),
  route('DELETE', '/mcp', methodNotAllowedForMcp),
];

/** Finds the handler for a method and path; unknown paths are 404, known paths with another method 405. */
export function matchRoute(
  method: string,
  pathname: string,
): { handler: RouteHandler; params: Record<string, string> } {
  const parts = pathname.split('/').slice(1);
  const allowed: string[] = [];
  for (const candidate of routes) {
    const params = matchSegments(candidate.segments, parts);
    if (!params) continue;
    if (candidate.method === method) return { handler: candidate.handler, params };
    allowed.push(candidate.method);
  }
  if (allowed.length > 0) {
    throw new HttpProblem('METHOD_NOT_ALLOWED', `${method} is not allowed on ${pathname}; use ${allowed.join(', ')}.`, {
      allow: allowed.join(', '),
    });
  }
  throw new HttpProblem(
    'ROUTE_NOT_FOUND',
    `No route ${JSON.stringify(pathname.slice(0, 120))}; see GET /health and /v1/memories.`,
  );
}

/** Whether a request goes to a public route (the viewer's files), which needs no bearer token. */
export function isPublicRoute(method: string, pathname: string): boolean {
  const parts = pathname.split('/').slice(1);
  return routes.some(
    (candidate) => candidate.public === true && candidate.method === method && matchSegments(candidate.segments, parts),
  );
}

function route(method: string, pattern: string, handler: RouteHandler, options: { public?: boolean } = {}): Route {
  return { method, segments: pattern.split('/').slice(1), handler, ...(options.public && { public: true }) };
}

function matchSegments(segments: string[], parts: string[]): Record<string, string> | undefined {
  if (segments.length !== parts.length) return undefined;
  const params: Record<string, string> = {};
  for (let index = 0; index < segments.length; index += 1) {
    const segment = segments[index]!;
    const part = parts[index]!;
    if (segment.startsWith(':')) {
      if (part === '') return undefined;
      params[segment.slice(1)] = part;
    } else if (segment !== part) {
      return undefined;
    }
  }
  return params;
}

async function methodNotAllowedForMcp(): Promise<never> {
  throw new HttpProblem(
    'METHOD_NOT_ALLOWED',
    'This MCP endpoint is stateless: send JSON-RPC messages with POST /mcp.',
    { allow: 'POST' },
  );
}

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

async function recall(context: RouteContext): Promise<JsonReply> {
  const input = parseInput(
    recallBody,
    await readRequiredJsonBody(context.request, context.maxBodyBytes),
    'recall request',
  );
  const result = await context.engram.recall(input.query, {
    scopes: requestScopes(context, input.scopes),
    ...(input.topK !== undefined && { topK: input.topK }),
    ...(input.minScore !== undefined && { minScore: input.minScore }),
    ...(input.types && { types: input.types }),
    ...(input.recordAccess !== undefined && { recordAccess: input.recordAccess }),
    ...(input.asOf !== undefined && { asOf: input.asOf }),
    ...(input.includeInvalid === true && { includeInvalid: true }),
  });
  return ok(recallResultJson(result, new Date().toISOString(), context.engram.settings.recall));
}

/** Queues a finished turn for background extraction and answers at once (202): the work runs in the service's worker. */
async function queueTurn(context: RouteContext): Promise<JsonReply> {
  const input = parseInput(turnBody, await readRequiredJsonBody(context.request, context.maxBodyBytes), 'turn');
  if (!context.extractor) throw new HttpProblem('EXTRACTION_UNAVAILABLE', 'This server does not run extraction.');
  const { recalled, ...conversation } = input;
  const result = await context.extractor.afterTurn(conversation as Conversation, recalled ? { recalled } : {});
  return { status: 202, body: result };
}

async function undo(context: RouteContext): Promise<JsonReply> {
  const input = parseInput(undoBody, await readRequiredJsonBody(context.request, context.maxBodyBytes), 'undo request');
  // A change set (cs_…, a dream's run) is undone whole, as `engram undo <cs_…>` does.
  if (isChangeSetId(input.changeId)) {
    const result = await context.engram.changeSets.undo(input.changeId, {
      scopes: readableScopes(context, input.scopes),
      actor: context.actor,
    });
    return ok(changeSetUndoJson(result));
  }
  const undone = await context.engram.undo(input.changeId, {
    actor: context.actor,
    scopes: requestScopes(context, input.scopes),
  });
  return ok({ change: undone });
}

async function stats(context: RouteContext): Promise<JsonReply> {
  await assertNoBody(context);
  const { scope } = parseInput(scopedQuery, queryObject(context.url.searchParams), 'query');
  const scopes = requestScopes(context, scope);
  return ok({ scopes, stats: await context.engram.stats(scopes) });
}

async function sendAsset(response: ServerResponse, name: string): Promise<undefined> {
  sendViewerAsset(response, name);
  return undefined;
}

/** What the viewer shows before anything else: the scopes it reads, the budgets and limits of this service. */
async function info(context: RouteContext): Promise<JsonReply> {
  await assertNoBody(context);
  parseInput(emptyBody, queryObject(context.url.searchParams), 'query');
  const { engram } = context;
  const { recall: recallSettings, injection } = engram.settings;
  // Every project the store holds, so the viewer can show another than the service's own.
  const projects = Object.keys((await engram.stats('all')).byScope)
    .filter((scope) => scope.startsWith('project:'))
    .sort();
  return ok({
    version: context.version,
    defaultScope: engram.defaultScope,
    readScopes: engram.readScopes,
    projects,
    store: { backend: engram.storage.info().backend },
    recall: {
      topK: recallSettings.topK,
      minScore: recallSettings.minScore,
      staleDays: recallSettings.staleDays,
      ageNoteDays: recallSettings.ageNoteDays,
    },
    injection: { maxTokens: injection.maxTokens },
    extraction: { queue: engram.jobs.available, running: context.extractor !== undefined },
  });
}

/** The injection preview: the static part and the `<memory_context>` block a model would receive, with token counts. */
async function memoryContext(context: RouteContext): Promise<JsonReply> {
  const input = parseInput(
    contextBody,
    await readRequiredJsonBody(context.request, context.maxBodyBytes),
    'context request',
  );
  const built = await context.engram.buildMemoryContext(input.query, {
    scopes: requestScopes(context, input.scopes),
    ...(input.maxTokens !== undefined && { maxTokens: input.maxTokens }),
    ...(input.topK !== undefined && { topK: input.topK }),
    ...(input.minScore !== undefined && { minScore: input.minScore }),
    ...(input.types && { types: input.types }),
    recordAccess: input.recordAccess ?? false,
  });
  const summary = (entry: (typeof built.included)[number]) => ({
    id: entry.memory.id,
    name: entry.memory.name,
    type: entry.memory.type,
    scope: entry.memory.scope,
    score: entry.score,
    source: entry.source,
    tokens: entry.tokens,
  });
  return ok({
    query: built.query,
    scopes: built.scopes,
    staticPart: built.staticPart,
    block: built.block,
    tokens: built.tokens,
    included: built.included.map(summary),
    omitted: built.omitted.map(summary),
    warnings: built.warnings,
  });
}

async function usage(context: RouteContext): Promise<JsonReply> {
  await assertNoBody(context);
  const { scope } = parseInput(scopedQuery, queryObject(context.url.searchParams), 'query');
  const scopes = requestScopes(context, scope);
  return ok({ scopes, usage: await usageStats(context.engram, scopes) });
}

/** The viewer's consolidation runs: the latest change sets of the read scopes and the dream's state. */
async function listChangeSetsRoute(context: RouteContext): Promise<JsonReply> {
  await assertNoBody(context);
  const query = parseInput(changeSetsQuery, queryObject(context.url.searchParams), 'query');
  const scopes = readableScopes(context, query.scope);
  const [changeSets, dream] = await Promise.all([
    context.engram.changeSets.list({ scopes, ...(query.limit !== undefined && { limit: query.limit }) }),
    context.engram.dream.status(),
  ]);
  return ok({ changeSets, dream: dream ?? null });
}

/** One change set with the change it made to each memory (before and after). */
async function getChangeSet(context: RouteContext): Promise<JsonReply> {
  await assertNoBody(context);
  const id = pathId(context, 'change set');
  const scopes = readableScopes(context, undefined);
  return ok(await context.engram.changeSets.get(id, { scopes }));
}

/** Named scopes (or the read scopes), never beyond what this service may read. */
function readableScopes(context: RouteContext, named: readonly string[] | undefined): Scope[] {
  const readable = new Set(context.engram.readScopes);
  const scopes = requestScopes(context, named);
  const outside = scopes.find((scope) => !readable.has(scope));
  if (outside !== undefined)
    throw new EngramError('INVALID_SCOPE', `Scope ${JSON.stringify(outside.slice(0, 80))} is not readable here.`);
  return scopes;
}

async function listJobs(context: RouteContext): Promise<JsonReply> {
  await assertNoBody(context);
  const query = parseInput(jobsQuery, queryObject(context.url.searchParams), 'query');
  const list = await context.engram.jobs.list({
    ...(query.state !== undefined && { states: query.state }),
    ...(query.limit !== undefined && { limit: query.limit }),
  });
  // Runs of every process that shares the store (hooks' workers, the CLI), kept in the store; a
  // store without checkpoints has only what this service ran since it started.
  const recent = (await context.engram.jobs.recent()) ?? (context.recentExtractions?.() ?? []).map(jobOutcomeJson);
  return ok({ ...list, recent });
}

/** Puts a failed job back to pending now (the worker picks it up). */
async function retryJob(context: RouteContext): Promise<JsonReply> {
  const id = pathId(context, 'job');
  parseInput(emptyBody, (await readJsonBody(context.request, context.maxBodyBytes)) ?? {}, 'body');
  parseInput(emptyBody, queryObject(context.url.searchParams), 'query');
  return ok({ job: await context.engram.jobs.retry(id) });
}

function pathId(context: RouteContext, what: string): string {
  let decoded: string;
  try {
    decoded = decodeURIComponent(context.params.id ?? '');
  } catch {
    throw new EngramError('INVALID_INPUT', `The ${what} id in the path is not valid percent-encoding.`);
  }
  if (!/^[A-Za-z0-9_-]{1,200}$/.test(decoded))
    throw new EngramError('INVALID_INPUT', `Invalid ${what} id ${JSON.stringify(decoded.slice(0, 80))}.`);
  return decoded;
}

function ok(body: unknown): JsonReply {
  return { status: 200, body };
}

/** The scopes a request names, or the library's read scopes when it names none. */
function requestScopes(context: RouteContext, named: readonly string[] | undefined): Scope[] {
  if (named === undefined) return [...context.engram.readScopes];
  if (named.length === 0) throw new EngramError('INVALID_SCOPE', 'Name at least one scope, or leave the scope out.');
  return named.map((scope) => assertScope(scope));
}

function memoryId(context: RouteContext): string {
  let decoded: string;
  try {
    decoded = decodeURIComponent(context.params.id ?? '');
  } catch {
    throw new EngramError('INVALID_INPUT', 'The memory id in the path is not valid percent-encoding.');
  }
  return assertMemoryId(decoded);
}

function notFound(what: string, id: string): EngramError {
  return new EngramError('NOT_FOUND', `No ${what} with id ${JSON.stringify(id.slice(0, 140))}.`);
}

/** GET and DELETE take no body; one sent anyway is refused rather than silently ignored. */
async function assertNoBody(context: RouteContext): Promise<void> {
  const body = await readJsonBody(context.request, context.maxBodyBytes);
  if (body !== undefined)
    throw new EngramError('INVALID_INPUT', `${context.request.method} ${context.url.pathname} takes no body.`);
}
