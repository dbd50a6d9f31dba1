import { EngramError } from '../../kernel/errors.js';
import type { OpenedEngram } from '../../node/open-engram.js';
import { assertMemoryId } from '../../memory/memory.js';
import { readRequiredJsonBody } from './http-body.js';
import type { JsonReply, RouteContext, SyncRouteCalls } from './http-route-context.js';

/**
 * `GET /v1/sync`: how each sync remote stands and the conflicts to review (`syncStatus`, the same
 * call as `engram sync status`), for the viewer; a service with no remote (or a server started
 * without sync, a library embedding) answers `configured: false`, not an error, so the viewer can
 * say so. `POST /v1/sync/conflicts/:memoryId/resolve` with `{ "keep": "kept" | "other" }` resolves a
 * memory's open conflicts through the same call as `engram sync resolve` (undoable).
 */

/** The calls over an opened store: the same library entries as `engram sync status` and `engram sync resolve`. */
export function librarySyncCalls(opened: OpenedEngram, cwd: string): SyncRouteCalls {
  // Loaded on first use: a service that is never asked about sync does not load the sync engine.
  const load = () => import('../../sync/node/sync-store.js');
  return {
    status: async () => (await load()).syncStatus({ opened, cwd }),
    resolve: async (memoryId, keep, actor) => (await load()).resolveSyncConflict({ opened, memoryId, keep, actor }),
  };
}

const NOT_CONFIGURED = { configured: false, remotes: [], conflicts: [], notices: [] } as const;

export async function syncStatusRoute(context: RouteContext): Promise<JsonReply> {
  if (!context.sync) return { status: 200, body: NOT_CONFIGURED };
  return { status: 200, body: await context.sync.status() };
}

export async function resolveSyncConflictRoute(context: RouteContext): Promise<JsonReply> {
  const memoryId = context.params.memoryId ?? '';
  assertMemoryId(memoryId);
  const body = await readRequiredJsonBody(context.request, context.maxBodyBytes);
  const keep = (body as { keep?: unknown } | null)?.keep;
  if (keep !== 'kept' && keep !== 'other')
    throw new EngramError(
      'INVALID_INPUT',
      'Send { "keep": "kept" } (what recall has now) or { "keep": "other" } (the edit that lost).',
    );
  if (!context.sync)
    throw new EngramError('NOT_FOUND', `No open sync conflict for ${memoryId}: this service does not sync.`);
  return { status: 200, body: await context.sync.resolve(memoryId, keep, context.actor) };
}
