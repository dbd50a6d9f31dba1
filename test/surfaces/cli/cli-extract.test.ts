import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAnthropicMessagesServer } from '../../../src/testing/anthropic-messages-server.js';
import type { LanguageModelServer } from '../../../src/testing/loopback-model-server.js';
import { createWorkspace, type Workspace } from '../../support/cli-harness.js';
import { answer } from '../../support/extraction-support.js';

let workspace: Workspace;
let server: LanguageModelServer;
let modelEnv: Record<string, string>;

beforeAll(async () => {
  workspace = createWorkspace();
  server = await startAnthropicMessagesServer();
  modelEnv = { ANTHROPIC_API_KEY: 'sk-ant-test', ANTHROPIC_BASE_URL: server.url, ENGRAM_MODEL_MAX_RETRIES: '0' };
});
afterAll(async () => {
  await server.close();
  workspace.cleanup();
});

function claudeTranscript(sessionId: string, turns: Array<[string, string]>): string {
  const lines: string[] = [];
  let parent: string | null = null;
  turns.forEach(([userText, assistantText], index) => {
    const user = `${sessionId}-u${index}`;
    const assistant = `${sessionId}-a${index}`;
    lines.push(
      JSON.stringify({
        type: 'user',
        uuid: user,
        parentUuid: parent,
        sessionId,
        timestamp: '2026-01-05T10:00:00.000Z',
        message: { role: 'user', content: userText },
      }),
    );
    lines.push(
      JSON.stringify({
        type: 'progress',
        uuid: `${user}-p`,
        parentUuid: user,
        sessionId,
        data: { type: 'hook_progress' },
      }),
      JSON.stringify({
        type: 'assistant',
        uuid: assistant,
        parentUuid: `${user}-p`,
        sessionId,
        message: { id: `msg_${index}`, role: 'assistant', content: [{ type: 'text', text: assistantText }] },
      }),
    );
    parent = assistant;
  });
  return `${lines.join('\n')}\n`;
}

function write(name: string, content: string | Buffer): string {
  const path = join(workspace.cwd, name);
  writeFileSync(path, content);
  return path;
}

