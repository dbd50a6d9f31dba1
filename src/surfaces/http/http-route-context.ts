import type { IncomingMessage, ServerResponse } from 'node:http';
import { EngramError } from '../../kernel/errors.js';
import { assertMemoryId } from '../../memory/memory.js';
import { assertScope, type Scope } from '../../memory/scope.js';
import type { Engram } from '../../engram.js';
import type { Conversation } from '../../contracts/conversation.js';
import type { AfterTurnOptions, AfterTurnResult } from '../../extraction/extractor.js';
import type { JobOutcome } from '../../extraction/extraction-report.js';
import { readJsonBody } from './http-body.js';

// What every route module of the service shares: what a handler is given and answers, how a route
// is declared, and the checks of scopes, ids and bodies every resource applies the same way.

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

/** What the sync routes need of sync (`/v1/sync`); the service passes the library's calls bound to its store. */
export interface SyncRouteCalls {
  status(): Promise<unknown>;
  resolve(memoryId: string, keep: 'kept' | 'other', actor: string): Promise<unknown>;
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

export type RouteHandler = (context: RouteContext) => Promise<JsonReply | undefined>;

export interface Route {
  method: string;
  segments: string[];
  handler: RouteHandler;
  /** Served without the bearer token: the viewer's static files, which hold no data (the page asks for the token). */
  public?: boolean;
}

/** Declares a route: a method, a path pattern (`:name` segments are parameters) and its handler. */
export function route(
  method: string,
  pattern: string,
  handler: RouteHandler,
  options: { public?: boolean } = {},
): Route {
  return { method, segments: pattern.split('/').slice(1), handler, ...(options.public && { public: true }) };
}

export function ok(body: unknown): JsonReply {
  return { status: 200, body };
}

/** The scopes a request names, or the library's read scopes when it names none. */
export function requestScopes(context: RouteContext, named: readonly string[] | undefined): Scope[] {
  if (named === undefined) return [...context.engram.readScopes];
  if (named.length === 0) throw new EngramError('INVALID_SCOPE', 'Name at least one scope, or leave the scope out.');
  return named.map((scope) => assertScope(scope));
}

/** Named scopes (or the read scopes), never beyond what this service may read. */
export function readableScopes(context: RouteContext, named: readonly string[] | undefined): Scope[] {
  const readable = new Set(context.engram.readScopes);
  const scopes = requestScopes(context, named);
  const outside = scopes.find((scope) => !readable.has(scope));
  if (outside !== undefined)
    throw new EngramError('INVALID_SCOPE', `Scope ${JSON.stringify(outside.slice(0, 80))} is not readable here.`);
  return scopes;
}

export function memoryId(context: RouteContext): string {
  let decoded: string;
  try {
    decoded = decodeURIComponent(context.params.id ?? '');
  } catch {
    throw new EngramError('INVALID_INPUT', 'The memory id in the path is not valid percent-encoding.');
  }
  return assertMemoryId(decoded);
}

export function pathId(context: RouteContext, what: string): string {
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

export function notFound(what: string, id: string): EngramError {
  return new EngramError('NOT_FOUND', `No ${what} with id ${JSON.stringify(id.slice(0, 140))}.`);
}

/** GET and DELETE take no body; one sent anyway is refused rather than silently ignored. */
export async function assertNoBody(context: RouteContext): Promise<void> {
  const body = await readJsonBody(context.request, context.maxBodyBytes);
  if (body !== undefined)
    throw new EngramError('INVALID_INPUT', `${context.request.method} ${context.url.pathname} takes no body.`);
}
