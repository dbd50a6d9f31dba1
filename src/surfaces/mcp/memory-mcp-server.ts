import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { EngramError, isEngramError } from '../../kernel/errors.js';
import { describePurgeResidue } from '../../memory/memory-purge.js';
import { buildMemoryIndex } from '../../memory/memory-index.js';
import { MEMORY_TYPES, type MemoryPatch } from '../../memory/memory.js';
import { assertScope, type Scope } from '../../memory/scope.js';
import type { Engram } from '../../engram.js';
import { formatMemory, formatMemoryLine, formatRankedMemory, memorySummary } from './memory-mcp-format.js';
import { MemoryTool } from '../../memory-tool/memory-tool.js';
import { registerMemoryFileTools } from './memory-file-mcp-tools.js';
import { isAsOf } from '../../consolidation/as-of.js';

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

const memoryType = z.enum(MEMORY_TYPES);
const memoryId = z
  .string()
  .min(1)
  .max(200)
  .describe('The memory id, as returned by memory_save, memory_search or memory_list.');

/**
 * An MCP server whose tools save, search, get, update, forget and list memories, confined to
 * `options.scopes`: a memory outside them does not exist for the client, a scope outside them is refused.
 * @example
 * const server = createMemoryMcpServer(engram, { scopes: ['project:github.com/acme/app', 'global'], version: '0.1.0' });
 * await server.connect(new StdioServerTransport());
 */
