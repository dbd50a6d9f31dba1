import { HttpProblem } from './http-errors.js';
import type { Route, RouteHandler } from './http-route-context.js';
import { memoryRoutes } from './routes/memory-routes.js';
import { turnRoutes } from './routes/turn-routes.js';
import { activityRoutes } from './routes/activity-routes.js';
import { serviceRoutes } from './routes/service-routes.js';

/**
 * Every route of the service, mounted from one module per resource (routes/). A path's methods
 * live in one module, so a 405 names them in their declared order.
 */
const routes: readonly Route[] = [...serviceRoutes, ...memoryRoutes, ...turnRoutes, ...activityRoutes];

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
