import { z } from 'zod';
import { isAsOf } from '../../../consolidation/as-of.js';
import { formatRankedMemory, memorySummary } from '../memory-mcp-format.js';
import { memoryType, scopeField } from './memory-mcp-fields.js';
import { memoryMcpTool, textResult } from './memory-mcp-tool.js';

/** `memory_search`: the memories most relevant to a question, best first (engram.recall, as-of included). */
export const memorySearchTool = memoryMcpTool({
  name: 'memory_search',
  title: 'Search memories',
  description: ({ scopeList }) =>
    'Find the memories most relevant to a natural-language question, best first, each with its score ' +
    '(relevance × recency × importance). Ask plainly, e.g. "which database does the project use?". ' +
    `Searches all of ${scopeList} unless a scope is given. Archived and invalidated memories are left out.`,
  inputSchema: ({ scopeList }) => ({
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
  }),
  annotations: { readOnlyHint: true, openWorldHint: false },
  async run(input, { engram, readScopes }) {
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
  },
});