export function createMemoryMcpServer(engram: Engram, options: MemoryMcpServerOptions): McpServer {
  if (options.scopes.length === 0) throw new EngramError('INVALID_SCOPE', 'The MCP server needs at least one scope.');
  const scopes = [...new Set(options.scopes.map((scope) => assertScope(scope)))];
  const actor = options.actor ?? 'mcp';
  const log = options.log ?? ((message: string) => process.stderr.write(`${message}\n`));
  const scopeList = scopes.map((scope) => JSON.stringify(scope)).join(', ');
  const scopeField = z.string().max(400);

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
  const readScopes = (scope: string | undefined): Scope[] => (scope === undefined ? scopes : [allowedScope(scope)]);

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

  server.registerTool(
    'memory_save',
    {
      title: 'Save a memory',
      description:
        'Save one self-contained fact that should change future behaviour, written so it reads on its own ' +
        '("The user\'s database is PostgreSQL 15", not "it uses PG"). Types: user (who the user is, preferences), ' +
        'feedback (corrections and confirmed ways of working; say Why and How to apply), project (facts and decisions not visible in the code), ' +
        'reference (where things live outside the code), procedure (a reusable how-to). Never save secrets, code patterns, git history or in-progress task state. ' +
        'A fact that nearly repeats a saved one updates that memory instead of adding another. ' +
        `Scope defaults to ${JSON.stringify(scopes[0])}; allowed: ${scopeList}.`,
      inputSchema: {
        content: z.string().min(1).describe('The fact, in Markdown. One fact per memory.'),
        type: memoryType.optional().describe('Kind of memory; default "project".'),
        name: z
          .string()
          .max(200)
          .optional()
          .describe('Short lowercase slug, e.g. "database-version"; derived from the content when left out.'),
        description: z
          .string()
          .max(1000)
          .optional()
          .describe('One line saying what this memory is about; derived when left out.'),
        importance: z
          .number()
          .min(0)
          .max(1)
          .optional()
          .describe('0..1, default 0.5; higher is recalled first and kept longer.'),
        scope: scopeField.optional().describe(`Where the memory lives; one of ${scopeList}.`),
      },
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    },
    async (input) =>
      run(async () => {
        const result = await engram.save(
          {
            content: input.content,
            scope: input.scope === undefined ? scopes[0]! : allowedScope(input.scope),
            source: { origin: actor },
            ...(input.type !== undefined && { type: input.type }),
            ...(input.name !== undefined && { name: input.name }),
            ...(input.description !== undefined && { description: input.description }),
            ...(input.importance !== undefined && { importance: input.importance }),
          },
          { actor },
        );
        const { memory } = result;
        if (result.action === 'merged') {
          return textResult(
            `Updated existing memory \`${memory.id}\` ("${memory.name}") instead of saving a near-duplicate (similarity ${result.similarity!.toFixed(2)}).`,
            { memory, action: result.action, mergedInto: memory.id },
          );
        }
        return textResult(`Saved memory \`${memory.id}\` (${memory.type}, ${memory.scope}) as "${memory.name}".`, {
          memory,
          action: result.action,
        });
      }),
  );

  server.registerTool(
    'memory_search',
    {
      title: 'Search memories',
      description:
        'Find the memories most relevant to a natural-language question, best first, each with its score ' +
        '(relevance × recency × importance). Ask plainly, e.g. "which database does the project use?". ' +
        `Searches all of ${scopeList} unless a scope is given. Archived and invalidated memories are left out.`,
      inputSchema: {
        query: z.string().min(1).max(10_000).describe('A question or keywords.'),
        topK: z
          .number()
          .int()
          .min(1)
          .max(50)
          .optional()
          .describe('How many memories to return at most; default 8 (setting recall.topK).'),
        scope: scopeField.optional().describe(`Search only this scope; one of ${scopeList}.`),
        types: z.array(memoryType).min(1).optional().describe('Only memories of these types.'),
        asOf: z
          .string()
          .max(40)
          .refine(isAsOf, { message: 'an ISO date such as 2026-03-09 or 2026-03-09T10:00:00Z' })
          .optional()
          .describe('What was true then: memories valid at this ISO date, invalidated ones included.'),
        includeInvalid: z.boolean().optional().describe('Also invalidated and superseded memories.'),
      },
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    async (input) =>
      run(async () => {
        const result = await engram.recall(input.query, {
          scopes: readScopes(input.scope),
          ...(input.topK !== undefined && { topK: input.topK }),
          ...(input.types && { types: input.types }),
          ...(input.asOf !== undefined && { asOf: input.asOf }),
          ...(input.includeInvalid === true && { includeInvalid: true }),
        });
        const found = result.memories;
        const text =
          found.length === 0
            ? `No memories match ${JSON.stringify(input.query)}.`
            : [
                `Found ${found.length} ${found.length === 1 ? 'memory' : 'memories'} for ${JSON.stringify(input.query)}:`,
                '',
                ...found.map((entry, index) => formatRankedMemory(entry, index + 1)),
              ].join('\n');
        return textResult(text, {
          memories: found.map(({ memory, parts }) => ({
            ...memorySummary(memory),
            content: memory.content,
            score: parts.score,
            parts,
          })),
        });
      }),
  );

  server.registerTool(
    'memory_get',
    {
      title: 'Read a memory',
      description: 'Read one memory in full by its id: content, type, scope, importance, validity and dates.',
      inputSchema: { id: memoryId },
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    async (input) =>
      run(async () => {
        const memory = await engram.get(input.id, scopes);
        return textResult(formatMemory(memory), { memory });
      }),
  );

  server.registerTool(
    'memory_update',
    {
      title: 'Update a memory',
      description:
        'Change fields of an existing memory (give only the fields to change). Prefer this over saving a near-duplicate ' +
        'when a fact was refined or corrected. The previous version stays in history and can be undone.',
      inputSchema: {
        id: memoryId,
        content: z.string().min(1).optional().describe('New content (replaces the old content).'),
        type: memoryType.optional(),
        name: z.string().max(200).optional().describe('New slug name.'),
        description: z.string().max(1000).optional().describe('New one-line description.'),
        importance: z.number().min(0).max(1).optional().describe('New importance, 0..1.'),
      },
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    async ({ id, ...fields }) =>
      run(async () => {
        const patch: MemoryPatch = {};
        for (const [key, value] of Object.entries(fields))
          if (value !== undefined) (patch as Record<string, unknown>)[key] = value;
        if (Object.keys(patch).length === 0) {
          throw new EngramError(
            'INVALID_INPUT',
            'Give at least one field to change: content, type, name, description or importance.',
          );
        }
        const memory = await engram.update(id, patch, { actor, scopes });
        return textResult(`Updated memory \`${memory.id}\`.\n\n${formatMemory(memory)}`, { memory });
      }),
  );

  server.registerTool(
    'memory_forget',
    {
      title: 'Forget a memory',
      description:
        'Forget a memory that is wrong or no longer useful. By default it is archived: kept, but left out of search and lists. ' +
        'With hard: true it is deleted for good; use that only when the user asks. ' +
        'With purge: true it is deleted with its history, the jobs and records that quote it, and the files are vacuumed (for a secret the user wants erased); the answer lists any place a copy may remain. It cannot be undone.',
      inputSchema: {
        id: memoryId,
        hard: z.boolean().optional().describe('Delete for good instead of archiving; default false.'),
        purge: z
          .boolean()
          .optional()
          .describe('Delete with its history, leaving no copy in the store; cannot be undone. Default false.'),
      },
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    },
    async (input) =>
      run(async () => {
        if (input.purge === true) {
          const purged = await engram.purge(input.id, { actor, scopes });
          return textResult(
            `Purged memory \`${input.id}\`: deleted with its history; ${describePurgeResidue(purged)}.`,
            {
              id: input.id,
              deleted: true,
              purged: true,
              ...purged,
            },
          );
        }
        const hard = input.hard ?? false;
        const memory = await engram.forget(input.id, { hard, actor, scopes });
        if (hard || !memory)
          return textResult(`Deleted memory \`${input.id}\` for good.`, { id: input.id, deleted: true });
        return textResult(`Archived memory \`${memory.id}\` ("${memory.name}"): kept, but left out of search.`, {
          id: memory.id,
          deleted: false,
          memory,
        });
      }),
  );

  server.registerTool(
    'memory_list',
    {
      title: 'List memories',
      description: `List memories newest first (id, type, scope, name, description; use memory_get for the content). Lists all of ${scopeList} unless a scope is given.`,
      inputSchema: {
        type: memoryType.optional().describe('Only memories of this type.'),
        scope: scopeField.optional().describe(`Only this scope; one of ${scopeList}.`),
        archived: z
          .enum(['exclude', 'include', 'only'])
          .optional()
          .describe('Archived memories: exclude (default), include or only.'),
        limit: z.number().int().min(1).max(200).optional().describe('At most this many; default 50.'),
        offset: z.number().int().min(0).optional().describe('Skip this many (for paging).'),
      },
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    async (input) =>
      run(async () => {
        const filter = {
          scopes: readScopes(input.scope),
          ...(input.type && { types: [input.type] }),
          ...(input.archived && { archived: input.archived }),
        };
        const limit = input.limit ?? 50;
        const offset = input.offset ?? 0;
        const [memories, total] = await Promise.all([engram.list({ ...filter, limit, offset }), engram.count(filter)]);
        const header =
          memories.length === 0
            ? 'No memories.'
            : `Showing ${offset + 1}-${offset + memories.length} of ${total} memories:`;
        return textResult([header, ...memories.map(formatMemoryLine)].join('\n'), {
          memories: memories.map(memorySummary),
          total,
          limit,
          offset,
        });
      }),
  );

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
      const memories = await engram.list({ scopes });
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

function textResult(text: string, structuredContent: Record<string, unknown>): CallToolResult {
  return { content: [{ type: 'text', text }], structuredContent };
}

function errorResult(text: string): CallToolResult {
  return { content: [{ type: 'text', text }], isError: true };
}
