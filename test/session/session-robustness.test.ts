import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { sessionPaths } from '../../src/session/node/session-paths.js';
import { SessionTranscriptWriter } from '../../src/session/node/session-transcript-writer.js';
import { contextTokensFromUsage } from '../../src/session/context-budget.js';
import { EngramError } from '../../src/kernel/errors.js';
import type { LanguageModelRequest, ToolResultBlock, ToolUseBlock } from '../../src/contracts/language-model.js';
import { runAgentTurn } from '../../src/agent/agent-turn.js';
import type { SessionEventMap } from '../../src/session/session-events.js';
import { Session, type SessionOptions } from '../../src/session/session.js';
import type { SessionTool } from '../../src/contracts/session-tool.js';
import { ToolResultStorage } from '../../src/session/node/tool-result-storage.js';
import { ScriptedLanguageModel } from '../../src/testing/scripted-language-model.js';
import {
  classifyWorkloadRequest,
  estimatedInputTokens,
  workloadAnswer,
  workloadScriptedAnswer,
} from '../../src/testing/scripted-session-workload.js';
import { sequentialIds, smallWindowSettings, temporaryDirectory } from '../support/session-support.js';
import { nodeNotesFiles } from '../../src/session/node/session-notes-files.js';
import { openSession, resumeSession } from '../../src/node/session-open.js';
import { expectEngramError } from '../support/expect-engram-error.js';

/**
 * What the Session does when something goes wrong around it: a notes update that would not fit the
 * window, storage or transcript refusing a write, a message the transcript refuses. In every case the
 * session stays usable and nothing it already holds is lost or half-changed.
 */

let cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const step of cleanup) await step();
  cleanup = [];
});

async function directory(): Promise<string> {
  const made = await temporaryDirectory();
  cleanup.push(made.remove);
  return made.path;
}

function bytesTool(bytes: number): SessionTool {
  return {
    definition: {
      name: 'read_file',
      description: 'Reads a file.',
      inputSchema: { type: 'object', properties: { path: { type: 'string' } } },
    },
    run: async (input) => ({ content: `${String(input.path)}:\n${'x'.repeat(bytes)}` }),
  };
}

function workloadModel(): ScriptedLanguageModel {
  return new ScriptedLanguageModel({
    whenExhausted: 'repeat-last',
    script: [(request) => workloadScriptedAnswer(request)],
  });
}

function toolResults(session: Session): ToolResultBlock[] {
  return session.messages
    .flatMap((message) => (typeof message.content === 'string' ? [] : message.content))
    .filter((block): block is ToolResultBlock => block.type === 'tool_result');
}

describe('session notes never ask for more than the context window', () => {
  /** The first turn calls read_file five times; notes and later turns answer like the workload, usage as engram estimates the request. */
  function fiveCallModel(): ScriptedLanguageModel {
    return new ScriptedLanguageModel({
      whenExhausted: 'repeat-last',
      script: [
        (request: LanguageModelRequest) => {
          const usage = { inputTokens: estimatedInputTokens(request) };
          const last = request.messages.at(-1)!;
          if (
            classifyWorkloadRequest(request.messages) === 'turn' &&
            typeof last.content === 'string' &&
            last.content.startsWith('Turn 1:')
          ) {
            const calls = Array.from({ length: 5 }, (_, index): ToolUseBlock => ({
              type: 'tool_use',
              id: `toolu_${index}`,
              name: 'read_file',
              input: { path: `src/file-${index}.ts` },
            }));
            return { content: [{ type: 'text', text: 'Reading five files.' }, ...calls], usage };
          }
          return { ...workloadAnswer(request.messages), usage };
        },
      ],
    });
  }

  it.each([
    // name, user message bytes, tool result bytes, threshold near the window (only the exact check in the notes can stop it)
    ['a small context: the update runs and fits', 40_000, 2_000, false],
    ['big tool results past the compaction threshold: the update waits for the compaction', 100_000, 11_000, false],
    ['big tool results under a threshold near the window: the update is not sent', 96_000, 11_000, true],
  ] as const)('%s', async (_name, userBytes, resultBytes, nearWindow) => {
    const settings = smallWindowSettings();
    if (nearWindow) {
      settings.compaction.thresholdRatio = 0.99;
      settings.compaction.bufferTokens = 0;
      settings.session.outputReserve = 1_000;
    }
    const window = settings.session.contextWindow;
    const model = fiveCallModel();
    const notesPath = join(await directory(), 'notes.md');
    const session = new Session({
      model,
      settings,
      system: 'You are terse.',
      tools: [bytesTool(resultBytes)],
      notes: { path: notesPath, files: nodeNotesFiles },
      generateId: sequentialIds(),
    });
    const failed: Array<SessionEventMap['notes-update-failed']> = [];
    session.on('notes-update-failed', (event) => failed.push(event));
    session.addUserMessage(`Turn 1: ${'y'.repeat(userBytes)}`);
    session.recordResponse(await model.generate(await session.prepareRequest({ maxOutputTokens: 2_000 })));
    const calls = session.messages.at(-1)!.content as ToolUseBlock[];
    await session.addToolResults(
      await Promise.all(
        calls
          .filter((block) => block.type === 'tool_use')
          .map(async (call) => ({
            toolUseId: call.id,
            ...(await bytesTool(resultBytes).run(call.input, {
              sessionId: '',
              toolUseId: call.id,
              signal: new AbortController().signal,
            })),
          })),
      ),
    );
    await session.waitForBackground();
    const notesRequests = model.requests.filter((request) => classifyWorkloadRequest(request.messages) === 'notes');
    for (const request of notesRequests)
      expect(estimatedInputTokens(request) + request.maxOutputTokens).toBeLessThanOrEqual(window);
    if (userBytes === 40_000) {
      expect(notesRequests).toHaveLength(1);
      expect(failed).toEqual([]);
    } else {
      expect(notesRequests).toEqual([]);
    }
    if (nearWindow) expect((failed[0]?.error as EngramError | undefined)?.code).toBe('CONTEXT_WINDOW_EXCEEDED');
    await session.close();
  });
});

