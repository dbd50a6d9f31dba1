import type { LanguageModel, LanguageModelUsage } from '../../src/contracts/language-model.js';
import { totalInputTokens } from '../../src/contracts/language-model-content.js';
import { describe, expect, it } from 'vitest';
import { DEFAULT_SETTINGS } from '../../src/kernel/settings.js';
import { runAgentTurn } from '../../src/agent/agent-turn.js';
import { Session } from '../../src/session/session.js';
import {
  workloadReadFileTool,
  workloadUserMessage,
  type SessionWorkloadOptions,
} from '../../src/testing/scripted-session-workload.js';
import {
  promptPrefixText,
  requestKind,
  sequentialIds,
  steppingClock,
  temporaryDirectory,
  workloadServer,
} from '../support/session-support.js';
import { useAfterTest } from '../support/per-test.js';
import { openSession } from '../../src/node/session-open.js';

/**
 * The property that lets the provider's prompt cache serve a session (SPEC §2 layer 1, design rule
 * of the Session): outside compactions, every request's system + tools + messages begin with the
 * previous request's, byte for byte, as received on the wire, including persisted tool results and
 * per-turn recalled memory (which goes in the turn's user message, never the system prompt).
 */

const WORKLOAD: SessionWorkloadOptions = {
  resultBytes: { min: 200, max: 1_500 },
  bigResultEvery: 10,
  bigResultBytes: 60_000,
  answerBytes: { min: 200, max: 800 },
};

const afterTest = useAfterTest();

describe('prompt-prefix stability', () => {
  it('across 100 turns each request begins with the previous one byte for byte', async () => {
    const loopback = await workloadServer(WORKLOAD);
    afterTest(loopback.close);
    const home = await temporaryDirectory();
    afterTest(home.remove);
    // Every answer's usage, as the simulated prompt cache behind the loopback server reported it.
    const usages: LanguageModelUsage[] = [];
    const inner = loopback.model;
    const model: LanguageModel = {
      provider: inner.provider,
      modelId: inner.modelId,
      generate: async (request) => {
        const response = await inner.generate(request);
        usages.push(response.usage);
        return response;
      },
    };
    const session = openSession({
      model,
      settings: DEFAULT_SETTINGS,
      home: home.path,
      cwd: '/work/project',
      system: [
        { text: 'You are a careful coding assistant.' },
        { text: '# MEMORY.md\n- [user prefers short answers](user_short.md)', cache: true },
      ],
      tools: [workloadReadFileTool(WORKLOAD)],
      now: steppingClock(2_000).now,
      generateId: sequentialIds(),
    }).session;
    for (let turn = 1; turn <= 100; turn += 1) {
      // Recalled memory changes every turn: it must not disturb the prefix.
      await runAgentTurn(session, {
        content: workloadUserMessage(turn),
        context: `<memory-context>\nrecalled for turn ${turn}\n</memory-context>`,
      });
    }
    await session.close();
    expect(session.stats.compactions).toBe(0);
    expect(session.stats.microcompactions).toBe(0);
    expect(session.stats.persistedToolResults).toBeGreaterThan(3);

    const turns = loopback.server.requests.filter((request) => requestKind(request) === 'turn');
    expect(turns.length).toBeGreaterThan(150);
    let previous: string | undefined;
    for (const [index, request] of turns.entries()) {
      const prefix = promptPrefixText(request);
      if (previous !== undefined && !prefix.startsWith(previous)) {
        throw new Error(
          `Request ${index} does not begin with request ${index - 1}: they differ from byte ${firstDifference(previous, prefix)}.`,
        );
      }
      previous = prefix;
    }
    // Only the latest message carries a cache mark, yet each request reads the previous one's prefix
    // back from the cache: over the session, almost every input token is a cache read.
    const read = usages.reduce((sum, usage) => sum + (usage.cacheReadTokens ?? 0), 0);
    const input = usages.reduce((sum, usage) => sum + totalInputTokens(usage), 0);
    expect(read / input).toBeGreaterThan(0.9);
    // The system prompt is the same bytes in every request (recalled memory went into user messages).
    expect(new Set(turns.map((request) => JSON.stringify((request.body as { system: unknown }).system))).size).toBe(1);

    // A notes helper shares the prefix too: its request is a turn request's (the one sent with the
    // same messages, or just before the answer it covers) plus its instruction.
    const notes = loopback.server.requests.filter((request) => requestKind(request) === 'notes');
    expect(notes.length).toBeGreaterThan(0);
    for (const request of notes) {
      const count = request.summary!.messages.length;
      const text = promptPrefixText(request);
      const shared = turns.some(
        (turn) => turn.summary!.messages.length >= count - 2 && text.startsWith(promptPrefixText(turn)),
      );
      expect(shared).toBe(true);
    }
  });
});

function firstDifference(a: string, b: string): number {
  let index = 0;
  while (index < a.length && a[index] === b[index]) index += 1;
  return index;
}
