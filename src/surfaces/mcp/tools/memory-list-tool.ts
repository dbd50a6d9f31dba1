import { z } from 'zod';
import { formatMemoryLine, memorySummary } from '../memory-mcp-format.js';
import { memoryType, scopeField } from './memory-mcp-fields.js';
import { memoryMcpTool, textResult } from './memory-mcp-tool.js';

/** `memory_list`: memories newest first, a page at a time (engram.list, engram.count). */
export const memoryListTool = memoryMcpTool({
  name: 'memory_list',
  title: 'List memories',
  description: ({ scopeList }) =>
    `List memories newest first (id, type, scope, name, description; use memory_get for the content). Lists all of ${scopeList} unless a scope is given.`,
  inputSchema: ({ scopeList }) => ({
    type: memoryType.optional().describe('Only memories of this type.'),
    scope: scopeField.optional().describe(`Only this scope; one of ${scopeList}.`),
    archived: z
      .enum(['exclude', 'include', 'only'])
      .optional()
      .describe('Archived memories: exclude (default), include or only.'),
    limit: z.number().int().min(1).max(200).optional().describe('At most this many; default 50.'),
    offset: z.number().int().min(0).optional().describe('Skip this many (for paging).'),
  }),
  annotations: { readOnlyHint: true, openWorldHint: false },
  async run(input, { engram, readScopes }) {
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
  },
});
