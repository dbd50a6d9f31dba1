import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Conversation } from '../../src/contracts/conversation.js';
import { ClaudeCodeLanguageModel } from '../../src/adapters/models/claude-code-language-model.js';
import { Extractor } from '../../src/extraction/extractor.js';
import { startAnthropicMessagesServer } from '../../src/testing/anthropic-messages-server.js';
import type { LanguageModelServer } from '../../src/testing/loopback-model-server.js';
import { claudeBinary, makeClaudeHome, type ClaudeHome } from '../support/claude-code-headless.js';
import { answer, turn, useExtractionFixture } from '../support/extraction-support.js';

let server: LanguageModelServer;
let claude: ClaudeHome;
const fixture = useExtractionFixture();

beforeAll(async () => {
  server = await startAnthropicMessagesServer({ claudeCode: true });
});
afterAll(async () => server.close());
beforeEach(async () => {
  claude = await makeClaudeHome();
});
afterEach(async () => {
  await claude.close();
});

describe('extraction through the claude-code provider (the real Claude Code CLI)', () => {
  it('runs one headless call for the pending turns of a session (three Stops queued, one call), and the memory is stored', async () => {
    server.script({ message: { text: answer({ content: 'The team deploys on Fridays after the freeze.' }) } });
    const model = new ClaudeCodeLanguageModel({ model: 'haiku', command: claudeBinary(), env: claude.env(server.url) });
    const extractor = new Extractor({
      engram: fixture.engram,
      model,
      autoStart: false,
      now: () => new Date(fixture.clock.now),
    });
    const messages = [
      ...turn(1, 'Hello there.'),
      ...turn(2, 'We deploy on Fridays, after the code freeze.'),
      ...turn(3, 'Thanks, that is all.'),
    ];
    const session = (upTo: number): Conversation => ({ sessionId: 'cc-session', messages: messages.slice(0, upTo) });
    // Three Stop hooks, each queueing the session so far, before any worker ran.
    for (const upTo of [2, 4, 6]) await extractor.afterTurn(session(upTo));
    const before = server.requests.length;
    const outcomes = await extractor.drain();
    const calls = server.requests.slice(before);
    expect(calls).toHaveLength(1);
    const body = calls[0]!.body as { model: string; tools: unknown[]; messages: Array<{ content: unknown }> };
    expect([body.model, body.tools]).toEqual(['claude-haiku-5-5', []]);
    expect(JSON.stringify(body.messages[0])).toContain('We deploy on Fridays');
    expect(JSON.stringify(body.messages[0])).toContain('Thanks, that is all.');
    const reports = outcomes.map((outcome) => (outcome.state === 'done' ? outcome.report : undefined));
    expect(reports.map((report) => [report?.status, report?.modelCalls])).toEqual([
      ['extracted', 1],
      ['already-done', 0],
      ['already-done', 0],
    ]);
    const stored = await fixture.engram.list({});
    expect(stored.map((memory) => memory.content)).toContain('The team deploys on Fridays after the freeze.');
    expect(await claude.firedHooks()).toEqual([]);
  }, 90_000);
});
