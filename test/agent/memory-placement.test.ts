import Anthropic from '@anthropic-ai/sdk';
import { afterEach, describe, expect, it } from 'vitest';
import { messageText } from '../../src/contracts/language-model-content.js';
import type { LanguageModelRequest } from '../../src/contracts/language-model.js';
import { MemoryTurn } from '../../src/agent/memory-turn.js';
import { staticPreamble } from '../../src/privacy/injected-markers.js';
import { stripPrivateContent } from '../../src/privacy/private-content.js';
import { withMemory } from '../../src/surfaces/sdk/with-memory.js';
import { startAnthropicMessagesServer } from '../../src/testing/anthropic-messages-server.js';
import { ScriptedLanguageModel } from '../../src/testing/scripted-language-model.js';
import { removeTestRoot, startTestChat, type TestChat } from '../support/chat-support.js';
import { DEPLOY_FACT, DEPLOY_QUESTION, openMemoryFolder } from '../support/with-memory-support.js';

/**
 * One rule for where the `<memory_context>` block goes: the static part tells the model where it is,
 * and each host puts it exactly there. The client wrappers put it at the end of the system prompt
 * (SPEC §3); engram chat (and Claude Code's hook context) put it in the conversation, just before the
 * user's message, so the system prompt stays byte-stable. Each test reads the request actually sent.
 */

const END_OF_PROMPT = 'given in a <memory_context> block at the end of this prompt';
const BEFORE_MESSAGE = 'given in a <memory_context> block just before that message';

const chats: TestChat[] = [];
afterEach(async () => {
  for (const chat of chats.splice(0)) {
    await chat.finish().catch(() => undefined);
    await removeTestRoot(chat.root);
  }
});

const systemOf = (request: LanguageModelRequest): string =>
  Array.isArray(request.system) ? request.system.map((block) => block.text).join('\n') : String(request.system);

describe('where the memory block goes is where the static part says it is', () => {
  it('engram chat: the static part says "just before that message", and the block is in the message just before it, not in the system prompt', async () => {
    const model = new ScriptedLanguageModel({ script: ['Frankfurt.', 'Still Frankfurt.'] });
    const first = await startTestChat({ model });
    chats.push(first);
    await first.opened.engram.remember({ ...DEPLOY_FACT, type: 'project' });
    await first.finish();
    chats.splice(0);
    // A new chat over the same store: its static part holds the index with the fact.
    const chat = await startTestChat({ model, root: first.root });
    chats.push(chat);
    chat.type(DEPLOY_QUESTION);
    await chat.waitFor('Frankfurt.');
    const request = model.requests[0]!;
    const system = systemOf(request);
    expect(system).toContain('# Long-term memory');
    expect(system).toContain(BEFORE_MESSAGE);
    expect(system).not.toContain(END_OF_PROMPT);
    // The words name the tag; no block is there.
    expect(system).not.toContain('</memory_context>');
    expect(system).not.toContain('eu-central-1');
    const last = request.messages.at(-1)!;
    expect(messageText(last)).toBe(DEPLOY_QUESTION);
    const before = request.messages.at(-2)!;
    expect(before.role).toBe('user');
    expect(messageText(before)).toContain('<memory_context>');
    expect(messageText(before)).toContain('eu-central-1');
    // Nowhere else.
    expect(request.messages.slice(0, -2).map(messageText).join('\n')).not.toContain('<memory_context>');
  });

  it('withMemory: the static part says "at the end of this prompt", and the system prompt ends with the block', async () => {
    const server = await startAnthropicMessagesServer();
    const folder = await openMemoryFolder();
    try {
      await folder.seed([DEPLOY_FACT]);
      const client = withMemory(new Anthropic({ apiKey: 'k', baseURL: server.url, maxRetries: 0 }), folder.options());
      await client.messages.create({
        model: 'claude-test',
        max_tokens: 50,
        system: 'You are terse.',
        messages: [{ role: 'user', content: DEPLOY_QUESTION }],
      });
      await client.memory.close();
      const system = server.requests[0]!.summary!.system;
      expect(system).toContain(END_OF_PROMPT);
      expect(system).not.toContain(BEFORE_MESSAGE);
      expect(system.trimEnd().endsWith('</memory_context>')).toBe(true);
      expect(system).toContain('eu-central-1');
      expect(JSON.stringify(server.requests[0]!.summary!.messages)).not.toContain('<memory_context>');
    } finally {
      await server.close();
      await folder.close();
    }
  });

  it('a MemoryTurn says "just before that message" unless told system-end, and refuses another placement', async () => {
    const folder = await openMemoryFolder();
    try {
      await folder.seed([DEPLOY_FACT]);
      const { openEngram } = await import('../../src/node/open-engram.js');
      const opened = await openEngram({ cwd: folder.directory, env: folder.env, flags: { 'store.url': folder.store } });
      try {
        const chatStyle = await new MemoryTurn({ engram: opened.engram }).staticPart();
        const wrapperStyle = await new MemoryTurn({ engram: opened.engram, placement: 'system-end' }).staticPart();
        expect(chatStyle).toContain(BEFORE_MESSAGE);
        expect(wrapperStyle).toContain(END_OF_PROMPT);
        expect(() => new MemoryTurn({ engram: opened.engram, placement: 'middle' as never })).toThrow(
          /placement is 'before-message' or 'system-end'/,
        );
        // Either wording is recognised as engram's own injected text and never stored back.
        for (const text of [chatStyle, wrapperStyle]) {
          expect(stripPrivateContent(`Before. ${text}\nAfter.`).text).not.toContain('Long-term memory');
        }
      } finally {
        await opened.close();
      }
    } finally {
      await folder.close();
    }
  });

  it('the two wordings differ only in the placement', () => {
    const end = staticPreamble('system-end');
    const before = staticPreamble('before-message');
    expect(end.replace('at the end of this prompt', 'X')).toBe(before.replace('just before that message', 'X'));
  });
});
