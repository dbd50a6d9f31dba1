import { z } from 'zod';
import { describePurgeResidue } from '../../../memory/memory-purge.js';
import { memoryId } from './memory-mcp-fields.js';
import { memoryMcpTool, textResult } from './memory-mcp-tool.js';

/** `memory_forget`: archive, delete for good (hard) or purge (engram.forget, engram.purge). */
export const memoryForgetTool = memoryMcpTool({
  name: 'memory_forget',
  title: 'Forget a memory',
  description: () =>
    'Forget a memory that is wrong or no longer useful. By default it is archived: kept, but left out of search and lists. ' +
    'With hard: true it is deleted for good; use that only when the user asks. ' +
    'With purge: true it is deleted with its history, the jobs and records that quote it, and the files are vacuumed (for a secret the user wants erased); the answer lists any place a copy may remain. It cannot be undone.',
  inputSchema: () => ({
    id: memoryId,
    hard: z.boolean().optional().describe('Delete for good instead of archiving; default false.'),
    purge: z
      .boolean()
      .optional()
      .describe('Delete with its history, leaving no copy in the store; cannot be undone. Default false.'),
  }),
  annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
  async run(input, { engram, scopes, actor }) {
    if (input.purge === true) {
      const purged = await engram.purge(input.id, { actor, scopes });
      return textResult(`Purged memory \`${input.id}\`: deleted with its history; ${describePurgeResidue(purged)}.`, {
        id: input.id,
        deleted: true,
        purged: true,
        ...purged,
      });
    }
    const hard = input.hard ?? false;
    const memory = await engram.forget(input.id, { hard, actor, scopes });
    if (hard || !memory) return textResult(`Deleted memory \`${input.id}\` for good.`, { id: input.id, deleted: true });
    return textResult(`Archived memory \`${memory.id}\` ("${memory.name}"): kept, but left out of search.`, {
      id: memory.id,
      deleted: false,
      memory,
    });
  },
});
