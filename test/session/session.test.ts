import { readFile, stat } from 'node:fs/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { autoCompactThreshold } from '../../src/session/compaction/compaction-policy.js';
import { EngramError } from '../../src/kernel/errors.js';
import { OLD_TOOL_RESULT_PLACEHOLDER } from '../../src/session/microcompaction.js';
import type { LanguageModelUsage, ToolResultBlock } from '../../src/contracts/language-model.js';
import { runAgentTurn } from '../../src/agent/agent-turn.js';
import type { SessionEventMap, SessionEventName } from '../../src/session/session-events.js';
import { Session, type SessionOptions } from '../../src/session/session.js';
import { ToolResultStorage } from '../../src/session/node/tool-result-storage.js';
import type { SessionTool } from '../../src/contracts/session-tool.js';
import { ScriptedLanguageModel } from '../../src/testing/scripted-language-model.js';
import { classifyWorkloadRequest, workloadAnswer } from '../../src/testing/scripted-session-workload.js';
import { sequentialIds, smallWindowSettings, steppingClock, temporaryDirectory } from '../support/session-support.js';
import { nodeNotesFiles } from '../../src/session/node/session-notes-files.js';
import { expectEngramError } from '../support/expect-engram-error.js';

/**
 * The Session on its own (ScriptedLanguageModel in process): bad input refused with nothing changed,
 * token accounting from reported usage, warnings, and each layer's trigger under an injected clock
 * and injected token counts (SPEC §2's exact conditions).
 */

let cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const step of cleanup) await step();
  cleanup = [];
});

/** A model answering like the workload, with the reported input tokens of turn requests set by the test. */
function controlledModel(reported: { inputTokens?: number }) {
  return new ScriptedLanguageModel({
    whenExhausted: 'repeat-last',
    script: [
      (request) => {
        const answer = workloadAnswer(request.messages);
        const usage: Partial<LanguageModelUsage> | undefined =
          classifyWorkloadRequest(request.messages) === 'turn' && reported.inputTokens !== undefined
            ? { inputTokens: reported.inputTokens }
            : undefined;
        return { ...answer, ...(usage && { usage }) };
      },
    ],
  });
}

function events<Name extends SessionEventName>(session: Session, name: Name): Array<SessionEventMap[Name]> {
  const seen: Array<SessionEventMap[Name]> = [];
  session.on(name, (event) => seen.push(event));
  return seen;
}

function fileTool(bytes: () => number): SessionTool {
  return {
    definition: {
      name: 'read_file',
      description: 'Reads a file.',
      inputSchema: { type: 'object', properties: { path: { type: 'string' } } },
    },
    run: async (input) => {
      const content = `${String(input.path)}:\n${'x'.repeat(bytes())}`;
      return { content, filesRead: [{ path: String(input.path), content }] };
    },
  };
}

function newSession(options: Partial<SessionOptions> & { model: SessionOptions['model'] }): Session {
  return new Session({
    settings: smallWindowSettings(),
    system: 'You are terse.',
    generateId: sequentialIds(),
    ...options,
  });
}

