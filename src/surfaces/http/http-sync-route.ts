import { EngramError } from '../../kernel/errors.js';
import type { JsonReply, RouteContext } from './http-routes.js';

/**
 * `GET /v1/sync`: how each sync remote stands and the conflicts to review (`syncStatus`, the same
 * call as `engram sync status`), for the viewer. The service passes the call in; a server started
 * without it (a library embedding) answers NOT_FOUND.
 */
export async function syncStatusRoute(context: RouteContext): Promise<JsonReply> {
  if (!context.syncStatus)
    throw new EngramError('NOT_FOUND', 'This service does not sync: run "engram serve" with a sync remote configured.');
  return { status: 200, body: await context.syncStatus() };
}
