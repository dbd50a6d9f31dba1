import type { MemoryMcpTool } from './memory-mcp-tool.js';
import { memorySaveTool } from './memory-save-tool.js';
import { memorySearchTool } from './memory-search-tool.js';
import { memoryGetTool } from './memory-get-tool.js';
import { memoryUpdateTool } from './memory-update-tool.js';
import { memoryForgetTool } from './memory-forget-tool.js';
import { memoryListTool } from './memory-list-tool.js';

/**
 * The memory server's tools, in the order `tools/list` shows them (the recorded snapshot of
 * memory-mcp-snapshot-data.ts follows it). A new tool is a module here and a line in this list.
 */
export const MEMORY_MCP_TOOLS: readonly MemoryMcpTool[] = [
  memorySaveTool,
  memorySearchTool,
  memoryGetTool,
  memoryUpdateTool,
  memoryForgetTool,
  memoryListTool,
];
