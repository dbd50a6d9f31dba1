import type { Scope } from '../../memory/scope.js';
import { MEMORY_MCP_SNAPSHOT } from './memory-mcp-snapshot-data.js';
import type { MemoryMcpSnapshot } from './memory-mcp-snapshot-types.js';

// `engram mcp`'s first answers without the MCP SDK or the store: a client (Claude Code at every
// session start) asks initialize and tools/list before any tool runs, and loading the SDK, zod and
// the store took four times as long as starting Node. The answers are the real server's, recorded
// by memory-mcp-snapshot-maker.ts for a placeholder scope and filled in here; anything else (a tool
// call, a malformed request) waits for the real server.

/** The project scope the snapshot is recorded with; the served project's scope replaces it. */
export const SNAPSHOT_SCOPE = 'project:engram-mcp-snapshot-scope';

/** One JSON-RPC answer the snapshot gives, or `undefined` when the real server must answer. */
export type SnapshotAnswer = { reply?: Record<string, unknown> } | undefined;

/** The snapshot's answers for a server of these scopes and version, or undefined when it cannot serve them. */
export interface SnapshotServer {
  answer(message: unknown): SnapshotAnswer;
}

/**
 * The snapshot filled in for `scopes` (the project's scope, then `global`, as `engram mcp` serves)
 * and `version`; undefined for scopes of another shape (the real server answers everything then).
 */
export function snapshotServer(options: {
  scopes: readonly Scope[];
  version: string;
  snapshot?: MemoryMcpSnapshot;
}): SnapshotServer | undefined {
  const snapshot = options.snapshot ?? MEMORY_MCP_SNAPSHOT;
  const [project, second, ...rest] = options.scopes;
  if (project === undefined || !project.startsWith('project:') || second !== 'global' || rest.length > 0)
    return undefined;
  const filled = fillScope(snapshot, project);
  const serverInfo = { ...filled.initialize.serverInfo, version: options.version };
  const handled = new Set(filled.methods);
  return {
    answer(message) {
      const request = wellFormedRequest(message);
      if (!request) return undefined;
      const { id, method, params } = request;
      if (method === 'notifications/initialized' && id === undefined) return {};
      if (id === undefined) return undefined;
      if (method === 'initialize') {
        const asked = initializeVersion(params);
        if (asked === undefined) return undefined;
        const protocolVersion = filled.protocolVersions.includes(asked) ? asked : filled.latestProtocolVersion;
        return reply(id, {
          protocolVersion,
          capabilities: filled.initialize.capabilities,
          serverInfo,
          ...(filled.initialize.instructions !== undefined && { instructions: filled.initialize.instructions }),
        });
      }
      if (method === 'ping') return reply(id, {});
      if (method === 'tools/list' || method === 'resources/list' || method === 'resources/templates/list') {
        if (params !== undefined && (params.cursor !== undefined || params._meta !== undefined)) return undefined;
        return reply(id, filled.lists[method]);
      }
      if (!handled.has(method) && (params === undefined || params._meta === undefined))
        return { reply: { jsonrpc: '2.0', id, error: { code: -32601, message: 'Method not found' } } };
      return undefined;
    },
  };
}

function reply(id: string | number, result: Record<string, unknown>): SnapshotAnswer {
  return { reply: { jsonrpc: '2.0', id, result } };
}

/** A JSON-RPC request or notification the snapshot may answer: params absent or a plain object. */
function wellFormedRequest(
  message: unknown,
): { id?: string | number; method: string; params?: Record<string, unknown> } | undefined {
  if (message === null || typeof message !== 'object' || Array.isArray(message)) return undefined;
  const { jsonrpc, id, method, params, ...rest } = message as Record<string, unknown>;
  if (jsonrpc !== '2.0' || typeof method !== 'string' || Object.keys(rest).length > 0) return undefined;
  if (id !== undefined && typeof id !== 'string' && !(typeof id === 'number' && Number.isInteger(id))) return undefined;
  if (params !== undefined && (params === null || typeof params !== 'object' || Array.isArray(params)))
    return undefined;
  return {
    method,
    ...(id !== undefined && { id: id as string | number }),
    ...(params !== undefined && { params: params as Record<string, unknown> }),
  };
}

/** The protocol version an initialize asks for, when its params are what the SDK accepts; else undefined. */
function initializeVersion(params: Record<string, unknown> | undefined): string | undefined {
  const info = params?.clientInfo as Record<string, unknown> | undefined;
  const capabilities = params?.capabilities;
  if (
    typeof params?.protocolVersion !== 'string' ||
    capabilities === null ||
    typeof capabilities !== 'object' ||
    Array.isArray(capabilities) ||
    info === null ||
    typeof info !== 'object' ||
    typeof info.name !== 'string' ||
    typeof info.version !== 'string'
  )
    return undefined;
  return params.protocolVersion;
}

/** The snapshot with the project's scope where the placeholder was, in every string (quoted as JSON where it was). */
function fillScope(snapshot: MemoryMcpSnapshot, scope: string): MemoryMcpSnapshot {
  const quoted = JSON.stringify(SNAPSHOT_SCOPE);
  const fill = (value: unknown): unknown => {
    if (typeof value === 'string')
      return value.split(quoted).join(JSON.stringify(scope)).split(SNAPSHOT_SCOPE).join(scope);
    if (Array.isArray(value)) return value.map(fill);
    if (value !== null && typeof value === 'object')
      return Object.fromEntries(Object.entries(value).map(([key, entry]) => [key, fill(entry)]));
    return value;
  };
  return fill(snapshot) as MemoryMcpSnapshot;
}
