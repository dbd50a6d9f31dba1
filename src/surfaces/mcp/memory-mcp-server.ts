import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { EngramError, isEngramError } from '../../kernel/errors.js';
import { buildMemoryIndex } from '../../memory/memory-index.js';
import { assertScope, type Scope } from '../../memory/scope.js';
import type { Engram } from '../../engram.js';
import { MemoryTool } from '../../memory-tool/memory-tool.js';
import { registerMemoryFileTools } from './memory-file-mcp-tools.js';
import { MEMORY_MCP_TOOLS } from './tools/memory-mcp-tools.js';
import { errorResult, type MemoryToolContext } from './tools/memory-mcp-tool.js';

export interface MemoryMcpServerOptions {
  /** The only scopes the tools may read or write; the first is where saves go by default. */
  scopes: readonly Scope[];
  version: string;
  /** Recorded in history for changes made through the tools (default `mcp`). */
  actor?: string;
  /** Where unexpected errors are reported (never to the client); default stderr. */
  log?: (message: string) => void;
}

export const MEMORY_INDEX_URI = 'memory://index';

/**
 * An MCP server whose tools save, search, get, update, forget and list memories, confined to
 * `options.scopes`: a memory outside them does not exist for the client, a scope outside them is refused.
 * Each tool is a module of `tools/` (MEMORY_MCP_TOOLS); this registers them, the memory-file tools
 * and the MEMORY.md resource.
 * @example
 * const server = createMemoryMcpServer(engram, { scopes: ['project:github.com/acme/app', 'global'], version: '0.1.0' });
 * await server.connect(new StdioServerTransport());
 */
export function createMemoryMcpServer(engram: Engram, options: MemoryMcpServerOptions): McpServer {
  if (options.scopes.length === 0) throw new EngramError('INVALID_SCOPE', 'The MCP server needs at least one scope.');
  const context = toolContext(engram, options);
  const { scopes, scopeList, actor } = context;
  const log = options.log ?? ((message: string) => process.stderr.write(`${message}\n`));

  /** Runs a tool body; every failure becomes an `isError` result reading `CODE: message`. */
  const run = async (work: () => Promise<CallToolResult>): Promise<CallToolResult> => {
    try {
      return await work();
    } catch (error) {
      if (isEngramError(error) && error.code !== 'INTERNAL') return errorResult(`${error.code}: ${error.message}`);
      log(`engram mcp: unexpected error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
      return errorResult('INTERNAL: Unexpected error in the memory server; see its log.');
    }
  };

  const server = new McpServer(
    { name: 'engram', version: options.version },
    {
      instructions:
        `Long-term memory shared across sessions. Search it (memory_search) before answering questions about the user, ` +
        `their preferences or this project; save (memory_save) facts that will matter in future sessions. Scopes available: ${scopeList}.`,
    },
  );

  for (const tool of MEMORY_MCP_TOOLS) {
    server.registerTool(
      tool.name,
      {
        title: tool.title,
        description: tool.description(context),
        inputSchema: tool.inputSchema(context),
        annotations: tool.annotations,
      },
      async (input: Record<string, unknown>) => run(() => tool.run(input, context)),
    );
  }

  // The same memories as files, through Anthropic's memory-tool protocol (memory_file_view, …).
  registerMemoryFileTools(server, new MemoryTool({ engram, scopes, defaultScope: scopes[0]!, actor }), log);

  server.registerResource(
    'memory-index',
    MEMORY_INDEX_URI,
    {
      title: 'MEMORY.md',
      description: `The index of active memories in ${scopeList}: one line per memory (name and description). Read a memory's content with memory_search or memory_get.`,
      mimeType: 'text/markdown',
    },
    async (uri) => {
      const memories = await engram.list({ scopes: [...scopes] });
      const index = buildMemoryIndex(memories, {
        maxLines: engram.settings.index.maxLines,
        maxBytes: engram.settings.index.maxBytes,
        entryMaxChars: engram.settings.index.entryMaxChars,
      });
      return { contents: [{ uri: uri.href, mimeType: 'text/markdown', text: index.text }] };
    },
  );

  return server;
}

/** The served scopes, checked and deduplicated, and the checks every tool applies to a scope it is given. */
function toolContext(engram: Engram, options: MemoryMcpServerOptions): MemoryToolContext {
  const scopes = [...new Set(options.scopes.map((scope) => assertScope(scope)))];
  const scopeList = scopes.map((scope) => JSON.stringify(scope)).join(', ');
  /** A named scope must be one this server serves. */
  const allowedScope = (scope: string): Scope => {
    if (!scopes.includes(scope)) {
      throw new EngramError(
        'INVALID_SCOPE',
        `Scope ${JSON.stringify(scope.slice(0, 120))} is not available here; use one of ${scopeList}.`,
      );
    }
    return scope;
  };
  return {
    engram,
    scopes,
    scopeList,
    actor: options.actor ?? 'mcp',
    allowedScope,
    readScopes: (scope) => (scope === undefined ? scopes : [allowedScope(scope)]),
  };
}