describe('Session: bad input changes nothing', () => {
  it('refuses malformed messages, results, responses and todos with clear errors', async () => {
    expect(() => new Session(undefined as never)).toThrow(EngramError);
    expect(() => new Session({ model: {} as never })).toThrow(/LanguageModel/);
    const session = newSession({ model: controlledModel({}) });
    await expectEngramError(() => session.prepareRequest({ maxOutputTokens: 100 }), 'INVALID_INPUT');
    await expectEngramError(() => session.addUserMessage(''), 'INVALID_INPUT');
    await expectEngramError(() => session.addUserMessage(42 as never), 'INVALID_INPUT');
    await expectEngramError(
      () => session.addUserMessage([{ type: 'tool_result', toolUseId: 'x', content: 'y' }] as never),
      'INVALID_INPUT',
    );
    await expectEngramError(() => session.addUserMessage([{ type: 'text', text: '' }]), 'INVALID_INPUT');
    const oversized = await expectEngramError(
      () => session.addUserMessage('word '.repeat(200_000)),
      'PAYLOAD_TOO_LARGE',
    );
    expect(oversized.message).toMatch(/fit in this session's context window/);
    await expectEngramError(() => session.addToolResults([{ toolUseId: 'a', content: 'b' }]), 'INVALID_INPUT');
    expect(session.messages).toEqual([]);

    session.addUserMessage('Turn 1: look at src/module-1.ts');
    for (const bad of [0, 1.5, -3, Number.NaN, 40_000, '100'])
      await expectEngramError(() => session.prepareRequest({ maxOutputTokens: bad as number }), 'INVALID_INPUT');
    await expectEngramError(() => session.recordResponse(null as never), 'INVALID_INPUT');
    await expectEngramError(
      () => session.recordResponse({ text: 'hi', usage: { inputTokens: -1, outputTokens: 1 } }),
      'INVALID_INPUT',
    );
    await expectEngramError(
      () =>
        session.recordResponse({
          text: 'hi',
          content: [{ type: 'tool_result', toolUseId: 'x', content: 'y' }],
          usage: { inputTokens: 1, outputTokens: 1 },
        }),
      'INVALID_INPUT',
    );
    await expectEngramError(() => session.recordResponse({ text: 'hi' } as never), 'INVALID_INPUT');
    expect(session.messages).toHaveLength(1);

    session.recordResponse({
      text: '',
      content: [{ type: 'tool_use', id: 'toolu_1', name: 'read_file', input: { path: 'a' } }],
      usage: { inputTokens: 10, outputTokens: 5 },
    });
    await expectEngramError(
      () => session.addToolResults([{ toolUseId: 'toolu_other', content: 'x' }]),
      'INVALID_INPUT',
    );
    await expectEngramError(
      () =>
        session.addToolResults([
          { toolUseId: 'toolu_1', content: 'x' },
          { toolUseId: 'toolu_1', content: 'x' },
        ]),
      'INVALID_INPUT',
    );
    await expectEngramError(
      () => session.addToolResults([{ toolUseId: 'toolu_1', content: { text: 'x' } as never }]),
      'INVALID_INPUT',
    );
    await expectEngramError(() => session.addToolResults([]), 'INVALID_INPUT');
    await expectEngramError(() => session.compact(), 'INVALID_INPUT');
    expect(session.messages).toHaveLength(2);
    await session.addToolResults([{ toolUseId: 'toolu_1', content: 'file a' }]);
    expect(session.messages).toHaveLength(3);

    await expectEngramError(() => session.setTodos([{ content: 'x', status: 'done' } as never]), 'INVALID_INPUT');
    await expectEngramError(() => session.setTodos('todo' as never), 'INVALID_INPUT');
    await expectEngramError(
      () => session.setTodos(Array.from({ length: 10_000 }, () => ({ content: 'x', status: 'pending' as const }))),
      'INVALID_INPUT',
    );
    expect(session.todos).toEqual([]);
    // Messages are frozen: no caller can rewrite what was sent.
    expect(() => ((session.messages[2]!.content as ToolResultBlock[])[0]!.content = 'rewritten')).toThrow(TypeError);

    await session.close();
    await expectEngramError(() => session.addUserMessage('after close'), 'INVALID_INPUT');
  });

  it('an empty answer is kept as a placeholder, so the next request stays valid', async () => {
    const session = newSession({ model: controlledModel({}) });
    session.addUserMessage('hello');
    await session.prepareRequest({ maxOutputTokens: 100 });
    session.recordResponse({
      text: '',
      content: [{ type: 'text', text: '' }],
      usage: { inputTokens: 10, outputTokens: 0 },
    });
    expect(session.messages[1]!.content).toEqual([{ type: 'text', text: '(no content)' }]);
  });
});

describe('Session: token accounting and warnings', () => {
  it('counts the reported input tokens of the last request plus an estimate of what came since', async () => {
    const session = newSession({ model: controlledModel({}) });
    session.addUserMessage('Turn 4: hello');
    const before = session.usage().tokens;
    expect(before).toBeGreaterThan(0);
    await session.prepareRequest({ maxOutputTokens: 100 });
    session.recordResponse({
      text: 'answer',
      usage: { inputTokens: 1_000, outputTokens: 3, cacheReadTokens: 500, cacheWriteTokens: 250 },
    });
    const afterAnswer = session.usage().tokens;
    // 1,750 reported (input + cache read + cache write, FORMATS §4.3) + the answer's estimate.
    expect(afterAnswer).toBeGreaterThan(1_750);
    expect(afterAnswer).toBeLessThan(1_800);
    session.addUserMessage('x'.repeat(4_000));
    expect(session.usage().tokens - afterAnswer).toBeGreaterThanOrEqual(1_000);
    expect(session.usage().window).toBe(40_000);
  });

  it('emits each warning level once as the context passes 70%, 85% and 92%', async () => {
    const reported: { inputTokens?: number } = {};
    const model = controlledModel(reported);
    const settings = smallWindowSettings({ contextWindow: 100_000 });
    settings.compaction.bufferTokens = 1_000;
    settings.session.outputReserve = 2_000;
    settings.compaction.thresholdRatio = 0.99;
    const session = newSession({ model, settings });
    const warnings = events(session, 'context-warning');
    for (const [turn, tokens] of [
      [4, 50_000],
      [8, 71_000],
      [12, 72_000],
      [16, 86_000],
      [20, 93_000],
    ] as const) {
      reported.inputTokens = tokens;
      await runAgentTurn(session, { content: `Turn ${turn}: go`, maxOutputTokens: 500 });
    }
    expect(warnings.map((warning) => warning.level)).toEqual([1, 2, 3]);
    expect(warnings[2]!.usage.ratio).toBeGreaterThanOrEqual(0.92);
  });
});

describe('Session: layers fire on SPEC conditions (injected clock and token counts)', () => {
  it('layer 1: a result over the threshold goes to disk and the message keeps a frozen preview', async () => {
    const directory = await temporaryDirectory();
    cleanup.push(directory.remove);
    const settings = smallWindowSettings();
    const storage = new ToolResultStorage({
      directory: directory.path,
      thresholdBytes: settings.session.toolResultThresholdBytes,
      previewBytes: settings.session.toolResultPreviewBytes,
    });
    const session = newSession({
      model: controlledModel({}),
      settings,
      toolResultStorage: storage,
      tools: [fileTool(() => 30_000)],
    });
    const persisted = events(session, 'tool-result-persisted');
    await runAgentTurn(session, { content: 'Turn 1: read' });
    expect(session.tools.map((tool) => tool.definition.name)).toEqual(['read_file', 'read_persisted_output']);
    expect(persisted).toHaveLength(1);
    expect((await stat(persisted[0]!.path)).mode & 0o777).toBe(0o600);
    expect((await readFile(persisted[0]!.path, 'utf8')).length).toBeGreaterThan(30_000);
    const result = session.messages
      .flatMap((message) => (typeof message.content === 'string' ? [] : message.content))
      .find((block) => block.type === 'tool_result') as ToolResultBlock;
    expect(result.content).toMatch(/^<persisted-output>/);
    expect(Buffer.byteLength(result.content)).toBeLessThan(2_000);
  });

  it('layer 2: microcompaction only after more than the idle minutes, keeping the most recent results', async () => {
    const clock = steppingClock(1_000);
    const settings = smallWindowSettings();
    settings.session.microcompactKeepRecent = 2;
    const session = newSession({
      model: controlledModel({}),
      settings,
      now: clock.now,
      tools: [fileTool(() => 2_000)],
    });
    const applied = events(session, 'microcompaction-applied');
    for (const turn of [1, 2, 3])
      await runAgentTurn(session, { content: `Turn ${turn}: read`, context: `memory for ${turn}` });
    session.fileReadCache.record('/p/a.ts', { stat: { mtimeMs: 1, size: 10 }, bytes: 10 });
    clock.advance(59 * 60_000);
    await runAgentTurn(session, { content: 'Turn 4: think' });
    expect(applied).toEqual([]);
    expect(session.fileReadCache.check('/p/a.ts', { mtimeMs: 1, size: 10 })).toBe(true);

    clock.advance(61 * 60_000);
    await runAgentTurn(session, { content: 'Turn 5: read', context: 'memory for 5' });
    expect(applied).toHaveLength(1);
    expect(applied[0]!.droppedMeta).toBe(3);
    const results = session.messages
      .flatMap((message) => (typeof message.content === 'string' ? [] : message.content))
      .filter((block): block is ToolResultBlock => block.type === 'tool_result');
    const cleared = results.filter((block) => block.content === OLD_TOOL_RESULT_PLACEHOLDER).length;
    expect(cleared).toBeGreaterThan(0);
    expect(applied[0]!.clearedToolResults).toBe(cleared);
    expect(results.length - cleared).toBeGreaterThanOrEqual(2);
    // The cleared content is out of context: a re-read must not be answered "unchanged".
    expect(session.fileReadCache.check('/p/a.ts', { mtimeMs: 1, size: 10 })).toBe(false);
    // The turn in progress kept its own meta message.
    expect(session.messages.some((message) => message.meta && message.content === 'memory for 5')).toBe(true);
  });

  it('layer 3: notes update only past the initial threshold with growth, and never blocks the turn', async () => {
    const directory = await temporaryDirectory();
    cleanup.push(directory.remove);
    const reported: { inputTokens?: number } = { inputTokens: 7_000 };
    let releaseNotes: () => void = () => {};
    const notesGate = new Promise<void>((resolve) => (releaseNotes = resolve));
    const model = new ScriptedLanguageModel({
      whenExhausted: 'repeat-last',
      script: [
        async (request) => {
          const kind = classifyWorkloadRequest(request.messages);
          if (kind === 'notes') await notesGate;
          return {
            ...workloadAnswer(request.messages),
            ...(kind === 'turn' && { usage: { inputTokens: reported.inputTokens! } }),
          };
        },
      ],
    });
    const session = newSession({
      model,
      notes: { path: `${directory.path}/notes.md`, files: nodeNotesFiles },
      tools: [fileTool(() => 100)],
    });
    const started = events(session, 'notes-update-started');
    const finished = events(session, 'notes-update-finished');
    // Turn 4 makes no tool call (a natural break), but the context (7,000) is under notes.initThresholdTokens (8,000).
    await runAgentTurn(session, { content: 'Turn 4: think' });
    expect(started).toEqual([]);
    reported.inputTokens = 8_000;
    await runAgentTurn(session, { content: 'Turn 8: think' });
    expect(started).toHaveLength(1);
    // The update waits on the gate; the turn did not, and neither does the next one.
    expect(finished).toEqual([]);
    reported.inputTokens = 9_000;
    await runAgentTurn(session, { content: 'Turn 12: think' });
    expect(finished).toEqual([]);
    releaseNotes();
    await session.waitForBackground();
    expect(finished).toHaveLength(1);
    expect(await readFile(`${directory.path}/notes.md`, 'utf8')).toMatch(/Answered up to turn/);
    // Growth since the update (8,000 → 9,000+) is under notes.minGrowthTokens (3,000): no new update.
    await runAgentTurn(session, { content: 'Turn 16: think' });
    expect(started).toHaveLength(1);
    reported.inputTokens = 12_000;
    await runAgentTurn(session, { content: 'Turn 20: think' });
    expect(started).toHaveLength(2);
    await session.close();
  });

  it('layer 4: auto-compaction fires once the context passes the threshold, not at it', async () => {
    const settings = smallWindowSettings();
    const threshold = autoCompactThreshold(settings.session.contextWindow, settings);
    // A session whose next request carries exactly `reported` + the answer + the next user message.
    const sessionAt = async (reportedInputTokens: number) => {
      const session = newSession({ model: controlledModel({ inputTokens: reportedInputTokens }), settings });
      const finished = events(session, 'compaction-finished');
      session.fileReadCache.record('/p/a.ts', { stat: { mtimeMs: 1, size: 10 }, bytes: 10 });
      await runAgentTurn(session, { content: 'Turn 4: hello' });
      session.addUserMessage('Turn 8: next');
      return { session, finished };
    };
    const added = (await sessionAt(0)).session.usage().tokens;
    const under = await sessionAt(threshold - added);
    expect(under.session.usage().tokens).toBe(threshold);
    await under.session.prepareRequest({ maxOutputTokens: 1_000 });
    expect(under.finished).toEqual([]);
    expect(under.session.fileReadCache.check('/p/a.ts', { mtimeMs: 1, size: 10 })).toBe(true);

    const at = await sessionAt(threshold + 1 - added);
    expect(at.session.usage().tokens).toBe(threshold + 1);
    const request = await at.session.prepareRequest({ maxOutputTokens: 1_000 });
    expect(at.finished).toHaveLength(1);
    expect(at.finished[0]!.boundary.method).toBe('summary');
    expect(at.finished[0]!.preTokens).toBe(threshold + 1);
    expect(at.session.messages[0]!.compactSummary).toBe(true);
    expect(request.messages).toHaveLength(at.session.messages.length);
    // The standing instructions stay in the system prompt, untouched by the compaction.
    expect(request.system).toEqual([{ text: 'You are terse.', cache: true }]);
    // After a compaction the file-read cache is empty: the files are no longer in context.
    expect(at.session.fileReadCache.check('/p/a.ts', { mtimeMs: 1, size: 10 })).toBe(false);
  });

  it('the circuit breaker: after 3 failed compactions auto-compaction stops; over the window nothing is sent', async () => {
    const settings = smallWindowSettings();
    const reported: { inputTokens?: number } = { inputTokens: 34_000 };
    const model = new ScriptedLanguageModel({
      whenExhausted: 'repeat-last',
      script: [
        (request) => {
          const kind = classifyWorkloadRequest(request.messages);
          if (kind === 'summary') return { error: new EngramError('MODEL_UNAVAILABLE', 'The summarizer is down.') };
          return { ...workloadAnswer(request.messages), usage: { inputTokens: reported.inputTokens! } };
        },
      ],
    });
    const session = newSession({ model, settings });
    const failed = events(session, 'compaction-failed');
    await runAgentTurn(session, { content: 'Turn 4: hello' });
    // Over the threshold (33,000) but the request still fits the window: each failure is a warning event, the turn goes on.
    for (const turn of [8, 12, 16])
      await runAgentTurn(session, { content: `Turn ${turn}: hello`, maxOutputTokens: 1_000 });
    expect(failed.map((event) => event.failuresInARow)).toEqual([1, 2, 3]);
    expect(failed[2]!.tripped).toBe(true);
    expect(session.compactionState).toEqual({ failuresInARow: 3, tripped: true });
    const turnRequests = () =>
      model.requests.filter((request) => classifyWorkloadRequest(request.messages) === 'turn').length;
    const sent = turnRequests();
    await runAgentTurn(session, { content: 'Turn 20: hello', maxOutputTokens: 1_000 });
    expect(failed).toHaveLength(3);
    expect(turnRequests()).toBe(sent + 1);
    // Now a request that cannot fit: refused before sending, with a clear error.
    reported.inputTokens = 39_500;
    await runAgentTurn(session, { content: 'Turn 24: hello', maxOutputTokens: 100 });
    session.addUserMessage('Turn 28: hello');
    const error = await expectEngramError(
      () => session.prepareRequest({ maxOutputTokens: 1_000 }),
      'CONTEXT_WINDOW_EXCEEDED',
    );
    expect(error.message).toMatch(/compact/);
    expect(turnRequests()).toBe(sent + 2);
  });
});

describe('runAgentTurn', () => {
  it('answers unknown tools and failing tools with error results, and stops at maxToolRounds', async () => {
    const failing: SessionTool = {
      definition: { name: 'read_file', description: 'Reads a file.', inputSchema: { type: 'object' } },
      run: async () => {
        throw new EngramError('SANDBOX_DENIED', 'outside the project');
      },
    };
    const session = newSession({ model: controlledModel({}), tools: [failing] });
    const result = await runAgentTurn(session, { content: 'Turn 3: read three files', maxToolRounds: 2 });
    expect(result.stopReason).toBe('max-tool-rounds');
    expect(result.toolCalls).toBe(2);
    const results = session.messages
      .flatMap((message) => (typeof message.content === 'string' ? [] : message.content))
      .filter((block): block is ToolResultBlock => block.type === 'tool_result');
    expect(results.every((block) => block.isError === true && block.content.includes('SANDBOX_DENIED'))).toBe(true);

    const bare = newSession({ model: controlledModel({}) });
    await runAgentTurn(bare, { content: 'Turn 1: read' });
    const answer = bare.messages
      .flatMap((message) => (typeof message.content === 'string' ? [] : message.content))
      .find((block) => block.type === 'tool_result') as ToolResultBlock;
    expect(answer.isError).toBe(true);
    expect(answer.content).toMatch(/Unknown tool read_file/);
    await expectEngramError(() => runAgentTurn(bare, { content: 'x', maxToolRounds: 0 }), 'INVALID_INPUT');
  });

  it('an interrupted turn answers every pending tool call, so the session stays sendable', async () => {
    const controller = new AbortController();
    const slow: SessionTool = {
      definition: { name: 'read_file', description: 'Reads a file.', inputSchema: { type: 'object' } },
      run: async () => {
        controller.abort();
        return { content: 'partial' };
      },
    };
    const session = newSession({ model: controlledModel({}), tools: [slow] });
    await expect(runAgentTurn(session, { content: 'Turn 1: read', signal: controller.signal })).rejects.toThrow();
    expect(session.messages.at(-1)!.role).toBe('user');
    const next = await runAgentTurn(session, { content: 'Turn 4: continue' });
    expect(next.stopReason).toBe('end');
  });
});
