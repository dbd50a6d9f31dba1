import { afterEach, describe, expect, it } from 'vitest';
import { Extractor } from '../../src/extraction/extractor.js';
import { readRecentExtractions, RECENT_EXTRACTIONS_KEPT } from '../../src/extraction/recent-extractions.js';
import { startAnthropicMessagesServer } from '../../src/testing/anthropic-messages-server.js';
import type { LanguageModelServer } from '../../src/testing/loopback-model-server.js';
import { createLanguageModel } from '../../src/adapters/models/create-language-model.js';
import { DEFAULT_SETTINGS } from '../../src/kernel/settings.js';
import { answer, turn, useExtractionFixture } from '../support/extraction-support.js';

const fixture = useExtractionFixture();
let server: LanguageModelServer;

afterEach(async () => {
  await server?.close();
});

/** An extractor whose model is the real Anthropic SDK pointed at the loopback server. */
function extractorFor(modelServer: LanguageModelServer): Extractor {
  const model = createLanguageModel(
    {
      model: {
        ...DEFAULT_SETTINGS.model,
        provider: 'anthropic',
        anthropicApiKey: 'sk-ant-test',
        anthropicBaseUrl: modelServer.url,
        maxRetries: 0,
      },
    },
    { purpose: 'side' },
  )!;
  return new Extractor({ engram: fixture.engram, model, autoStart: false });
}

describe('recent extractions kept in the store', () => {
  it('keeps what each run wrote and dropped, newest first, readable by another process; no conversation text, no secret', async () => {
    const secret = 'sk-ant-api03-' + 'Q'.repeat(20) + 'x7Yz' + 'W'.repeat(60) + '-AbCdEfAA';
    server = await startAnthropicMessagesServer({
      respond: {
        message: {
          text: answer(
            { content: 'Integration tests run against the real Postgres.', name: 'real-postgres-tests' },
            { content: '' },
          ),
        },
      },
    });
    const extractor = extractorFor(server);
    await extractor.afterTurn({
      sessionId: 'chat-7',
      messages: turn(1, `We run integration tests against the real Postgres. My key is ${secret}.`),
    });
    const [outcome] = await extractor.drain();
    expect(outcome?.state).toBe('done');

    // What the viewer reads, from the store alone (as a service started later would).
    const [recent] = await readRecentExtractions(fixture.engram.store);
    expect(recent?.state).toBe('done');
    expect(recent?.job.sessionId).toBe('chat-7');
    expect(recent?.report?.written.map((memory) => memory.name)).toEqual(['real-postgres-tests']);
    expect(recent?.report?.dropped.map((item) => item.reason)).toContain('no-content');
    const kept = JSON.stringify(recent);
    expect(kept).not.toContain(secret);
    expect(kept).not.toContain('My key is');
  });

  it(`keeps the latest ${RECENT_EXTRACTIONS_KEPT} runs, failed ones with their reason`, async () => {
    server = await startAnthropicMessagesServer({ respond: { error: { kind: 'server' } } });
    const extractor = extractorFor(server);
    for (let index = 0; index < RECENT_EXTRACTIONS_KEPT + 3; index += 1)
      await extractor.afterTurn({ sessionId: `chat-${index}`, messages: turn(1, `Fact number ${index} for the log.`) });
    await extractor.drain();
    const recent = await readRecentExtractions(fixture.engram.store);
    expect(recent).toHaveLength(RECENT_EXTRACTIONS_KEPT);
    expect(recent.every((entry) => entry.state !== 'done' && typeof entry.error === 'string')).toBe(true);
  });
});
