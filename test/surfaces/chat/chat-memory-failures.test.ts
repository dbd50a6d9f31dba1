import { describe, expect, it } from 'vitest';
import { messageText } from '../../../src/contracts/language-model-content.js';
import { ScriptedLanguageModel } from '../../../src/testing/scripted-language-model.js';
import { useTestChats } from '../../support/chat-support.js';

const chats = useTestChats();

describe('engram chat when memory fails', () => {
  it('answers without memory when the store fails, and says why once per turn', async () => {
    const model = new ScriptedLanguageModel({ script: ['Answered without memory.', 'Still here.'] });
    const session = await chats.start({ model });
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
