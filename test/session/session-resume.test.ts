import { spawn } from 'node:child_process';
import { appendFile, readFile, stat } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { sessionPaths } from '../../src/session/node/session-paths.js';
import { readSessionTranscript } from '../../src/session/node/session-transcript-reader.js';
import { EngramError } from '../../src/kernel/errors.js';
import { runAgentTurn } from '../../src/agent/agent-turn.js';
import { openSession, resumeSession, type OpenSessionOptions } from '../../src/node/session-open.js';
import { ScriptedLanguageModel } from '../../src/testing/scripted-language-model.js';
import {
  workloadScriptedAnswer,
  workloadReadFileTool,
  workloadUserMessage,
} from '../../src/testing/scripted-session-workload.js';
import {
  sequentialIds,
  smallWindowSettings,
  SMALL_WORKLOAD,
  steppingClock,
  temporaryDirectory,
} from '../support/session-support.js';

/**
 * Transcripts through the Session (SPEC §2): every message, boundary and todo list is appended; a
 * process killed with SIGKILL loses at most what was appended in the last flush interval (~100 ms);
 * resume rebuilds the live list, todos and compaction state from the file and the session goes on.
 */

const openedSession = async (options: OpenSessionOptions) => openSession(options).session;
const resumedSession = async (options: OpenSessionOptions & { sessionId: string }) =>
  (await resumeSession(options)).session;

const CHILD = fileURLToPath(new URL('../fixtures/session-kill-child.ts', import.meta.url));
const CWD = '/work/project';

let cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const step of cleanup) await step();
  cleanup = [];
});

function workloadModel(): ScriptedLanguageModel {
  return new ScriptedLanguageModel({
    whenExhausted: 'repeat-last',
    script: [(request) => workloadScriptedAnswer(request, SMALL_WORKLOAD)],
  });
}

