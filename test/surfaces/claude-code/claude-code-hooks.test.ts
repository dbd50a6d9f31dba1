import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseClaudeCodeTranscript } from '../../../src/extraction/transcripts/claude-code-transcript.js';
import { useWorkspace } from '../../support/cli-harness.js';
import { eventually } from '../../support/claude-code-harness.js';
import {
  assistantLine,
  expectValidOutput,
  line,
  type HookRun,
  logLines,
  runHook,
  userLine,
  hugeTranscript,
} from '../../support/claude-code-hook-run.js';

describe('the Claude Code hooks as processes', () => {
  const workspace = useWorkspace();

  it('survives hostile input: malformed JSON, no session, a missing or huge transcript, a cwd that does not exist; exit 0, valid output, no memory', async () => {
    const huge = hugeTranscript(workspace);
    const base = { session_id: 'sess-h', cwd: workspace.cwd };
    const cases: Array<[string, string]> = [
      ['user-prompt-submit', '{"hookSpecificOutput": {not json'],
      ['session-start', ''],
      ['stop', '[1,2,3]'],
      ['user-prompt-submit', line({ cwd: workspace.cwd, prompt: 'no session id' })],
      ['user-prompt-submit', line({ session_id: 'x'.repeat(500), cwd: workspace.cwd, prompt: 'hi' })],
      ['stop', line({ ...base, transcript_path: join(workspace.root, 'missing.jsonl') })],
      ['stop', line({ ...base, transcript_path: 'relative/path.jsonl' })],
      ['session-end', line({ ...base, transcript_path: huge, reason: 'other' })],
      ['pre-compact', line({ ...base, transcript_path: workspace.root })],
      // A session whose first hook names a folder that is gone (a session seen before keeps its folder).
      [
        'user-prompt-submit',
        line({ ...base, session_id: 'sess-gone', cwd: join(workspace.root, 'gone'), prompt: 'remember that x' }),
      ],
      ['not-an-event', line(base)],
    ];
    for (const [event, input] of cases) expectValidOutput(await runHook(workspace, event, input));
    const list = await workspace.json(['list']);
    expect(list.memories ?? list).toHaveLength(0);
    const log = logLines(workspace);
    expect(log.some((entry) => /not JSON/.test(entry.message))).toBe(true);
    expect(log.some((entry) => /not a folder/.test(entry.message))).toBe(true);
    expect(log.some((entry) => /over the/.test(entry.message))).toBe(true);
  }, 60_000);

  // The Stop tests run `engram queue run` themselves with the detached worker off: a worker that
  // has taken the spool line but not yet queued its job leaves `queue run` nothing to do, and the
  // job missing when it is looked for (seen on a loaded CI machine). The worker has its own tests.
  const NO_WORKER = { ENGRAM_HOOK_WORKER: 'false' };

  it('queues a torn transcript: the whole statement is stored, the torn line never, and a second Stop queues nothing new', async () => {
    const transcript = join(workspace.root, 'sess-1.jsonl');
    writeFileSync(
      transcript,
      [
        line({ type: 'queue-operation', operation: 'enqueue', sessionId: 'sess-1', content: 'x' }),
        userLine('u1', null, 'Remember that the build cache lives in /var/cache/bolt.'),
        line({
          type: 'attachment',
          uuid: 'att1',
          parentUuid: 'u1',
          sessionId: 'sess-1',
          attachment: { type: 'hook_additional_context', content: ['<memory_context>\nold\n</memory_context>'] },
        }),
        assistantLine('a1', 'att1', 'Noted.'),
        line({ type: 'last-prompt', sessionId: 'sess-1', lastPrompt: 'x' }),
        line({ type: 'cost-state', sessionId: 'sess-1' }),
        '{"type":"user","uuid":"u2","parentUuid":"a1","message":{"role":"user","content":"Remember that the torn',
      ].join('\n'),
    );
    const input = line({
      session_id: 'sess-1',
      cwd: workspace.cwd,
      transcript_path: transcript,
      hook_event_name: 'Stop',
    });
    const stop = await runHook(workspace, 'stop', input, NO_WORKER);
    expect(stop).toEqual({ code: 0, stdout: '' });
    await workspace.run(['queue', 'run']);
    const list = await workspace.json(['list']);
    const contents = ((list.memories ?? list) as Array<{ content: string }>).map((memory) => memory.content);
    expect(contents.some((content) => content.includes('/var/cache/bolt'))).toBe(true);
    expect(contents.some((content) => content.includes('torn'))).toBe(false);
    const again = await runHook(workspace, 'stop', input, NO_WORKER);
    expect(again.code).toBe(0);
    const queue = await workspace.json(['queue', '--state', 'pending,running,failed,done']);
    expect(queue.jobs).toHaveLength(1);
  }, 60_000);

  it("queues a subagent's own transcript under its own session: the parent's cursor and jobs are untouched", async () => {
    const folder = join(workspace.root, 'sess-1', 'subagents');
    mkdirSync(folder, { recursive: true });
    const transcript = join(folder, 'agent-a1b2.jsonl');
    writeFileSync(
      transcript,
      [
        userLine('s1', null, 'Find the config file.', { isSidechain: true, agentId: 'a1b2' }),
        assistantLine('s2', 's1', 'It is config.yml.', { isSidechain: true, agentId: 'a1b2' }),
      ].join('\n'),
    );
    const run = await runHook(
      workspace,
      'stop',
      line({ session_id: 'sess-1', cwd: workspace.cwd, transcript_path: transcript }),
      NO_WORKER,
    );
    expect(run.code).toBe(0);
    await workspace.run(['queue', 'run']);
    const queue = await workspace.json(['queue', '--state', 'pending,running,failed,done']);
    expect(queue.jobs.map((job: { sessionId: string }) => job.sessionId)).toEqual(['sess-1:agent-a1b2']);
  }, 60_000);

  it('answers a prompt with the memories of its project, then leaves out what the session already has', async () => {
    await workspace.run(['remember', 'The release branch is named ship-it.', '--type', 'project']);
    const input = line({ session_id: 'sess-p', cwd: workspace.cwd, prompt: 'what is the release branch named?' });
    const first = await runHook(workspace, 'user-prompt-submit', input);
    expectValidOutput(first);
    const context = JSON.parse(first.stdout).hookSpecificOutput.additionalContext as string;
    expect(context).toContain('ship-it');
    expect(context.startsWith('<memory_context>')).toBe(true);
    expect(context.length).toBeLessThan(10_000);
    const second = await runHook(workspace, 'user-prompt-submit', input);
    expect(second).toEqual({ code: 0, stdout: '' });
    const start = await runHook(
      workspace,
      'session-start',
      line({ session_id: 'sess-p', cwd: workspace.cwd, source: 'compact' }),
    );
    expect(JSON.parse(start.stdout).hookSpecificOutput.additionalContext).toContain('ship-it');
    // Turned off by its setting: nothing injected.
    const off = await runHook(
      workspace,
      'user-prompt-submit',
      line({ session_id: 'sess-q', cwd: workspace.cwd, prompt: 'release branch?' }),
      {
        ENGRAM_HOOK_RECALL: 'false',
      },
    );
    expect(off).toEqual({ code: 0, stdout: '' });
  }, 60_000);

  it('SessionStart gives the project memories the index does not show in full once: not again on resume, nor for a prompt', async () => {
    const lint =
      'Always run the linter before committing: CI rejects unformatted code; npm run lint -- --fix repairs it.';
    await workspace.run(['remember', lint, '--type', 'feedback', '--description', 'Lint before committing']);
    const contextOf = (run: HookRun): string =>
      run.stdout === '' ? '' : (JSON.parse(run.stdout).hookSpecificOutput.additionalContext as string);
    const block = (text: string): string => text.slice(text.lastIndexOf('<memory_context>'));
    const input = (source: string) => line({ session_id: 'sess-r', cwd: workspace.cwd, source });
    const startup = contextOf(await runHook(workspace, 'session-start', input('startup')));
    expect(block(startup)).toContain('npm run lint -- --fix');
    const prompt = await runHook(
      workspace,
      'user-prompt-submit',
      line({ session_id: 'sess-r', cwd: workspace.cwd, prompt: 'how do I lint before committing?' }),
    );
    expect(contextOf(prompt)).not.toContain('npm run lint');
    const resumed = contextOf(await runHook(workspace, 'session-start', input('resume')));
    expect(resumed).toContain('Lint before committing');
    expect(resumed).not.toContain('npm run lint');
    // A new session (clear gives a new id) gets it again.
    const fresh = contextOf(
      await runHook(workspace, 'session-start', line({ session_id: 'sess-r2', cwd: workspace.cwd, source: 'clear' })),
    );
    expect(block(fresh)).toContain('npm run lint -- --fix');
  }, 60_000);

  it('runs nothing when engram itself called claude (ENGRAM_NESTED)', async () => {
    await workspace.run(['remember', 'The release branch is named ship-it.', '--type', 'project']);
    const input = line({ session_id: 'sess-n', cwd: workspace.cwd, prompt: 'release branch?' });
    expect(await runHook(workspace, 'user-prompt-submit', input, { ENGRAM_NESTED: '1' })).toEqual({
      code: 0,
      stdout: '',
    });
  }, 30_000);
});

