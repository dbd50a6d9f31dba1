import { readFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AnthropicLanguageModel } from '../../src/adapters/models/anthropic-language-model.js';
import { Extractor } from '../../src/extraction/extractor.js';
import { startAnthropicMessagesServer } from '../../src/testing/anthropic-messages-server.js';
import type { LanguageModelServer } from '../../src/testing/loopback-model-server.js';
import { answer, useExtractionFixture } from '../support/extraction-support.js';
import { SECRET_CASES } from '../fixtures/secrets-corpus.js';

const fixture = useExtractionFixture();
let server: LanguageModelServer;

beforeEach(async () => {
  server = await startAnthropicMessagesServer();
});
afterEach(async () => {
  await server.close();
});

describe('secrets never reach the store through extraction', () => {
  it(`redacts every kind of the corpus (${SECRET_CASES.length} cases, ${new Set(SECRET_CASES.map((entry) => entry.kind)).size} kinds) in queued turns, model answers, explicit writes and memories`, async () => {
    expect(new Set(SECRET_CASES.map((entry) => entry.kind)).size).toBeGreaterThanOrEqual(20);
    const model = new AnthropicLanguageModel({
      model: 'claude-haiku-5-5',
      baseUrl: server.url,
      apiKey: 'sk-ant-test',
      maxRetries: 0,
    });
    const extractor = new Extractor({ engram: fixture.engram, model, autoStart: false, onWarning: () => {} });
    for (const [index, entry] of SECRET_CASES.entries()) {
      // The model echoes the secret as if it had seen it: the write path must still redact it.
      server.script({
        message: { text: answer({ content: `Connection detail ${index}: ${entry.text}`, name: `detail-${index}` }) },
      });
      await extractor.afterTurn({
        sessionId: `secret-${index}`,
        messages: [
          { id: 'u1', role: 'user', text: `Here is what I use: ${entry.text}` },
          { id: 'a1', role: 'assistant', text: `Thanks, I will use ${entry.text}` },
          { id: 'u2', role: 'user', text: `Remember that ${entry.text}` },
          { id: 'a2', role: 'assistant', text: 'Noted.' },
        ],
      });
      const outcomes = await extractor.drain();
      expect(
        outcomes.map((outcome) => outcome.state),
        entry.kind,
      ).toEqual(['done']);
    }
    expect(server.requests).toHaveLength(SECRET_CASES.length);
    const memories = await fixture.engram.list({ limit: 1_000 });
    expect(memories.length).toBeGreaterThanOrEqual(SECRET_CASES.length);
    expect(memories.some((memory) => memory.content.includes('[REDACTED:'))).toBe(true);

    const path = fixture.path;
    await fixture.store.close();
    const stored = [path, `${path}-wal`]
      .map((file) => {
        try {
          return readFileSync(file).toString('latin1');
        } catch {
          return '';
        }
      })
      .join('\n');
    const sent = server.requests.map((request) => request.rawBody).join('\n');
    for (const entry of SECRET_CASES) {
      for (const secret of entry.secrets) {
        expect(stored.includes(secret), `${entry.kind} reached the store`).toBe(false);
        expect(sent.includes(secret), `${entry.kind} was sent to the model`).toBe(false);
      }
    }
    await fixture.store.open();
  });
});
