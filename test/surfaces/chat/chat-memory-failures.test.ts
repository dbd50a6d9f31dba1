import { afterEach, describe, expect, it } from 'vitest';
import { messageText } from '../../../src/contracts/language-model-content.js';
import { ScriptedLanguageModel } from '../../../src/testing/scripted-language-model.js';
import { removeTestRoot, startTestChat, type TestChat } from '../../support/chat-support.js';

const roots: string[] = [];
const chats: TestChat[] = [];
afterEach(async () => {
  for (const chat of chats.splice(0)) await chat.finish().catch(() => undefined);
  await Promise.all(roots.splice(0).map(removeTestRoot));
});

describe('engram chat when memory fails', () => {
  it('answers without memory when the store fails, and says why once per turn', async () => {
    const model = new ScriptedLanguageModel({ script: ['Answered without memory.', 'Still here.'] });
    const session = await startTestChat({ model });
    chats.push(session);
    roots.push(session.root);
    await session.opened.engram.remember({
      content: 'The deploy target is the Frankfurt region (eu-central-1).',
      type: 'project',
    });
    await session.opened.engram.store.close();

    session.type('Where do we deploy the Frankfurt service?');
    await session.waitFor('Answered without memory.');
    await session.waitFor(/· memory recall failed \(STORE_CLOSED: .*\); this message went without memory/);
    await session.waitFor(/· extraction was not queued: /);
    expect(model.requests[0]!.messages.map(messageText)).toEqual(['Where do we deploy the Frankfurt service?']);
    session.type('And now?');
    await session.waitFor('Still here.');
    expect(session.agent.memoryReport().recalled).toEqual([]);
  });
});
