import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { MemoryTool } from '../../memory-tool/memory-tool.js';

/** The memory-tool commands as MCP tools, one per command: `memory_file_view`, `memory_file_create`, … */
export const MEMORY_FILE_TOOL_NAMES = [
  'memory_file_view',
  'memory_file_create',
  'memory_file_str_replace',
  'memory_file_insert',
  'memory_file_delete',
  'memory_file_rename',
] as const;

const path = z
  .string()
  .describe('A path under /memories, e.g. /memories/user-preferences.md or /memories/global/commit-style.md.');

/**
 * Registers Anthropic's memory-tool protocol as six MCP tools over the same `MemoryTool` (same
 * files, same result and error strings). One tool per command rather than one `memory` tool with
 * a command field: each gets a schema with exactly its own required fields, and read-only or
 * destructive annotations that clients use to decide what to ask the user before running.
 */
export function registerMemoryFileTools(server: McpServer, tool: MemoryTool, log: (message: string) => void): void {
  /** Runs one command; refusals come back as the protocol's text with isError, store failures are logged and reported as INTERNAL. */
  const run = async (input: Record<string, unknown>): Promise<CallToolResult> => {
    try {
      const result = await tool.run(input);
      return { content: [{ type: 'text', text: result.content }], ...(result.isError && { isError: true }) };
    } catch (error) {
      log(
        `engram mcp: memory file tool failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
      );
      return {
        content: [{ type: 'text', text: 'INTERNAL: Unexpected error in the memory server; see its log.' }],
        isError: true,
      };
    }
  };
  const layout = tool.instructions;

  server.registerTool(
    'memory_file_view',
    {
      title: 'View memory files',
      description:
        'The memories as Markdown files with YAML frontmatter (Anthropic memory tool protocol). View /memories first: a folder gives a listing two levels deep with sizes; ' +
        `a file gives its lines numbered. view_range [start, end] reads part of a file (end -1 = to the end). ${layout}`,
      inputSchema: {
        path,
        view_range: z
          .array(z.number())
          .optional()
          .describe('For a file: [first line, last line], 1-based; last -1 reads to the end.'),
      },
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    async (input) => run({ command: 'view', ...input }),
  );

  server.registerTool(
    'memory_file_create',
    {
      title: 'Create a memory file',
      description:
        'Create (or overwrite) one memory as a file: the file name is its name; the text is the memory, optionally after frontmatter with description, ' +
        'metadata.type (user, feedback, project, reference, procedure) and metadata.importance (0..1). One self-contained fact per file; never secrets. ' +
        'A text that nearly repeats an existing memory of the folder updates that memory instead.',
      inputSchema: {
        path,
        file_text: z.string().describe('The whole file: optional frontmatter, then the memory in Markdown.'),
      },
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    async (input) => run({ command: 'create', ...input }),
  );

  server.registerTool(
    'memory_file_str_replace',
    {
      title: 'Edit a memory file',
      description:
        'Replace text that occurs exactly once in a memory file (frontmatter included: description, metadata.type, metadata.importance and the body may change). ' +
        'Omit new_str to delete old_str. The previous version stays in history.',
      inputSchema: {
        path,
        old_str: z.string().describe('Text that occurs exactly once in the file.'),
        new_str: z.string().optional().describe('The replacement; omit to delete old_str.'),
      },
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    },
    async (input) => run({ command: 'str_replace', ...input }),
  );

  server.registerTool(
    'memory_file_insert',
    {
      title: 'Insert into a memory file',
      description:
        'Insert text after a line of a memory file (numbers as memory_file_view shows them; the frontmatter stays at the top).',
      inputSchema: {
        path,
        insert_line: z.number().describe('The line after which to insert (0 = before the first line).'),
        insert_text: z.string().describe('The text to insert.'),
      },
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    },
    async (input) => run({ command: 'insert', ...input }),
  );

  server.registerTool(
    'memory_file_delete',
    {
      title: 'Delete a memory file',
      description:
        'Forget the memory a file holds: it is archived (kept in history, left out of recall and of these files). Folders and MEMORY.md cannot be deleted.',
      inputSchema: { path },
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    },
    async (input) => run({ command: 'delete', ...input }),
  );

  server.registerTool(
    'memory_file_rename',
    {
      title: 'Rename a memory file',
      description: 'Rename a memory (its file name is its name) within its folder; never overwrites an existing file.',
      inputSchema: {
        old_path: path.describe('The file to rename.'),
        new_path: path.describe('Its new path, in the same folder.'),
      },
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    },
    async (input) => run({ command: 'rename', ...input }),
  );
}
