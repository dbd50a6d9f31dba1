import { describe, expect, it } from 'vitest';
import { ScriptedLanguageModel } from '../../../src/testing/scripted-language-model.js';
import { useTestChats, type TestChat } from '../../support/chat-support.js';

// The chat tells a degraded recall once, by the rule every human surface applies
// (src/recall/warning-notes.ts): no embedder configured is not a degradation and is not said.
const chats = useTestChats();

async function chatAbout(settings?: Record<string, unknown>): Promise<TestChat> {
  const model = new ScriptedLanguageModel({ script: ['Frankfurt.', 'Still Frankfurt.'] });
  const session = await chats.start({ model, ...(settings && { settings }) });
  await session.opened.engram.remember({ content: 'The deploy target is the Frankfurt region.', type: 'project' });
  session.type('Where is the deploy target region?');
  await session.waitFor('Frankfurt.');
  session.type('And the deploy target again?');
  await session.waitFor('Still Frankfurt.');
  return session;
}

describe('engram chat warnings', () => {
  it('says nothing of full-text recall when no embedder is configured', async () => {
    const session = await chatAbout();
    expect(session.agent.memoryReport().recalled.length).toBeGreaterThan(0);
    expect(session.output()).not.toMatch(/vector|full-text only|embedder/);
  });

  it('says a failing embedder once, not every turn', async () => {
    const session = await chatAbout({
      'embedding.provider': 'openai-compatible',
      'embedding.baseUrl': 'http://127.0.0.1:9/v1',
      'embedding.model': 'hashed-words',
      'embedding.apiKey': 'sk-chat-test',
      'embedding.maxRetries': 0,
    });
    // Nothing was embedded when the memory was written: the store has no vectors, said once, with what to do.
    const said = session.output().match(/· (?:vectors-missing|embedding-failed): /g) ?? [];
    expect(said).toHaveLength(1);
    expect(session.output()).toContain('engram reindex');
  });
});