describe('engram extract', () => {
  it('extracts a Claude Code transcript with the configured model, and a second run reads only what is new', async () => {
    const file = write(
      'session.jsonl',
      claudeTranscript('cc-1', [['Our staging database is PostgreSQL 16 on db-staging.internal.', 'Got it.']]),
    );
    server.script({
      message: {
        text: answer({
          content: 'The staging database is PostgreSQL 16 on db-staging.internal.',
          name: 'staging-database',
          type: 'reference',
        }),
      },
    });
    const report = await workspace.json(['extract', file], 0, { env: modelEnv });
    expect(report).toMatchObject({
      format: 'claude',
      sessionId: 'cc-1',
      mode: 'cheap',
      modelCalls: 1,
      queued: { status: 'queued', messages: 2 },
    });
    expect(report.written).toEqual([
      expect.objectContaining({ name: 'staging-database', action: 'created', turnId: 'cc-1-a0' }),
    ]);
    expect(server.requests).toHaveLength(1);

    const again = await workspace.run(['extract', file], { env: modelEnv });
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/Nothing new in .*session\.jsonl/);
    expect(server.requests).toHaveLength(1);

    writeFileSync(
      file,
      claudeTranscript('cc-1', [
        ['Our staging database is PostgreSQL 16 on db-staging.internal.', 'Got it.'],
        ['Thanks, that is all.', 'Bye.'],
      ]),
    );
    server.script({ message: { text: '[]' } });
    const grown = await workspace.run(['extract', file], { env: modelEnv });
    expect(grown.code).toBe(0);
    expect(grown.stdout).toMatch(/2 new message\(s\), 1 model call\(s\)/);
    expect(grown.stdout).toContain('no memory written');
    expect((server.requests[1]!.body as any).messages[0].content).not.toContain('PostgreSQL');
    const listed = await workspace.json(['list']);
    expect(listed.total).toBe(1);
  });

  it('writes explicit statements from plain text and reports what the model answered and what was dropped', async () => {
    const file = write(
      'notes.txt',
      'User: From now on, use pnpm instead of npm.\nAssistant: Will do.\nUser: The design review is every Monday at 10.',
    );
    server.script({
      message: {
        text: JSON.stringify([
          { type: 'feedback', name: 'use-pnpm', content: 'Use pnpm instead of npm.', scope: 'project' },
          {
            type: 'project',
            name: 'design-review-monday',
            content: 'The design review is every Monday at 10:00.',
            scope: 'project:somewhere/else',
          },
        ]),
      },
    });
    const result = await workspace.run(['extract', file], { env: modelEnv });
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/created .* \(feedback, project:.*, explicit\)/);
    expect(result.stdout).toMatch(/dropped {2}already-known: Use pnpm instead of npm\./);
    expect(result.stdout).toMatch(/dropped {2}scope-not-allowed/);
    const userMessage = (server.requests.at(-1)!.body as any).messages[0].content as string;
    expect(userMessage).toContain('<already_known>\n- [feedback]');
  });

  it('without a model, applies explicit statements only, says what a model would add, and exits 0', async () => {
    const file = write('offline.txt', 'Remember that the billing service owner is Dana.\n\nWe talked about lunch.');
    const result = await workspace.run(['extract', file, '--json']);
    expect(result.code).toBe(0);
    expect(result.stderr).toBe('');
    const report = result.json();
    expect(report.mode).toBe('offline');
    expect(report.modelNeeded).toBe(true);
    expect(report.modelWouldAdd).toMatchObject({ messages: 2, configure: expect.stringMatching(/ANTHROPIC_API_KEY/) });
    expect(report.written).toEqual([expect.objectContaining({ origin: 'explicit', action: 'created' })]);
    // Read again: each message's statements are applied once.
    const text = await workspace.run(['extract', file]);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(
      /No language model is configured, so only explicit statements .* were applied \(0 written\)/,
    );
    expect(text.stdout).toMatch(/A model would also read the 2 message\(s\) for facts, preferences/);
    expect(text.stdout).toMatch(
      /2 new message\(s\)\. 2 of them were read for explicit statements before, so not again\./,
    );
    expect(text.stdout).toContain('no memory written');
    const listed = await workspace.json(['list', '--type', 'project,feedback,user,reference,procedure']);
    expect(listed.memories.filter((memory: any) => /Dana/.test(memory.content))).toHaveLength(1);
  });

  it.each([
    ['codex', 'codex/rollout-0.171.0-tool-call-resume.jsonl'],
    ['gemini', 'gemini/session-0.61.0-tool-call-resume.jsonl'],
    ['copilot', 'copilot/events-1.0.102-tool-call-continue.jsonl'],
    ['qwen', 'qwen/chat-0.24.4-tool-call-continue.jsonl'],
  ])('reads a %s session file without --format: "remember that …" typed there is stored once', async (_, name) => {
    const file = write(name.replace('/', '-'), readFileSync(new URL(`../../fixtures/agents/${name}`, import.meta.url)));
    const result = await workspace.run(['extract', file, '--json']);
    expect(result.code, result.stderr).toBe(0);
    // One store for the four: the first file creates the memory, the others find it already there.
    expect(result.json().written).toEqual([expect.objectContaining({ origin: 'explicit' })]);
    expect(JSON.stringify(result.json().written)).toMatch(/tabs/);
    expect((await workspace.run(['extract', file, '--json'])).json().written).toEqual([]);
    const listed = await workspace.json(['list', '--type', 'project,feedback,user,reference,procedure']);
    expect(listed.memories.filter((memory: any) => /tabs/i.test(memory.content))).toHaveLength(1);
    expect(JSON.stringify(listed.memories)).not.toMatch(/Frankfurt|environment_context|session_context/);
  });

  it('reads OpenAI/Anthropic chat messages without --format: JSON lines, a JSON array, {"messages"}', async () => {
    const lines = write(
      'chat-lines.jsonl',
      [
        JSON.stringify({
          role: 'system',
          content: 'You are helpful. Remember that the system prompt is not the user.',
        }),
        JSON.stringify({ role: 'user', content: 'Remember that the payments service owner is Priya.' }),
        JSON.stringify({ role: 'assistant', content: [{ type: 'text', text: 'Noted.' }] }),
        JSON.stringify({
          role: 'user',
          content: [{ type: 'text', text: 'From now on, use pnpm in this repository.' }],
        }),
        JSON.stringify({ role: 'user', content: '' }),
      ].join('\n'),
    );
    const first = await workspace.run(['extract', lines, '--json']);
    expect(first.code).toBe(0);
    const report = first.json();
    expect(report.format).toBe('chat');
    expect(report.messages).toBe(3);
    expect(report.written.map((memory: any) => memory.origin)).toEqual(['explicit', 'explicit']);
    expect(report.transcriptWarnings).toEqual([expect.stringMatching(/line 5 is an empty user message: skipped/)]);
    // Appending keeps the earlier ids: offline, the earlier messages are known as read for explicit statements.
    writeFileSync(lines, `\n${JSON.stringify({ role: 'user', content: 'Remember that staging is in Dublin.' })}\n`, {
      flag: 'a',
    });
    const grown = await workspace.json(['extract', lines]);
    expect(grown).toMatchObject({ messages: 4, appliedBefore: 2 });
    expect(grown.written).toHaveLength(1);

    const array = write(
      'chat-array.json',
      JSON.stringify(
        [
          {
            role: 'user',
            content: [{ type: 'input_text', text: 'Remember that the on-call rota lives in PagerDuty.' }],
          },
          {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 'c1', type: 'function', function: { name: 'lookup', arguments: '{"q":"rota"}' } }],
          },
          { role: 'tool', tool_call_id: 'c1', content: 'Remember that tool output is never a user statement.' },
        ],
        null,
        2,
      ),
    );
    const fromArray = await workspace.json(['extract', array]);
    expect(fromArray).toMatchObject({ format: 'chat', messages: 3 });
    expect(fromArray.written.map((memory: any) => memory.name)).toHaveLength(1);
    const wrapped = write(
      'chat-request.json',
      JSON.stringify({ model: 'x', messages: [{ role: 'user', content: 'Hello there.' }] }),
    );
    expect(await workspace.json(['extract', wrapped])).toMatchObject({ format: 'chat', messages: 1, written: [] });
    const listed = await workspace.json(['list', '--type', 'project,feedback,user,reference,procedure']);
    const contents = listed.memories.map((memory: any) => memory.content).join('\n');
    expect(contents).toMatch(/Priya/);
    expect(contents).toMatch(/PagerDuty/);
    expect(contents).not.toMatch(/system prompt is not the user|tool output is never/);
  });

  it('a "forget" in a transcript read twice offline archives one memory', async () => {
    await workspace.json(['remember', 'The team deploys on Fridays.']);
    await workspace.json(['remember', 'The team deploys on Fridays from the main branch using the blue pipeline.']);
    const file = write('forget.txt', 'Forget that the team deploys on Fridays.');
    expect((await workspace.run(['extract', file])).code).toBe(0);
    expect((await workspace.run(['extract', file])).code).toBe(0);
    const listed = await workspace.json(['list']);
    expect(
      listed.memories.map((memory: any) => memory.content).filter((content: string) => /Fridays/.test(content)),
    ).toEqual(['The team deploys on Fridays from the main branch using the blue pipeline.']);
  });

  it('reads text appended to the last paragraph of a plain-text file as new, and nothing before it', async () => {
    const file = write('growing.txt', 'The user prefers tabs.\n\nReleases go out on Tuesdays.\n');
    server.script({ message: { text: '{"memories": []}' } });
    expect((await workspace.run(['extract', file], { env: modelEnv })).code).toBe(0);
    writeFileSync(
      file,
      'The user prefers tabs.\n\nReleases go out on Tuesdays.\nEvery release gets a changelog entry.\n',
    );
    server.script({ message: { text: '{"memories": []}' } });
    const grown = await workspace.run(['extract', file], { env: modelEnv });
    expect(grown.code).toBe(0);
    expect(grown.stdout).toMatch(/1 new message\(s\), 1 model call\(s\)/);
    const sent = (server.requests.at(-1)!.body as any).messages[0].content as string;
    expect(sent).toContain('Every release gets a changelog entry.');
    expect(sent).not.toContain('prefers tabs');
  });

  it('refuses bad files and flags with clear errors and changes nothing', async () => {
    const before = (await workspace.json(['list'])).total;
    mkdirSync(join(workspace.cwd, 'a-folder'), { recursive: true });
    const cases: Array<[string[], number, RegExp]> = [
      [['extract', 'missing.jsonl'], 1, /Cannot read the transcript/],
      [['extract', write('binary.bin', Buffer.from([0xff, 0xd8, 0xff, 0x00, 0x10]))], 2, /not UTF-8 text/],
      [['extract', 'a-folder'], 2, /not a regular file/],
      [['extract', write('other.jsonl', '{"kind":"memory","id":"x"}\n')], 2, /--format claude\|engram\|text\|chat/],
      [['extract', write('roles.jsonl', '{"role":"narrator","content":"x"}\n')], 2, /chat messages/],
      [['extract', write('ok.txt', 'hello'), '--format', 'yaml'], 2, /Invalid --format/],
      [['extract', 'ok.txt', '--mode', 'turbo'], 2, /Invalid --mode/],
      [['extract'], 2, /Missing file/],
      [['extract', 'a', 'b'], 2, /takes one file/],
    ];
    for (const [args, code, message] of cases) {
      const result = await workspace.run(args, { env: modelEnv });
      expect(result.code, args.join(' ')).toBe(code);
      expect(result.stderr, args.join(' ')).toMatch(message);
    }
    const torn = write(
      'torn.jsonl',
      `${claudeTranscript('cc-torn', [['Hello', 'Hi']])}{"type":"user","uuid":"x","mess`,
    );
    server.script({ message: { text: '[]' } });
    const tornRun = await workspace.run(['extract', torn], { env: modelEnv });
    expect(tornRun.code).toBe(0);
    expect(tornRun.stdout).toMatch(/warning: line 4 \(the last\) is cut off/);
    expect((await workspace.json(['list'])).total).toBe(before);
  });
});

