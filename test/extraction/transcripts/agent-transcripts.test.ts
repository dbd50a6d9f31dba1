import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { ConversationMessage } from '../../../src/contracts/conversation.js';
import { closeSqlite, openSqlite } from '../../../src/adapters/sqlite/sqlite-driver.js';
import { messagesAfter } from '../../../src/extraction/conversation-spans.js';
import {
  detectTranscriptFormat,
  parseTranscript,
  readTranscriptFile,
  type TranscriptFormat,
} from '../../../src/extraction/node/read-transcript.js';
import { listOpenCodeSessions, readOpenCodeSession } from '../../../src/extraction/node/read-opencode-session.js';
import { parseOpenCodeSession } from '../../../src/extraction/transcripts/opencode-transcript.js';

// The session files of the other agents, recorded from the real CLIs on this machine (a prompt with
// "remember that …", a tool call that reads notes.txt, and a second turn in the same session after a
// resume), then made messy by hand: torn and garbage lines, injected context, rewinds, helpers.

const FIXTURES = new URL('../../fixtures/agents/', import.meta.url);
const fixture = (path: string): string => readFileSync(new URL(path, FIXTURES), 'utf8');
const directory = mkdtempSync(join(tmpdir(), 'engram-agent-transcripts-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

const MEMORY = '<memory_context>\n- The user deploys to Frankfurt.\n</memory_context>';

const FILES: Array<{ format: TranscriptFormat; file: string; session: string; tool: string }> = [
  {
    format: 'codex',
    file: 'codex/rollout-0.171.0-tool-call-resume.jsonl',
    session: '01a24685-beaf-7ba0-829d-cf3ae2b0aefe',
    tool: 'exec_command',
  },
  {
    format: 'gemini',
    file: 'gemini/session-0.61.0-tool-call-resume.jsonl',
    session: '1a08c5f0-4971-4da2-99c9-7057cac4adae',
    tool: 'read_file',
  },
  {
    format: 'copilot',
    file: 'copilot/events-1.0.102-tool-call-continue.jsonl',
    session: '3c98c264-582a-459b-aef8-ceb1a9970d5c',
    tool: 'view',
  },
  {
    format: 'qwen',
    file: 'qwen/chat-0.24.4-tool-call-continue.jsonl',
    session: '556b17b3-3c57-4b97-a6e8-6b36f60363fe',
    tool: 'read_file',
  },
];

const typed = (messages: readonly ConversationMessage[]): string[] =>
  messages.filter((message) => message.role === 'user' && message.meta !== true).map((message) => message.text);
const said = (messages: readonly ConversationMessage[]): string[] =>
  messages.filter((message) => message.role === 'assistant').map((message) => message.text);

/** The conversation every recorded session holds, whatever the agent. */
function expectRecordedConversation(messages: readonly ConversationMessage[], tool: string): void {
  expect(typed(messages)).toEqual([
    'remember that I prefer tabs. What does notes.txt say?',
    'And what did I say I prefer?',
  ]);
  expect(said(messages)).toEqual([
    'Let me look.',
    'The note says the deploy target is Frankfurt.',
    'Noted: you prefer tabs.',
  ]);
  const calls = messages.flatMap((message) => message.toolCalls ?? []);
  expect(calls.map((call) => call.name)).toEqual([tool]);
  const results = messages.flatMap((message) => message.toolResults ?? []);
  // One answer to the one call (Gemini CLI's resume writes a copy of it; the reader keeps one).
  expect(results.map((result) => result.toolUseId)).toEqual([calls[0]!.id]);
  expect(new Set(messages.map((message) => message.id)).size).toBe(messages.length);
}

describe.each(FILES)('$format session files (recorded)', ({ format, file, session, tool }) => {
  const text = fixture(file);

  it('are detected and read: the typed prompts, the replies, the tool call with its answer', async () => {
    expect(detectTranscriptFormat(text)).toBe(format);
    const path = join(directory, `${format}-${file.split('/')[1]}`);
    writeFileSync(path, text);
    const read = await readTranscriptFile(path);
    expect(read.format).toBe(format);
    expect(read.conversation.sessionId).toBe(session);
    expect(read.warnings).toEqual([]);
    expect(read.skippedLines).toBe(0);
    expectRecordedConversation(read.conversation.messages, tool);
  });

  it('give the same ids when read again with more appended: a cursor taken half-way goes on after it', () => {
    const lines = text.split('\n');
    const whole = parseTranscript(text, format).conversation.messages;
    const firstTurnEnd = lines.findIndex((line) => line.includes('The note says the deploy target'));
    const half = parseTranscript(lines.slice(0, firstTurnEnd + 1).join('\n'), format).conversation.messages;
    expect(half.length).toBeGreaterThan(2);
    const cursor = half.at(-1)!.id;
    const after = messagesAfter(whole, cursor);
    expect(after.found).toBe(true);
    expect(typed(after.messages)).toEqual(['And what did I say I prefer?']);
  });

  it('skip a torn last line and a garbage line with warnings, and keep the rest', () => {
    const lines = text.trimEnd().split('\n');
    const messy = [...lines.slice(0, 3), 'not json at all {', ...lines.slice(3), lines[1]!.slice(0, 40)].join('\n');
    const parsed = parseTranscript(messy, format);
    expect(parsed.skippedLines).toBe(2);
    expect(parsed.warnings.join('\n')).toMatch(/line 4 is not JSON/);
    expect(parsed.warnings.join('\n')).toMatch(/cut off/);
    expectRecordedConversation(parsed.conversation.messages, tool);
  });
});

describe('injected context is never the user’s words', () => {
  it('Codex: hook context arrives as developer messages; engram’s block is kept as meta, the rest dropped', () => {
    const lines = fixture(FILES[0]!.file).trimEnd().split('\n');
    const prompt = lines.findIndex((line) => line.includes('remember that I prefer tabs'));
    const developer = (id: string, text: string): string =>
      JSON.stringify({
        timestamp: '2026-12-05T14:05:01.000Z',
        type: 'response_item',
        payload: { type: 'message', id, role: 'developer', content: [{ type: 'input_text', text }] },
      });
    const text = [
      ...lines.slice(0, prompt),
      developer('msg_ctx_session', 'Other hook: run the linter before committing.'),
      lines[prompt],
      developer('msg_ctx_prompt', MEMORY),
      ...lines.slice(prompt + 1),
    ].join('\n');
    const messages = parseTranscript(text, 'codex').conversation.messages;
    expect(messages.find((message) => message.id === 'msg_ctx_prompt')).toMatchObject({ meta: true, role: 'user' });
    expect(JSON.stringify(messages)).not.toContain('run the linter');
    expectRecordedConversation(messages, 'exec_command');
  });

  it('Gemini CLI: <hook_context> blocks are cut out of the prompt, engram’s kept as meta', () => {
    // Every copy of the message (the resume's checkpoint writes it again) carries the context.
    const text = fixture(FILES[1]!.file).replaceAll(
      '"content":[{"text":"remember that I prefer tabs. What does notes.txt say?"}]',
      `"content":[{"text":${JSON.stringify(`<hook_context>${MEMORY}</hook_context>\n\nremember that I prefer tabs. What does notes.txt say?`)}},{"text":"<hook_context>Run the tests first.</hook_context>"}]`,
    );
    const messages = parseTranscript(text, 'gemini').conversation.messages;
    const context = messages.filter((message) => message.meta === true && message.text.includes('<memory_context>'));
    expect(context).toHaveLength(1);
    expect(JSON.stringify(messages)).not.toContain('Run the tests first');
    expectRecordedConversation(messages, 'read_file');
  });

  it('Copilot CLI: the typed prompt, not the transformed one; hook output with engram’s block is meta', () => {
    const lines = fixture(FILES[2]!.file).trimEnd().split('\n');
    const hook = JSON.stringify({
      type: 'hook.end',
      data: {
        hookInvocationId: 'h1',
        hookType: 'userPromptSubmitted',
        success: true,
        output: { additionalContext: MEMORY },
      },
      id: 'hook-end-1',
      timestamp: '2026-12-05T14:07:32.900Z',
      parentId: null,
    });
    const prompt = lines.findIndex((line) => line.includes('"type":"user.message"'));
    const withContext = lines[prompt]!.replace(
      '"transformedContent":"',
      `"transformedContent":${JSON.stringify(`<system_reminder>${MEMORY}</system_reminder>`).slice(0, -1)}`,
    );
    const text = [...lines.slice(0, prompt), hook, withContext, ...lines.slice(prompt + 1)].join('\n');
    const messages = parseTranscript(text, 'copilot').conversation.messages;
    expect(messages.find((message) => message.id === 'hook-end-1')).toMatchObject({ meta: true });
    expectRecordedConversation(messages, 'view');
  });

  it('Qwen Code: <qwen:…-context> parts are cut out; displayText wins; a non-user provenance is meta', () => {
    const lines = fixture(FILES[3]!.file).trimEnd().split('\n');
    const first = JSON.parse(lines[0]!) as Record<string, unknown>;
    (first.message as { parts: unknown[] }).parts.push({
      text: `<qwen:user-prompt-submit-context>\n${MEMORY}\n</qwen:user-prompt-submit-context>`,
    });
    const notification = {
      ...first,
      uuid: 'note-1',
      parentUuid: first.uuid,
      provenance: 'notification',
      message: { role: 'user', parts: [{ text: 'Background task finished.' }] },
    };
    const second = JSON.parse(lines[1]!) as Record<string, unknown>;
    const text = [
      JSON.stringify(first),
      JSON.stringify(notification),
      JSON.stringify({ ...second, parentUuid: 'note-1' }),
      ...lines.slice(2),
    ].join('\n');
    const messages = parseTranscript(text, 'qwen').conversation.messages;
    expect(messages.filter((message) => message.meta === true).map((message) => message.text)).toEqual([
      expect.stringContaining('<memory_context>'),
      'Background task finished.',
    ]);
    expectRecordedConversation(messages, 'read_file');
  });
});

describe('Gemini CLI’s log records', () => {
  const text = fixture(FILES[1]!.file);

  it('a rewind drops the message it names and everything after it', () => {
    const rewound = `${text.trimEnd()}\n${JSON.stringify({ $rewindTo: 'b016e9ea-1c89-41aa-963d-00e935c4b659' })}\n`;
    const parsed = parseTranscript(rewound, 'gemini');
    expect(typed(parsed.conversation.messages)).toEqual(['remember that I prefer tabs. What does notes.txt say?']);
    expect(parsed.warnings.join('\n')).toMatch(/1 rewind applied/);
  });

  it('a message written again replaces the first in place', () => {
    const edited = `${text.trimEnd()}\n${JSON.stringify({ id: '623d86dd-be7b-464a-9943-3f65ccedf822', type: 'gemini', content: 'Tabs, width 4.' })}\n`;
    expect(said(parseTranscript(edited, 'gemini').conversation.messages).at(-1)).toBe('Tabs, width 4.');
  });

  it('the JSON document of older versions is read, tool results kept on the call', async () => {
    const document = {
      sessionId: 'old-1',
      projectHash: 'abc',
      startTime: '2025-08-01T10:00:00.000Z',
      lastUpdated: '2025-08-01T10:01:00.000Z',
      messages: [
        {
          id: 'u1',
          timestamp: '2025-08-01T10:00:00.000Z',
          type: 'user',
          content: 'remember that staging is eu-west-1',
        },
        {
          id: 'g1',
          timestamp: '2025-08-01T10:00:05.000Z',
          type: 'gemini',
          content: 'Checking.',
          toolCalls: [
            {
              id: 'c1',
              name: 'read_file',
              args: { file_path: 'a.txt' },
              status: 'success',
              result: [{ functionResponse: { id: 'c1', name: 'read_file', response: { output: 'A' } } }],
            },
          ],
        },
        { id: 'i1', timestamp: '2025-08-01T10:00:06.000Z', type: 'info', content: 'Compressed history.' },
      ],
    };
    const path = join(directory, 'session-old.json');
    writeFileSync(path, JSON.stringify(document, null, 2));
    const read = await readTranscriptFile(path);
    expect(read.format).toBe('gemini');
    expect(read.conversation.messages.map((message) => [message.role, message.text])).toEqual([
      ['user', 'remember that staging is eu-west-1'],
      ['assistant', 'Checking.'],
      ['tool', ''],
    ]);
    expect(read.conversation.messages[2]!.toolResults).toEqual([{ toolUseId: 'c1', content: 'A' }]);
  });

  it('a helper’s file (kind subagent, in its parent’s folder) gets a session id of its own', async () => {
    const helper = [
      JSON.stringify({
        sessionId: 'child-7',
        projectHash: 'abc',
        startTime: '2026-12-05T14:00:00.000Z',
        kind: 'subagent',
      }),
      JSON.stringify({
        id: 'h1',
        timestamp: '2026-12-05T14:00:01.000Z',
        type: 'user',
        content: [{ text: 'List the files.' }],
      }),
      JSON.stringify({ id: 'h2', timestamp: '2026-12-05T14:00:02.000Z', type: 'gemini', content: 'Two files.' }),
    ].join('\n');
    mkdirSync(join(directory, 'chats', 'parent-1'), { recursive: true });
    const path = join(directory, 'chats', 'parent-1', 'child-7.jsonl');
    writeFileSync(path, helper);
    const read = await readTranscriptFile(path);
    expect(read.sidechain).toBe(true);
    expect(read.conversation.sessionId).toBe('parent-1:agent-child-7');
  });
});

describe('Codex rollouts', () => {
  it('a helper thread (session_meta source subagent) reads under its parent’s id; a compaction summary is meta', () => {
    const text = [
      JSON.stringify({
        timestamp: 't',
        type: 'session_meta',
        payload: {
          id: 'child-thread',
          source: { subagent: { thread_spawn: { parent_thread_id: 'parent-thread', depth: 1 } } },
        },
      }),
      JSON.stringify({
        timestamp: 't',
        type: 'response_item',
        payload: {
          type: 'message',
          id: 'm1',
          role: 'user',
          content: [{ type: 'input_text', text: 'Find the config.' }],
        },
      }),
      JSON.stringify({ timestamp: 't', type: 'compacted', payload: { message: 'The helper looked at three files.' } }),
      JSON.stringify({
        timestamp: 't',
        type: 'response_item',
        payload: { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Found it.' }] },
      }),
    ].join('\n');
    const parsed = parseTranscript(text, 'codex');
    expect(parsed.sidechain).toBe(true);
    expect(parsed.conversation.sessionId).toBe('parent-thread:agent-child-thread');
    expect(parsed.conversation.messages.map((message) => [message.id, message.meta === true])).toEqual([
      ['m1', false],
      ['compacted-3', true],
      ['line-4', false],
    ]);
  });
});

describe('OpenCode sessions (SQLite)', () => {
  function database(extraSql = ''): string {
    const path = join(directory, `opencode-${Math.random().toString(36).slice(2)}.db`);
    const db = openSqlite(path);
    db.exec(fixture('opencode/opencode-1.18.33-tool-call-continue.sql') + extraSql);
    closeSqlite(db);
    return path;
  }

  it('are listed and read from the database: prompts, replies, the tool call with its answer', () => {
    const path = database();
    const sessions = listOpenCodeSessions(path);
    expect(sessions).toHaveLength(1);
    expect(listOpenCodeSessions(path, { directory: '/elsewhere' })).toEqual([]);
    const read = readOpenCodeSession(path, sessions[0]!.id);
    expect(read.warnings).toEqual([]);
    // OpenCode 1.18 stores `opencode run "…"`'s message with the quotes around it: read as typed.
    expectRecordedConversation(read.conversation.messages, 'read');
  });

  it('a prompt `opencode run` wrapped in quotes reads as typed; a message the user quoted stays as it is', () => {
    const prompts = [
      ['"Remember that the branch is trunk-blue."', 'Remember that the branch is trunk-blue.'],
      ['"say \\"hi\\" to them"', 'say "hi" to them'],
      ['"two\nlines here"', 'two\nlines here'],
      ['"He said" and left', '"He said" and left'],
      ['"one" "two words"', '"one" "two words"'],
      ['"single"', '"single"'],
      ['"a "b" c"', '"a "b" c"'],
      ['plain words', 'plain words'],
    ];
    const parsed = parseOpenCodeSession({
      session: { id: 'ses_quotes' },
      messages: prompts.map((_, at) => ({
        id: `msg_${at}`,
        timeCreated: at,
        data: JSON.stringify({ role: 'user', time: { created: at } }),
      })),
      parts: prompts.map(([text], at) => ({
        id: `prt_${at}`,
        messageId: `msg_${at}`,
        data: JSON.stringify({ type: 'text', text }),
      })),
    });
    expect(typed(parsed.conversation.messages)).toEqual(prompts.map(([, typedText]) => typedText));
  });

  it('a synthetic part (a plugin’s context) is not the user’s text; engram’s block is kept as meta', () => {
    const path = database(`
      INSERT INTO part (id, message_id, session_id, time_created, time_updated, data)
      SELECT 'prt_zz_injected', id, session_id, time_created + 1, time_created + 1,
             '{"type":"text","text":${JSON.stringify(MEMORY).replaceAll("'", "''")},"synthetic":true}'
      FROM message WHERE data LIKE '%"role":"user"%' ORDER BY time_created LIMIT 1;`);
    const read = readOpenCodeSession(path, listOpenCodeSessions(path)[0]!.id);
    const meta = read.conversation.messages.filter((message) => message.meta === true);
    expect(meta.map((message) => message.text)).toEqual([MEMORY]);
    expect(typed(read.conversation.messages).join('\n')).not.toContain('memory_context');
  });

  it('a helper’s session (parent_id) reads under its parent; broken rows are skipped with warnings', () => {
    const parsed = parseOpenCodeSession({
      session: { id: 'ses_child', parentId: 'ses_parent' },
      messages: [
        { id: 'msg_1', timeCreated: 1, data: '{"role":"user","time":{"created":1}}' },
        { id: 'msg_2', timeCreated: 2, data: '{"role":"assistant"' },
      ],
      parts: [{ id: 'prt_1', messageId: 'msg_1', data: '{"type":"text","text":"Summarize the diff."}' }],
    });
    expect(parsed.sidechain).toBe(true);
    expect(parsed.conversation.sessionId).toBe('ses_parent:agent-ses_child');
    expect(parsed.skippedLines).toBe(1);
    expect(typed(parsed.conversation.messages)).toEqual(['Summarize the diff.']);
  });

  it('a missing file and a database that is not OpenCode’s are refused with a clear error', () => {
    expect(() => listOpenCodeSessions(join(directory, 'none.db'))).toThrow(/No OpenCode database/);
    const other = join(directory, 'other.db');
    const db = openSqlite(other);
    db.exec('CREATE TABLE notes (id TEXT)');
    closeSqlite(db);
    expect(() => listOpenCodeSessions(other)).toThrow(/not an OpenCode database/);
    expect(() => readOpenCodeSession(database(), 'ses_missing')).toThrow(/No session/);
  });
});
