import type { MemoryToolHandlers } from '@anthropic-ai/sdk/helpers/beta/memory';
import { ToolError } from '@anthropic-ai/sdk/lib/tools/ToolError';
import { MEMORY_TOOL_COMMANDS } from '../../contracts/memory-tool-definition.js';
import type { MemoryTool } from '../../memory-tool/memory-tool.js';

/**
 * Handlers for the Anthropic SDK's `betaMemoryTool(handlers)` (its tool runner), backed by engram's
 * memory tool. A refusal is thrown as the SDK's `ToolError` holding the protocol's text, which the
 * runner sends back as an `is_error` tool result exactly as written: a plain Error would come back
 * as `Error: <message>`, changing the reference strings that have no "Error:" of their own.
 * @example
 * const memory = betaMemoryTool(memoryToolHandlers(new MemoryTool({ engram })));
 * await client.beta.messages.toolRunner({ model, max_tokens: 1024, messages, tools: [memory] }).runUntilDone();
 */
export function memoryToolHandlers(tool: MemoryTool): MemoryToolHandlers {
  const handler =
    (command: (typeof MEMORY_TOOL_COMMANDS)[number]) =>
    async (input: object): Promise<string> => {
      const result = await tool.run({ ...input, command });
      if (result.isError) throw new ToolError(result.content);
      return result.content;
    };
  const handlers = Object.fromEntries(MEMORY_TOOL_COMMANDS.map((command) => [command, handler(command)]));
  return handlers as MemoryToolHandlers;
}