describe('Claude Code 2.1.332 transcripts', () => {
  const fixture = (name: string) =>
    readFileSync(new URL(`../../fixtures/claude-code-2.1.332-${name}.jsonl`, import.meta.url), 'utf8');

  it('reads a session with queue-operation, attachment, api-request*, last-prompt and cost-state lines as its two messages', () => {
    const parsed = parseClaudeCodeTranscript(fixture('session'));
    const typed = parsed.conversation.messages.filter((message) => message.meta !== true);
    expect(typed.map((message) => [message.role, message.text])).toEqual([
      ['user', 'hello'],
      ['assistant', 'HELLO FROM FAKE SERVER'],
    ]);
    expect(parsed.skippedLines).toBe(0);
    expect(parsed.sidechain).toBeUndefined();
  });

  it('reads a compacted session: the summary and the /compact lines are not typed text, the turns on both sides are', () => {
    const parsed = parseClaudeCodeTranscript(fixture('compact'));
    const typed = parsed.conversation.messages.filter((message) => message.meta !== true);
    expect(typed.map((message) => message.text)).toEqual([
      'my name is Ada',
      'HELLO FROM FAKE SERVER',
      'what is my name?',
      'HELLO FROM FAKE SERVER',
    ]);
  });
});

describe('SessionEnd and consolidation', () => {
  const workspace = useWorkspace();

  it('SessionEnd counts the session for consolidation; its worker runs the dream once the gates open, never the hook', async () => {
    // Gates open at once for the test: no hours between runs, one session, no scan interval.
    writeFileSync(
      join(workspace.cwd, '.engram.json'),
      JSON.stringify({ dream: { minHours: 0, minSessions: 1, scanMinutes: 0 } }),
    );
    for (let copy = 0; copy < 2; copy += 1)
      await workspace.json([
        'remember',
        'The staging database runs on port 5433.',
        '--type',
        'reference',
        '--no-dedupe',
      ]);
    expect((await workspace.json(['list'])).memories).toHaveLength(2);
    const end = await runHook(
      workspace,
      'session-end',
      line({ session_id: 'sess-dream', cwd: workspace.cwd, hook_event_name: 'SessionEnd', reason: 'other' }),
    );
    expect(end).toEqual({ code: 0, stdout: '' });
    const dreamt = await eventually(async () =>
      logLines(workspace).find((entry) => entry.status === 'dream' && /improved [1-9]\d* memor/.test(entry.message)),
    );
    expect(dreamt.message).toMatch(/^dream cs_/);
    // Merged, never deleted: one left in recall, the other invalidated with a link to it.
    expect((await workspace.json(['list'])).memories).toHaveLength(1);
  });
});