describe('a failed write leaves the session usable', () => {
  it('tool-result storage under a regular file: the turn ends with a clear error result and the next turn works', async () => {
    const root = await directory();
    await writeFile(join(root, 'blocker'), 'a file, not a folder');
    const settings = smallWindowSettings();
    const storage = new ToolResultStorage({
      directory: join(root, 'blocker', 'tool-results'),
      thresholdBytes: settings.session.toolResultThresholdBytes,
      previewBytes: 1_000,
    });
    const model = workloadModel();
    const session = new Session({
      model,
      settings,
      tools: [bytesTool(30_000)],
      toolResultStorage: storage,
      generateId: sequentialIds(),
    });
    const first = await runAgentTurn(session, { content: 'Turn 1: read a big file' });
    expect(first.stopReason).toBe('end');
    const results = toolResults(session);
    expect(results.length).toBeGreaterThan(0);
    for (const result of results) {
      expect(result.isError).toBe(true);
      expect(result.content).toMatch(/STORE_ERROR/);
      expect(Buffer.byteLength(result.content)).toBeLessThan(2_000);
    }
    const second = await runAgentTurn(session, { content: 'Turn 4: and now?' });
    expect(second.stopReason).toBe('end');
  });

  it('addToolResults wraps a storage failure in STORE_ERROR and keeps the calls open', async () => {
    const root = await directory();
    await writeFile(join(root, 'blocker'), 'x');
    const storage = new ToolResultStorage({
      directory: join(root, 'blocker', 'tool-results'),
      thresholdBytes: 100,
      previewBytes: 50,
    });
    const session = new Session({
      model: workloadModel(),
      settings: smallWindowSettings(),
      toolResultStorage: storage,
      generateId: sequentialIds(),
    });
    session.addUserMessage('Turn 1: read');
    session.recordResponse({
      text: '',
      content: [{ type: 'tool_use', id: 'toolu_1', name: 'read_file', input: {} }],
      usage: { inputTokens: 10, outputTokens: 5 },
    });
    const error = await expectEngramError(
      () => session.addToolResults([{ toolUseId: 'toolu_1', content: 'z'.repeat(500) }]),
      'STORE_ERROR',
    );
    expect(error.message).toMatch(/tool result/i);
    expect(session.messages).toHaveLength(2);
    // The user moves on: the open call is answered as interrupted, and the conversation is valid again.
    session.addUserMessage('never mind');
    expect(session.messages).toHaveLength(4);
    expect(JSON.stringify(session.messages[2]!.content)).toMatch(/Interrupted/);
    expect((session.messages[2]!.content as ToolResultBlock[])[0]!.toolUseId).toBe('toolu_1');
  });

  it('a message the transcript refuses changes nothing', async () => {
    const root = await directory();
    const transcript = new SessionTranscriptWriter({
      path: join(root, 's.jsonl'),
      sessionId: 'refused',
      maxLineBytes: 4_000,
    });
    const session = new Session({
      model: workloadModel(),
      settings: smallWindowSettings(),
      transcript,
      generateId: sequentialIds(),
    });
    await expectEngramError(() => session.addUserMessage(`Turn 1: ${'w'.repeat(8_000)}`), 'PAYLOAD_TOO_LARGE');
    expect(session.messages).toEqual([]);
    expect(session.metadata().messageCount).toBe(0);
    session.addUserMessage('Turn 1: short');
    session.recordResponse({
      text: '',
      content: [{ type: 'tool_use', id: 'toolu_1', name: 'read_file', input: {} }],
      usage: { inputTokens: 10, outputTokens: 5 },
    });
    // A tool result the transcript refuses: the call stays open, the caller can answer again.
    await expectEngramError(
      () => session.addToolResults([{ toolUseId: 'toolu_1', content: 'r'.repeat(8_000) }]),
      'PAYLOAD_TOO_LARGE',
    );
    expect(session.messages).toHaveLength(2);
    await session.addToolResults([{ toolUseId: 'toolu_1', content: 'short' }]);
    expect(session.messages).toHaveLength(3);
    await expectEngramError(
      () => session.recordResponse({ text: 'v'.repeat(8_000), usage: { inputTokens: 10, outputTokens: 5 } }),
      'PAYLOAD_TOO_LARGE',
    );
    expect(session.messages).toHaveLength(3);
    await session.close();
    const lines = (await readFile(join(root, 's.jsonl'), 'utf8')).trim().split('\n');
    expect(lines.filter((line) => line.includes('"type":"user"') || line.includes('"type":"assistant"'))).toHaveLength(
      3,
    );
  });

  it('a plan over session.planMaxChars is refused and the old plan stays', async () => {
    const settings = smallWindowSettings();
    settings.session.planMaxChars = 1_000;
    const session = new Session({ model: workloadModel(), settings });
    session.setPlan('1. read 2. write');
    await expectEngramError(() => session.setPlan('p'.repeat(1_001)), 'INVALID_INPUT');
    await expectEngramError(() => session.setPlan(42 as never), 'INVALID_INPUT');
    expect(session.plan).toBe('1. read 2. write');
    session.setPlan('p'.repeat(1_000));
    expect(session.plan).toHaveLength(1_000);
  });

  it('a transcript write that fails in the background is reported as transcript-error, and retried', async () => {
    const home = await directory();
    const cwd = '/work/project';
    const settings = smallWindowSettings();
    settings.session.transcriptFlushMs = 10;
    const paths = sessionPaths({ home, cwd, sessionId: 'unwritable' });
    // The project folder is taken by a regular file: the transcript cannot be created there (root or not).
    await mkdir(join(paths.projectDirectory, '..'), { recursive: true });
    await writeFile(paths.projectDirectory, 'in the way');
    const session = openSession({
      model: workloadModel(),
      settings,
      home,
      cwd,
      sessionId: 'unwritable',
      notes: false,
    }).session;
    const errors: Array<SessionEventMap['transcript-error']> = [];
    const reported = new Promise<void>((resolve) =>
      session.on('transcript-error', (event) => (errors.push(event), resolve())),
    );
    await runAgentTurn(session, { content: 'Turn 4: hello' });
    await reported;
    expect(errors[0]!.error).toBeInstanceOf(EngramError);
    expect((errors[0]!.error as EngramError).code).toBe('STORE_ERROR');
    expect(errors[0]!.path).toBe(paths.transcript);
    // Once the way is clear the pending lines are written: nothing was lost.
    await rm(paths.projectDirectory);
    await session.close();
    const text = await readFile(paths.transcript, 'utf8');
    expect(text).toContain('Turn 4: hello');
  });
});

