import type { CallToolResult, ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import type { z } from 'zod';
import type { Engram } from '../../../engram.js';
import type { Scope } from '../../../memory/scope.js';

/** What every memory tool runs with: the library, the scopes this server serves and who changes are recorded for. */
export interface MemoryToolContext {
  engram: Engram;
  /** The only scopes the tools may read or write; the first is where saves go by default. */
  scopes: readonly Scope[];
  /** The scopes as a client reads them in a description: `"project:…", "global"`. */
  scopeList: string;
  actor: string;
  /** A named scope, if this server serves it; INVALID_SCOPE otherwise. */
  allowedScope(scope: string): Scope;
  /** The named scope (checked), or every scope this server serves. */
  readScopes(scope: string | undefined): Scope[];
}

/**
 * One MCP tool of the memory server: its name, what a client reads about it (title, description,
 * input schema, annotations: functions of the served scopes, which the descriptions name) and what
 * it runs. The server registers each of MEMORY_MCP_TOOLS in order; a failure thrown from `run` becomes
 * an `isError` result reading `CODE: message`.
 */
export interface MemoryMcpTool<Shape extends z.ZodRawShape = z.ZodRawShape> {
  name: string;
  title: string;
  description(context: MemoryToolContext): string;
  inputSchema(context: MemoryToolContext): Shape;
  annotations: ToolAnnotations;
  run(input: z.infer<z.ZodObject<Shape>>, context: MemoryToolContext): Promise<CallToolResult>;
}

/** Types a tool by its schema and forgets the schema's type, so tools of different shapes share one table. */
export function memoryMcpTool<Shape extends z.ZodRawShape>(tool: MemoryMcpTool<Shape>): MemoryMcpTool {
  return tool as unknown as MemoryMcpTool;
}

/** A tool's answer: text for the model, and the same result as JSON (structuredContent). */
export function textResult(text: string, structuredContent: Record<string, unknown>): CallToolResult {
  return { content: [{ type: 'text', text }], structuredContent };
}

export function errorResult(text: string): CallToolResult {
  return { content: [{ type: 'text', text }], isError: true };
}
