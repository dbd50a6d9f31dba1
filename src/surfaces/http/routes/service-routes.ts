import type { ServerResponse } from 'node:http';
import { sendViewerAsset } from '../../viewer/viewer-assets.js';
import { usageStats } from '../../viewer/viewer-usage.js';
import { readRequiredJsonBody } from '../http-body.js';
import { HttpProblem } from '../http-errors.js';
import { handleMcpPost } from '../http-mcp-endpoint.js';
import { emptyBody, parseInput, queryObject, scopedQuery } from '../http-schemas.js';
import { resolveSyncConflictRoute, syncStatusRoute } from '../http-sync-route.js';
import {
  assertNoBody,
  ok,
  requestScopes,
  route,
  type JsonReply,
  type Route,
  type RouteContext,
} from '../http-route-context.js';

/** The service itself: health, what the viewer reads first, counts, the viewer's files, sync, and MCP over HTTP. */
export const serviceRoutes: Route[] = [
  route('GET', '/health', async ({ version }) => ok({ status: 'ok', version })),
  route('GET', '/v1/stats', stats),
  // The web viewer (src/surfaces/viewer): its page and files, and the reads only it needs.
  route('GET', '/', async ({ response }) => sendAsset(response, 'index.html'), { public: true }),
  route('GET', '/viewer/:file', async ({ response, params }) => sendAsset(response, params.file ?? ''), {
    public: true,
  }),
  route('GET', '/v1/info', info),
  route('GET', '/v1/stats/usage', usage),
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

async function methodNotAllowedForMcp(): Promise<never> {
  throw new HttpProblem(
    'METHOD_NOT_ALLOWED',
    'This MCP endpoint is stateless: send JSON-RPC messages with POST /mcp.',
    { allow: 'POST' },
  );
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

async function usage(context: RouteContext): Promise<JsonReply> {
  await assertNoBody(context);
  const { scope } = parseInput(scopedQuery, queryObject(context.url.searchParams), 'query');
  const scopes = requestScopes(context, scope);
  return ok({ scopes, usage: await usageStats(context.engram, scopes) });
}