describe('working memory and accounting through the Session', () => {
  it('the todo list follows session.todoMaxItems and round-trips through resume', async () => {
    const home = await directory();
    const settings = smallWindowSettings();
    settings.session.todoMaxItems = 300;
    const options = {
      model: workloadModel(),
      settings,
      home,
      cwd: '/work/project',
      sessionId: 'todos',
      notes: false,
    } as const;
    const session = openSession(options).session;
    const todos = Array.from({ length: 250 }, (_, index) => ({ content: `item ${index}`, status: 'pending' as const }));
    session.setTodos(todos);
    await runAgentTurn(session, { content: 'Turn 4: hello' });
    await expectEngramError(
      () => session.setTodos(Array.from({ length: 301 }, () => ({ content: 'x', status: 'pending' as const }))),
      'INVALID_INPUT',
    );
    expect(session.todos).toHaveLength(250);
    await session.close();
    const resumed = (await resumeSession(options)).session;
    expect(resumed.todos).toEqual(todos);
    await resumed.close();
  });

  it('counts context from the reported usage the way contextTokenCount does (input, cache and output)', async () => {
    const session = new Session({ model: workloadModel(), settings: smallWindowSettings() } satisfies SessionOptions);
    session.addUserMessage('Turn 4: hello');
    await session.prepareRequest({ maxOutputTokens: 100 });
    const usage = { inputTokens: 1_000, outputTokens: 30, cacheReadTokens: 500, cacheWriteTokens: 250 };
    session.recordResponse({ text: 'a'.repeat(4_000), usage });
    expect(session.usage().tokens).toBe(contextTokensFromUsage(usage));
  });
});
