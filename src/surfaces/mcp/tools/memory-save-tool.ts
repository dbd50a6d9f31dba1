import { z } from 'zod';
import { memoryType, scopeField } from './memory-mcp-fields.js';
import { memoryMcpTool, textResult } from './memory-mcp-tool.js';

/** `memory_save`: one fact, or an update of its near-duplicate (engram.save). */
export const memorySaveTool = memoryMcpTool({
  name: 'memory_save',
  title: 'Save a memory',
  description: ({ scopes, scopeList }) =>
    'Save one self-contained fact that should change future behaviour, written so it reads on its own ' +
    '("The user\'s database is PostgreSQL 15", not "it uses PG"). Types: user (who the user is, preferences), ' +
    'feedback (corrections and confirmed ways of working; say Why and How to apply), project (facts and decisions not visible in the code), ' +
    'reference (where things live outside the code), procedure (a reusable how-to). Never save secrets, code patterns, git history or in-progress task state. ' +
    'A fact that nearly repeats a saved one updates that memory instead of adding another. ' +
    `Scope defaults to ${JSON.stringify(scopes[0])}; allowed: ${scopeList}.`,
  inputSchema: ({ scopeList }) => ({
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
  }),
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  async run(input, { engram, scopes, actor, allowedScope }) {
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
  },
});
