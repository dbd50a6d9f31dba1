import type { ConversationMessage, ConversationToolCall } from '../contracts/conversation.js';

/**
 * Whether the main agent already wrote memory in a span (SPEC: then background extraction only
 * moves its cursor). Decided from what the transcript shows:
 * - a call of the memory tool (`memory`, Anthropic's protocol) with a writing command;
 * - a call of an engram MCP tool that writes (`mcp__<server>__remember`, `…__memory_create`, …);
 * - a Claude Code file tool (Write, Edit, MultiEdit) on a file of an auto-memory directory
 *   (`…/.claude/projects/<project>/memory/…`);
 * - a message the host flagged `wroteMemory` (a direct library write that no tool call shows).
 */
const MEMORY_TOOL_WRITES = new Set(['create', 'str_replace', 'insert', 'delete', 'rename']);
const MCP_WRITE_TOOL = /^mcp__.+__(?:remember|forget|memory_(?:create|str_replace|insert|delete|rename))$/;
const FILE_WRITE_TOOLS = new Set(['Write', 'Edit', 'MultiEdit']);
const AUTO_MEMORY_PATH =
  /[\\/]\.claude[\\/](?:projects[\\/][^\\/]+[\\/])?memory[\\/]|[\\/]\.claude[\\/]agent-memory(?:-local)?[\\/]/;

/** Whether one tool call writes memory. */
export function isMemoryWriteCall(call: ConversationToolCall): boolean {
  if (call === null || typeof call !== 'object') return false;
  if (call.name === 'memory') return MEMORY_TOOL_WRITES.has(String(call.input?.command));
  if (typeof call.name === 'string' && MCP_WRITE_TOOL.test(call.name)) return true;
  if (FILE_WRITE_TOOLS.has(call.name)) {
    const path = call.input?.file_path;
    return typeof path === 'string' && AUTO_MEMORY_PATH.test(path);
  }
  return false;
}

/** Whether any message of the span wrote memory (see above). */
export function spanWroteMemory(
  messages: readonly ConversationMessage[],
  isWrite: (call: ConversationToolCall) => boolean = isMemoryWriteCall,
): boolean {
  return messages.some(
    (message) =>
      message.wroteMemory === true ||
      (message.role === 'assistant' && (message.toolCalls ?? []).some((call) => isWrite(call))),
  );
}
