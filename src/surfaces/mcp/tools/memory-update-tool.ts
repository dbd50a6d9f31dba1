import { z } from 'zod';
import { EngramError } from '../../../kernel/errors.js';
import type { MemoryPatch } from '../../../memory/memory.js';
import { formatMemory } from '../memory-mcp-format.js';
import { memoryId, memoryType } from './memory-mcp-fields.js';
import { memoryMcpTool, textResult } from './memory-mcp-tool.js';

/** `memory_update`: changes fields of a memory; the old version stays in history (engram.update). */
export const memoryUpdateTool = memoryMcpTool({
  name: 'memory_update',
  title: 'Update a memory',
  description: () =>
    'Change fields of an existing memory (give only the fields to change). Prefer this over saving a near-duplicate ' +
    'when a fact was refined or corrected. The previous version stays in history and can be undone.',
  inputSchema: () => ({
    id: memoryId,
    content: z.string().min(1).optional().describe('New content (replaces the old content).'),
    type: memoryType.optional(),
    name: z.string().max(200).optional().describe('New slug name.'),
    description: z.string().max(1000).optional().describe('New one-line description.'),
    importance: z.number().min(0).max(1).optional().describe('New importance, 0..1.'),
  }),
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  async run({ id, ...fields }, { engram, scopes, actor }) {
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
  },
});
