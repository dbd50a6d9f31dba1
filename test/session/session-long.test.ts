import { describe, expect, it } from 'vitest';
import { totalInputTokens } from '../../src/contracts/language-model-content.js';
import { runAgentTurn } from '../../src/agent/agent-turn.js';
import type { SessionEventMap } from '../../src/session/session-events.js';
import { workloadReadFileTool, workloadUserMessage } from '../../src/testing/scripted-session-workload.js';
import {
  SMALL_WORKLOAD,
  estimatedRequestTokens,
  requestKind,
  sequentialIds,
  smallWindowSettings,
  steppingClock,
  temporaryDirectory,
  workloadServer,
} from '../support/session-support.js';
import { useAfterTest } from '../support/per-test.js';
import { openSession } from '../../src/node/session-open.js';

/**
 * SPEC §2 end to end: a long scripted coding session (hundreds of turns, tool results up to 40 KB)
 * against the loopback Anthropic server through the real SDK adapter. The session must never send a
 * request over its window, and must compact from the session notes with no model call when they
 * exist, or through a summarizer when they do not.
 */

const TURNS = 200;
const SYSTEM = 'You are a careful coding assistant. Standing rule: always answer in short paragraphs.';

const afterTest = useAfterTest();

async function runLongSession(options: { notes: boolean }) {
  const settings = smallWindowSettings();
  const loopback = await workloadServer();
  afterTest(loopback.close);
  const home = await temporaryDirectory();
  afterTest(home.remove);
  const clock = steppingClock(500);
  const session = openSession({
    model: loopback.model,
    settings,
    home: home.path,
    cwd: '/work/project',
    sessionId: 'long-session',
    system: SYSTEM,
    tools: [workloadReadFileTool(SMALL_WORKLOAD)],
    notes: options.notes,
    now: clock.now,
    generateId: sequentialIds(),
  }).session;
  const compactions: Array<SessionEventMap['compaction-finished']> = [];
  const failures: unknown[] = [];
  const assistantUsage: number[] = [];
  session.on('compaction-finished', (event) => compactions.push(event));
  session.on('compaction-failed', (event) => failures.push(event.error));
  session.on('message-added', ({ message }) => {
    if (message.role === 'assistant' && message.usage) assistantUsage.push(totalInputTokens(message.usage));
  });
  for (let turn = 1; turn <= TURNS; turn += 1) {
    await runAgentTurn(session, { content: workloadUserMessage(turn) });
  }
  await session.close();
  return { session, settings, compactions, failures, assistantUsage, requests: loopback.server.requests };
}

/**
 * The checks both runs share: no compaction failed, at least three ran, each by `method`, and every
 * request (turns, notes helper and summarizer alike) and every turn's counted input, plus its output
 * cap, fits the window.
 */
function expectCompactedWithinWindow(run: Awaited<ReturnType<typeof runLongSession>>, method: 'notes' | 'summary') {
  const { settings, compactions, failures, assistantUsage, requests } = run;
  const window = settings.session.contextWindow;
  expect(failures).toEqual([]);
  expect(compactions.length).toBeGreaterThanOrEqual(3);
  for (const compaction of compactions) expect(compaction.boundary.method).toBe(method);
  for (const request of requests) {
    const maxTokens = (request.body as { max_tokens: number }).max_tokens;
    expect(estimatedRequestTokens(request, settings) + maxTokens).toBeLessThanOrEqual(window);
  }
  for (const tokens of assistantUsage) expect(tokens + settings.session.maxOutputTokens).toBeLessThanOrEqual(window);
}

describe('a long session against the loopback Anthropic server', () => {
  it('with session notes: never over the window, compacts by the fast path with zero model calls', async () => {
    const run = await runLongSession({ notes: true });
    expectCompactedWithinWindow(run, 'notes');
    for (const compaction of run.compactions) {
      expect(compaction.modelCalls).toBe(0);
      expect(compaction.postTokens).toBeLessThan(compaction.preTokens);
    }
    const kinds = run.requests.map(requestKind);
    // Only the turns and the notes helper ever asked the model: no summarizer request.
    expect(kinds.filter((kind) => kind === 'summary')).toEqual([]);
    expect(kinds.filter((kind) => kind === 'notes').length).toBeGreaterThan(0);
    // The server counted the input of every turn's request (the window check above covers them all).
    expect(run.assistantUsage.length).toBeGreaterThan(TURNS);
    expect(run.session.stats.persistedToolResults).toBeGreaterThan(10);
  });

  it('without session notes: compacts through the summarizer, one model call per compaction', async () => {
    const run = await runLongSession({ notes: false });
    expectCompactedWithinWindow(run, 'summary');
    for (const compaction of run.compactions) expect(compaction.modelCalls).toBeGreaterThanOrEqual(1);
    const kinds = run.requests.map(requestKind);
    expect(kinds.filter((kind) => kind === 'notes')).toEqual([]);
    expect(kinds.filter((kind) => kind === 'summary').length).toBe(
      run.compactions.reduce((sum, compaction) => sum + compaction.modelCalls, 0),
    );
  });
});
