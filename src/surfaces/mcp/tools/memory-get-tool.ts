import { formatMemory } from '../memory-mcp-format.js';
import { memoryId } from './memory-mcp-fields.js';
import { memoryMcpTool, textResult } from './memory-mcp-tool.js';

/** `memory_get`: one memory in full (engram.get). */
export const memoryGetTool = memoryMcpTool({
  name: 'memory_get',
  title: 'Read a memory',
  description: () => 'Read one memory in full by its id: content, type, scope, importance, validity and dates.',
  inputSchema: () => ({ id: memoryId }),
  annotations: { readOnlyHint: true, openWorldHint: false },
  async run(input, { engram, scopes }) {
    const memory = await engram.get(input.id, scopes);
    return textResult(formatMemory(memory), { memory });
  },
});