describe('engram queue', () => {
  it('shows a job that failed for good, retries it by hand and runs it', async () => {
    const file = write('queued.txt', 'The release train leaves every second Wednesday.');
    server.script({ error: { kind: 'auth' } });
    const failed = await workspace.run(['extract', file], { env: modelEnv });
    expect(failed.code).toBe(2);
    expect(failed.stderr).toMatch(/did not finish: MODEL_AUTH.*marked failed; "engram queue retry /);

    const listed = await workspace.json(['queue']);
    const job = listed.jobs.find((entry: any) => entry.state === 'failed');
    expect(job).toMatchObject({ queue: 'extraction', attempts: 1, lastError: expect.stringContaining('MODEL_AUTH') });
    expect(job.payload).toBeUndefined();
    expect(listed.counts.failed).toBe(1);
    const table = await workspace.run(['queue']);
    expect(table.stdout).toMatch(/ID\s+STATE\s+TRIES\s+QUEUED\s+KEY\s+LAST ERROR/);
    expect(table.stdout).toContain(job.id);

    expect((await workspace.run(['queue', 'retry', 'job_nope'])).code).toBe(1);
    expect((await workspace.run(['queue', 'retry'])).code).toBe(2);
    expect((await workspace.run(['queue', 'frobnicate'])).code).toBe(2);
    expect((await workspace.run(['queue', '--state', 'stuck'])).code).toBe(2);
    const retried = await workspace.json(['queue', 'retry', job.id]);
    expect(retried.job).toMatchObject({ id: job.id, state: 'pending', attempts: 0 });
    expect((await workspace.run(['queue', 'retry', job.id])).code).toBe(2);

    server.script({ message: { text: answer({ content: 'The release train leaves every second Wednesday.' }) } });
    const ran = await workspace.json(['queue', 'run'], 0, { env: modelEnv });
    expect(ran.outcomes).toEqual([
      expect.objectContaining({ state: 'done', report: expect.objectContaining({ status: 'extracted' }) }),
    ]);
    expect((await workspace.json(['queue'])).jobs).toEqual([]);
  });
});
