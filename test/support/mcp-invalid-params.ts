import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CallToolResultSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { expect } from 'vitest';

/** A tool result's text parts, joined. */
export function toolText(result: CallToolResult): string {
  return result.content.map((part) => (part.type === 'text' ? part.text : '')).join('\n');
}

/**
 * Through any transport: every tool answers arguments that are not an object with -32602, arguments
 * of the wrong types with a result naming -32602 (never -32603), and resources/read without a uri
 * with -32602.
 */
export async function expectEveryToolRefusesBadParams(client: Client): Promise<void> {
  const { tools } = await client.listTools();
  expect(tools.length).toBeGreaterThan(5);
  for (const tool of tools) {
    const notAnObject = client.request(
      { method: 'tools/call', params: { name: tool.name, arguments: 'not an object' } as never },
      CallToolResultSchema,
    );
    await expect(notAnObject, tool.name).rejects.toMatchObject({ code: -32602 });
    const wrongTypes = (await client.callTool({
      name: tool.name,
      arguments: { id: 5, content: 5, query: 5, path: 5, limit: 'many', archived: 'bogus', type: 'nope' },
    })) as CallToolResult;
    expect(wrongTypes.isError, tool.name).toBe(true);
    expect(toolText(wrongTypes), tool.name).toContain('-32602');
    expect(toolText(wrongTypes), tool.name).not.toContain('-32603');
  }
  await expect(
    client.request({ method: 'resources/read', params: {} as never }, CallToolResultSchema),
  ).rejects.toMatchObject({ code: -32602 });
}

/** The memory-tool protocol's commands as MCP tools (src/surfaces/mcp/memory-file-mcp-tools.ts), sorted: what a server must list. */
export const MEMORY_FILE_TOOL_NAMES = [
  'memory_file_create',
  'memory_file_delete',
  'memory_file_insert',
  'memory_file_rename',
  'memory_file_str_replace',
  'memory_file_view',
];
