import { EngramError } from '../kernel/errors.js';
import type { SessionTool, SessionToolOutput } from '../contracts/session-tool.js';
import type { ToolResultStore } from './tool-result-store.js';

// Room kept in a page for the line that says which bytes it holds and where the next page starts.
const PAGE_HEADER_BYTES = 512;

/** The tool that lets the model page through a stored result (by the tool use id or the path the preview names). */
export function readPersistedOutputTool(storage: ToolResultStore): SessionTool {
  return {
    definition: {
      name: 'read_persisted_output',
      description:
        'Reads a tool result that was too large to show in full and was saved to a file (a <persisted-output> block names the file). ' +
        `Give the tool_use_id of that result or the path, and an optional byte offset and limit (at most ${storage.pageBytes} bytes a page); ` +
        'the answer says where the next page starts.',
      inputSchema: {
        type: 'object',
        properties: {
          tool_use_id: { type: 'string', description: 'The id of the tool use whose result was saved.' },
          path: {
            type: 'string',
            description: 'The file the <persisted-output> block names (instead of tool_use_id).',
          },
          offset: { type: 'integer', minimum: 0, description: 'Byte offset to start at (default 0).' },
          limit: { type: 'integer', minimum: 1, description: `Bytes to read (default and most ${storage.pageBytes}).` },
        },
      },
    },
    async run(input): Promise<SessionToolOutput> {
      const toolUseId =
        typeof input.tool_use_id === 'string'
          ? input.tool_use_id
          : typeof input.path === 'string'
            ? storage.toolUseIdForPath(input.path)
            : undefined;
      if (toolUseId === undefined) {
        return {
          content: `Give tool_use_id, or the path of a file a <persisted-output> block named (under ${storage.directory}).`,
          isError: true,
        };
      }
      try {
        const room = Math.max(1, storage.thresholdBytes - PAGE_HEADER_BYTES);
        const limit =
          input.limit === undefined
            ? Math.min(storage.pageBytes, room)
            : typeof input.limit === 'number'
              ? Math.min(input.limit, room)
              : input.limit;
        const page = await storage.read(toolUseId, {
          ...(input.offset === undefined ? {} : { offset: input.offset as number }),
          limit: limit as number,
        });
        const end = page.offset + Buffer.byteLength(page.text, 'utf8');
        const next =
          page.nextOffset === undefined ? 'This is the end of the output.' : `Next page: offset ${page.nextOffset}.`;
        return {
          content: `Bytes ${page.offset} to ${end} of ${page.totalBytes} of the output of tool use ${toolUseId}. ${next}\n\n${page.text}`,
        };
      } catch (error) {
        if (error instanceof EngramError) return { content: error.message, isError: true };
        throw error;
      }
    },
  };
}
