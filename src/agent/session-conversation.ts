import type { Conversation, ConversationMessage } from '../contracts/conversation.js';
import type { SessionMessage } from '../contracts/session-message.js';

/**
 * A session's live messages as the conversation extraction reads (src/contracts/conversation.ts):
 * the user's own words as `user`, injected context (recalled memory, re-injected files, summaries)
 * as meta, tool results as `tool`, and the assistant's text with its tool calls. Ids are the
 * session's message uuids, so the extraction cursor survives restarts and resumes.
 */
export function sessionConversation(sessionId: string, messages: readonly SessionMessage[]): Conversation {
  return { sessionId, messages: messages.map(toConversationMessage) };
}

function toConversationMessage(message: SessionMessage): ConversationMessage {
  const base = {
    id: message.uuid,
    timestamp: message.timestamp,
    ...((message.meta === true || message.compactSummary === true) && { meta: true }),
  };
  if (typeof message.content === 'string') return { ...base, role: message.role, text: message.content };
  const text = message.content.flatMap((block) => (block.type === 'text' ? [block.text] : [])).join('\n');
  if (message.role === 'assistant') {
    const toolCalls = message.content.flatMap((block) =>
      block.type === 'tool_use' ? [{ id: block.id, name: block.name, input: block.input }] : [],
    );
    return { ...base, role: 'assistant', text, ...(toolCalls.length > 0 && { toolCalls }) };
  }
  const toolResults = message.content.flatMap((block) =>
    block.type === 'tool_result'
      ? [{ toolUseId: block.toolUseId, content: block.content, ...(block.isError === true && { isError: true }) }]
      : [],
  );
  if (toolResults.length > 0 && text === '') return { ...base, role: 'tool', text: '', toolResults };
  return { ...base, role: 'user', text, ...(toolResults.length > 0 && { toolResults }) };
}
