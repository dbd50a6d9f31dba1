import { describe, expect, it } from 'vitest';
import { sessionConversation } from '../../src/agent/session-conversation.js';

describe('sessionConversation', () => {
  it('turns session messages into the conversation extraction reads: meta context, tool calls and results', () => {
    const at = '2026-01-01T00:00:00.000Z';
    const conversation = sessionConversation('s1', [
      { uuid: 'm1', role: 'user', content: '<memory_context>…</memory_context>', timestamp: at, meta: true },
      { uuid: 'm2', role: 'user', content: 'Remember that I use pnpm.', timestamp: at },
      {
        uuid: 'm3',
        role: 'assistant',
        content: [
          { type: 'text', text: 'Checking.' },
          { type: 'tool_use', id: 't1', name: 'read_file', input: { path: 'a' } },
        ],
        timestamp: at,
      },
      {
        uuid: 'm4',
        role: 'user',
        content: [{ type: 'tool_result', toolUseId: 't1', content: 'file text' }],
        timestamp: at,
      },
    ]);
    expect(conversation.messages.map((message) => [message.id, message.role, message.meta ?? false])).toEqual([
      ['m1', 'user', true],
      ['m2', 'user', false],
      ['m3', 'assistant', false],
      ['m4', 'tool', false],
    ]);
    expect(conversation.messages[2]!.toolCalls).toEqual([{ id: 't1', name: 'read_file', input: { path: 'a' } }]);
    expect(conversation.messages[3]!.toolResults).toEqual([{ toolUseId: 't1', content: 'file text' }]);
  });
});