describe('Session transcripts and resume', () => {
  it('SIGKILL loses at most the last flush interval; resume continues from the file', async () => {
    const home = await temporaryDirectory();
    cleanup.push(home.remove);
    const sessionId = 'killed-session';
    const child = spawn(process.execPath, ['--import', 'tsx', CHILD, home.path, CWD, sessionId], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const reported = new Map<number, { uuid: string; count: number }>();
    const KILL_AFTER_TURN = 25;
    await new Promise<void>((resolve, reject) => {
      let buffer = '';
      child.once('exit', (code) => reject(new Error(`the session process exited early (${code}): ${stderr}`)));
      child.stdout.on('data', (chunk: Buffer) => {
        buffer += chunk.toString();
        for (let newline = buffer.indexOf('\n'); newline >= 0; newline = buffer.indexOf('\n')) {
          const [, turn, uuid, count] = buffer.slice(0, newline).split(' ');
          buffer = buffer.slice(newline + 1);
          reported.set(Number(turn), { uuid: uuid!, count: Number(count) });
          if (Number(turn) === KILL_AFTER_TURN) {
            // Three flush intervals after turn 25 ended, everything up to it must be on disk, whatever is still pending.
            setTimeout(() => {
              child.removeAllListeners('exit');
              child.once('exit', () => resolve());
              child.kill('SIGKILL');
            }, 300);
          }
        }
      });
    });
    expect(child.signalCode).toBe('SIGKILL');

    const paths = sessionPaths({ home: home.path, cwd: CWD, sessionId });
    expect((await stat(paths.transcript)).mode & 0o777).toBe(0o600);
    const resumed = await readSessionTranscript(paths.transcript);
    // Turn 25 and everything before it survived (the turns after it may have too, up to the kill).
    const text = await readFile(paths.transcript, 'utf8');
    for (let turn = 1; turn <= KILL_AFTER_TURN; turn += 1)
      expect(text).toContain(`"uuid":"${reported.get(turn)!.uuid}"`);
    expect(resumed.messages.length).toBeGreaterThan(0);
    expect(resumed.skippedLines).toBeLessThanOrEqual(1);

    // A torn last line (the kill in the middle of a write) is skipped, never fatal.
    await appendFile(paths.transcript, '{"type":"user","uuid":"torn","message":{"role":"us');
    const model = workloadModel();
    const session = await resumedSession({
      model,
      home: home.path,
      cwd: CWD,
      sessionId,
      system: 'You are terse.',
      tools: [workloadReadFileTool(SMALL_WORKLOAD)],
      notes: false,
    });
    expect(session.sessionId).toBe(sessionId);
    expect(session.messages.map((message) => message.uuid)).toEqual(resumed.messages.map((message) => message.uuid));
    await runAgentTurn(session, { content: workloadUserMessage(1_000) });
    // The request went out with the whole resumed conversation first, then the new turn.
    const request = model.requests[0]!;
    expect(request.messages.slice(0, resumed.messages.length).map((message) => message.content)).toEqual(
      resumed.messages.map((message) => message.content),
    );
    await session.close();
    const again = await readSessionTranscript(paths.transcript);
    expect(again.messages.map((message) => message.uuid)).toEqual(session.messages.map((message) => message.uuid));
    expect(again.metadata.messageCount).toBe(session.messages.length);
  });

  it('resume restores the compaction state, todos and plan; a resumed session keeps compacting', async () => {
    const home = await temporaryDirectory();
    cleanup.push(home.remove);
    const settings = smallWindowSettings();
    const clock = steppingClock(1_000);
    const open = (resume: boolean) =>
      (resume ? resumedSession : openedSession)({
        model: workloadModel(),
        settings,
        home: home.path,
        cwd: CWD,
        sessionId: 'compacted',
        system: 'You are terse.',
        tools: [workloadReadFileTool(SMALL_WORKLOAD)],
        notes: false,
        now: clock.now,
        generateId: sequentialIds(resume ? 'b' : 'a'),
      });
    const first = await open(false);
    const boundaries: string[] = [];
    first.on('compaction-finished', (event) => boundaries.push(event.boundary.uuid));
    first.setTodos([{ content: 'Read every module', status: 'in_progress', activeForm: 'Reading modules' }]);
    first.setPlan('1. read modules 2. answer');
    for (let turn = 1; boundaries.length < 2; turn += 1)
      await runAgentTurn(first, { content: workloadUserMessage(turn) });
    await runAgentTurn(first, { content: workloadUserMessage(500) });
    await first.close();

    const second = await open(true);
    expect(second.messages.map((message) => message.uuid)).toEqual(first.messages.map((message) => message.uuid));
    expect(second.messages[0]!.compactSummary).toBe(true);
    expect(second.todos).toEqual([
      { content: 'Read every module', status: 'in_progress', activeForm: 'Reading modules' },
    ]);
    expect(second.plan).toBe(first.plan);
    const resumedBoundaries: string[] = [];
    second.on('compaction-finished', (event) => resumedBoundaries.push(event.boundary.uuid));
    for (let turn = 600; resumedBoundaries.length < 1; turn += 1)
      await runAgentTurn(second, { content: workloadUserMessage(turn) });
    await second.close();
    const final = await readSessionTranscript(
      sessionPaths({ home: home.path, cwd: CWD, sessionId: 'compacted' }).transcript,
    );
    expect(final.boundary?.uuid).toBe(resumedBoundaries[0]);
    expect(final.messages.map((message) => message.uuid)).toEqual(second.messages.map((message) => message.uuid));
  });

  it('a killed process that left tool calls open resumes with them answered as interrupted', async () => {
    const home = await temporaryDirectory();
    cleanup.push(home.remove);
    const model = workloadModel();
    const session = await openedSession({
      model,
      home: home.path,
      cwd: CWD,
      sessionId: 'open-calls',
      notes: false,
      tools: [workloadReadFileTool(SMALL_WORKLOAD)],
    });
    session.addUserMessage(workloadUserMessage(1));
    session.recordResponse(await model.generate(await session.prepareRequest({ maxOutputTokens: 500 })));
    await session.close();
    const resumed = await resumedSession({
      model: workloadModel(),
      home: home.path,
      cwd: CWD,
      sessionId: 'open-calls',
      notes: false,
      tools: [workloadReadFileTool(SMALL_WORKLOAD)],
    });
    const result = await runAgentTurn(resumed, { content: workloadUserMessage(4) });
    expect(result.stopReason).toBe('end');
    expect(JSON.stringify(resumed.messages[2]!.content)).toMatch(/Interrupted/);
    await resumed.close();
  });

  it('resume refuses an unknown or malformed session id and changes nothing', async () => {
    const home = await temporaryDirectory();
    cleanup.push(home.remove);
    const model = workloadModel();
    await expect(
      resumedSession({ model, home: home.path, cwd: CWD, sessionId: 'never-written' }),
    ).rejects.toMatchObject({ code: 'NOT_FOUND' });
    for (const sessionId of ['../escape', 'a/b', '', 'x'.repeat(300)]) {
      await expect(resumedSession({ model, home: home.path, cwd: CWD, sessionId })).rejects.toBeInstanceOf(EngramError);
    }
    // A session that never got a message leaves no file behind.
    const empty = await openedSession({ model, home: home.path, cwd: CWD, sessionId: 'empty' });
    await empty.close();
    await expect(
      readFile(sessionPaths({ home: home.path, cwd: CWD, sessionId: 'empty' }).transcript),
    ).rejects.toMatchObject({ code: 'ENOENT' });
  });
});
