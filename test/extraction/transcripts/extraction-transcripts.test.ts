import { mkdtempSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseClaudeCodeTranscript } from '../../../src/extraction/transcripts/claude-code-transcript.js';
import {
  formatEngramTranscriptLine,
  parseEngramTranscript,
} from '../../../src/extraction/transcripts/engram-transcript.js';
import { parsePlainTextTranscript } from '../../../src/extraction/transcripts/plain-text-transcript.js';
import { detectTranscriptFormat, readTranscriptFile } from '../../../src/extraction/node/read-transcript.js';
import { messagesAfter } from '../../../src/extraction/conversation-spans.js';

const directory = mkdtempSync(join(tmpdir(), 'engram-transcripts-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

const base = {
  isSidechain: false,
  userType: 'external',
  cwd: '/work/app',
  sessionId: 'sess-1',
  version: '2.1.39',
  gitBranch: 'main',
};
let clock = 0;
const at = (): string => new Date(Date.UTC(2026, 0, 5, 10, 0, clock++)).toISOString();

function user(uuid: string, parentUuid: string | null, content: unknown, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({
    ...base,
    type: 'user',
    uuid,
    parentUuid,
    timestamp: at(),
    message: { role: 'user', content },
    ...extra,
  });
}
function assistant(
  uuid: string,
  parentUuid: string,
  messageId: string,
  block: unknown,
  extra: Record<string, unknown> = {},
): string {
  return JSON.stringify({
    ...base,
    type: 'assistant',
    uuid,
    parentUuid,
    timestamp: at(),
    requestId: `req_${messageId}`,
    message: {
      id: messageId,
      type: 'message',
      role: 'assistant',
      model: 'claude-sonnet-4-5',
      content: [block],
      stop_reason: null,
      usage: { input_tokens: 10, output_tokens: 5 },
    },
    ...extra,
  });
}
function progress(uuid: string, parentUuid: string): string {
  return JSON.stringify({
    ...base,
    type: 'progress',
    uuid,
    parentUuid,
    timestamp: at(),
    data: { type: 'hook_progress', hookEvent: 'PostToolUse', hookName: 'x', command: 'node x' },
    toolUseID: 'toolu_1',
  });
}

describe('Claude Code transcripts', () => {
  it('rebuilds the latest branch: rewinds dropped, compact boundaries followed, replies merged, tool results as tool messages', () => {
    const lines = [
      JSON.stringify({ type: 'summary', summary: 'Deploy talk', leafUuid: 'a9' }),
      user('u1', null, 'We deploy on Fridays.'),
      assistant('a1', 'u1', 'msg_1', { type: 'thinking', thinking: 'hmm', signature: 'sig' }),
      assistant('a2', 'a1', 'msg_1', { type: 'text', text: 'Noted: Friday deploys.' }),
      // A rewind: a first attempt at the next turn, abandoned.
      user('u2-old', 'a2', 'Actually use Thursday.'),
      assistant('a3-old', 'u2-old', 'msg_old', { type: 'text', text: 'Thursday then.' }),
      // The branch the user kept.
      user('u2', 'a2', [{ type: 'text', text: 'Read the config please.' }]),
      assistant('a3', 'u2', 'msg_2', { type: 'text', text: 'Reading it.' }),
      assistant('a4', 'a3', 'msg_2', {
        type: 'tool_use',
        id: 'toolu_1',
        name: 'Read',
        input: { file_path: '/work/app/config.yml' },
      }),
      progress('p1', 'a4'),
      user(
        'r1',
        'p1',
        [{ type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: 'port: 8080' }] }],
        { toolUseResult: { file: 'x' } },
      ),
      assistant('a5', 'r1', 'msg_3', { type: 'text', text: 'The port is 8080.' }),
      JSON.stringify({
        ...base,
        type: 'system',
        subtype: 'compact_boundary',
        uuid: 'cb',
        parentUuid: null,
        logicalParentUuid: 'a5',
        timestamp: at(),
        content: 'Conversation compacted',
        compactMetadata: { trigger: 'auto', preTokens: 150000 },
      }),
      user(
        'cs',
        'cb',
        'This session is being continued from a previous conversation that ran out of context. Summary: deploys.',
        { isCompactSummary: true },
      ),
      user('u3', 'cs', '<command-name>/model</command-name>'),
      user('u4', 'u3', 'From now on, use pnpm.'),
      assistant('a6', 'u4', 'msg_4', { type: 'text', text: 'Will do.' }),
      JSON.stringify({
        ...base,
        type: 'system',
        subtype: 'turn_duration',
        uuid: 's9',
        parentUuid: 'a6',
        durationMs: 1200,
        timestamp: at(),
      }),
    ];
    const { conversation, warnings, offBranchLines } = parseClaudeCodeTranscript(lines.join('\n'));
    // The rewound branch is left out, counted.
    expect(offBranchLines).toBe(2);
    expect(warnings).toEqual([
      '2 user or assistant lines are not on the latest branch (left by a rewind or an edit, or another conversation in the file): left out',
    ]);
    expect(conversation.sessionId).toBe('sess-1');
    expect(conversation.messages.map((message) => [message.id, message.role, message.meta === true])).toEqual([
      ['u1', 'user', false],
      ['a2', 'assistant', false],
      ['u2', 'user', false],
      ['a4', 'assistant', false],
      ['r1', 'tool', false],
      ['a5', 'assistant', false],
      ['cs', 'user', true],
      ['u3', 'user', true],
      ['u4', 'user', false],
      ['a6', 'assistant', false],
    ]);
    const reply = conversation.messages[3]!;
    expect(reply.text).toBe('Reading it.');
    expect(reply.toolCalls).toEqual([{ id: 'toolu_1', name: 'Read', input: { file_path: '/work/app/config.yml' } }]);
    expect(reply.partIds).toEqual(['a3', 'a4']);
    expect(conversation.messages[4]!.toolResults).toEqual([{ toolUseId: 'toolu_1', content: 'port: 8080' }]);
    expect(conversation.messages.map((message) => message.text).join(' ')).not.toContain('Thursday');
    // A cursor on a line that was merged into a longer reply re-reads that reply.
    expect(messagesAfter(conversation.messages, 'a3').messages[0]!.id).toBe('a4');
  });

  it('skips torn, non-JSON, oversized and sidechain lines with warnings, never fatally', () => {
    const lines = [
      user('u1', null, 'First.'),
      '{"type":"assistant", this is not json',
      JSON.stringify([1, 2, 3]),
      assistant('a1', 'u1', 'msg_1', { type: 'text', text: 'x'.repeat(2_000) }),
      JSON.stringify({
        ...base,
        type: 'user',
        uuid: 'side',
        parentUuid: 'a1',
        isSidechain: true,
        message: { role: 'user', content: 'helper prompt' },
      }),
      user('u2', 'a1', 'Second.'),
      '{"type":"assistant","uuid":"a2","parentUuid":"u2","message":{"id":"msg_2","content":[{"type":"te',
    ];
    const parsed = parseClaudeCodeTranscript(lines.join('\n'), { maxLineBytes: 1_000 });
    // The oversized reply a1 is lost; u2 names it: the chain goes on from u1, the main line before it (not the sidechain's).
    expect(parsed.conversation.messages.map((message) => message.id)).toEqual(['u1', 'u2']);
    expect(parsed.skippedLines).toBe(4);
    expect(parsed.offBranchLines).toBe(1);
    expect(parsed.warnings.join('\n')).toMatch(/line 2 is not JSON/);
    expect(parsed.warnings.join('\n')).toMatch(/line 3 is not a JSON object/);
    expect(parsed.warnings.join('\n')).toMatch(/line 4 is over 1000 bytes/);
    expect(parsed.warnings.join('\n')).toMatch(/line 7 \(the last\) is cut off/);
    // The skipped reply was a link of the chain: the walk bridges it, and says so.
    expect(parsed.warnings.join('\n')).toMatch(
      /line 6 names a parent "a1" that is not in the file \(a lost or torn line\): the conversation goes on from line 1/,
    );
  });

  it('reads old files without parentUuid in file order, and survives loops in the links', () => {
    const old = [
      JSON.stringify({ type: 'user', uuid: 'u1', sessionId: 's', message: { role: 'user', content: 'Open README' } }),
      JSON.stringify({
        type: 'assistant',
        uuid: 'a1',
        sessionId: 's',
        message: { role: 'assistant', content: 'Done.' },
      }),
    ];
    expect(parseClaudeCodeTranscript(old.join('\n')).conversation.messages.map((message) => message.text)).toEqual([
      'Open README',
      'Done.',
    ]);
    const loop = [user('x', 'y', 'one'), user('y', 'x', 'two')];
    const parsed = parseClaudeCodeTranscript(loop.join('\n'));
    expect(parsed.conversation.messages.map((message) => message.id)).toEqual(['x', 'y']);
    expect(parsed.warnings.join(' ')).toMatch(/loop/);
  });

  it("reads a helper's own file, whose lines are all sidechain", () => {
    const lines = [
      user('s1', null, 'Find the config.', { isSidechain: true, agentId: 'a1b2' }),
      assistant(
        's2',
        's1',
        'msg_s',
        { type: 'text', text: 'It is config.yml.' },
        { isSidechain: true, agentId: 'a1b2' },
      ),
    ];
    expect(parseClaudeCodeTranscript(lines.join('\n')).conversation.messages.map((message) => message.id)).toEqual([
      's1',
      's2',
    ]);
  });

  it("keeps hook output carrying engram's <memory_context> as a meta message", () => {
    const block =
      '<memory_context>\nNotes recalled…\n<memory id="mem_1" type="user" name="tabs">\nThe user prefers tabs.\n</memory>\n</memory_context>';
    const lines = [
      user('u1', null, 'Hello'),
      JSON.stringify({
        ...base,
        type: 'attachment',
        uuid: 'att',
        parentUuid: 'u1',
        attachment: { type: 'hook_additional_context', content: [block] },
      }),
      assistant('a1', 'att', 'msg_1', { type: 'text', text: 'Hi' }),
    ];
    const messages = parseClaudeCodeTranscript(lines.join('\n')).conversation.messages;
    expect(messages.map((message) => [message.id, message.meta === true])).toEqual([
      ['u1', false],
      ['att', true],
      ['a1', false],
    ]);
    expect(messages[1]!.text).toContain('mem_1');
  });
});

describe('engram transcripts', () => {
  it('reads message lines with string or block content, skipping other types, repeats and torn lines', () => {
    const text = [
      JSON.stringify({ type: 'session', sessionId: 'ignored-type' }),
      formatEngramTranscriptLine({
        type: 'message',
        id: 'm1',
        role: 'user',
        content: 'We use pnpm.',
        timestamp: '2026-01-05T10:00:00.000Z',
        sessionId: 'chat-7',
      }),
      formatEngramTranscriptLine({
        type: 'message',
        id: 'm2',
        role: 'assistant',
        content: [
          { type: 'text', text: 'Saving.' },
          {
            type: 'tool_use',
            id: 't1',
            name: 'memory',
            input: { command: 'create', path: '/memories/pnpm.md', file_text: 'x' },
          },
        ],
        timestamp: '2026-01-05T10:00:01.000Z',
      }),
      formatEngramTranscriptLine({
        type: 'message',
        id: 'm3',
        role: 'user',
        content: [{ type: 'tool_result', toolUseId: 't1', content: 'File created' }],
        timestamp: '2026-01-05T10:00:02.000Z',
      }),
      JSON.stringify({ type: 'message', id: 'm1', role: 'user', content: 'again' }),
      JSON.stringify({ type: 'message', id: 'm4', role: 'system', content: 'nope' }),
      JSON.stringify({ type: 'message', role: 'user', content: 'no id' }),
      '{"type":"message","id":"m5"',
    ].join('\n');
    const parsed = parseEngramTranscript(text);
    expect(parsed.conversation.sessionId).toBe('chat-7');
    expect(parsed.conversation.messages.map((message) => [message.id, message.role])).toEqual([
      ['m1', 'user'],
      ['m2', 'assistant'],
      ['m3', 'tool'],
    ]);
    expect(parsed.conversation.messages[1]!.toolCalls![0]!.input).toMatchObject({ command: 'create' });
    expect(parsed.warnings).toHaveLength(4);
  });
});

describe('plain text', () => {
  it('reads User:/Assistant: lines as a dialogue and other text as one user message per paragraph', () => {
    const dialogue = parsePlainTextTranscript(
      'User: We deploy on Fridays.\nAnd never on holidays.\nAssistant: Noted.\n\nhuman: Thanks\nUser: Thanks',
    );
    expect(dialogue.conversation.messages.map(({ role, text }) => ({ role, text }))).toEqual([
      { role: 'user', text: 'We deploy on Fridays.\nAnd never on holidays.' },
      { role: 'assistant', text: 'Noted.' },
      { role: 'user', text: 'Thanks' },
      { role: 'user', text: 'Thanks' },
    ]);
    const ids = dialogue.conversation.messages.map((message) => message.id);
    expect(ids.every((id) => /^m\d+-[0-9a-f]{12}$/.test(id))).toBe(true);
    expect(new Set(ids).size).toBe(4);
    const notes = parsePlainTextTranscript(
      'The user prefers tabs.\r\n\r\n\r\nReleases are on Tuesdays.\nAlways with a changelog.\n',
    );
    expect(notes.conversation.messages.map((message) => message.text)).toEqual([
      'The user prefers tabs.',
      'Releases are on Tuesdays.\nAlways with a changelog.',
    ]);
    expect(parsePlainTextTranscript('The user prefers tabs.\n').conversation.messages[0]!.id).toBe(
      notes.conversation.messages[0]!.id,
    );
  });

  it('gives text appended to the last message a new id, so the cursor reads it, and keeps the ids of what came before', () => {
    const read = (text: string) => parsePlainTextTranscript(text).conversation.messages;
    const before = read('We deploy on Fridays.\n\nReleases are on Tuesdays.\n');
    const cursor = before[1]!.id;
    const grown = read('We deploy on Fridays.\n\nReleases are on Tuesdays.\nAlways with a changelog.\n');
    expect(grown[0]!.id).toBe(before[0]!.id);
    expect(grown[1]!.id).not.toBe(cursor);
    expect(messagesAfter(grown, cursor)).toEqual({ found: true, messages: [grown[1]] });
    const dialogue = read('User: Hi\nAssistant: We deploy\n');
    const grownDialogue = read('User: Hi\nAssistant: We deploy\non Fridays.\n');
    expect(messagesAfter(grownDialogue, dialogue[1]!.id)).toEqual({ found: true, messages: [grownDialogue[1]] });
    // A new paragraph: only it is new.
    const appended = read('We deploy on Fridays.\n\nReleases are on Tuesdays.\n\nThe user prefers tabs.\n');
    expect(messagesAfter(appended, cursor)).toEqual({ found: true, messages: [appended[2]] });
    // Text added to the last line itself: the old version is gone, so everything is read again (never nothing).
    const sameLine = read('We deploy on Fridays.\n\nReleases are on Tuesdays, with a changelog.\n');
    expect(messagesAfter(sameLine, cursor)).toMatchObject({ found: false, messages: sameLine });
  });
});

describe('reading transcript files', () => {
  const write = (name: string, content: string | Buffer): string => {
    const path = join(directory, name);
    writeFileSync(path, content);
    return path;
  };

  it('detects the format and names a session after the file when the file names none', async () => {
    expect(detectTranscriptFormat(user('u1', null, 'hi'))).toBe('claude');
    expect(
      detectTranscriptFormat(
        formatEngramTranscriptLine({ type: 'message', id: 'm', role: 'user', content: 'x', timestamp: 'x' }),
      ),
    ).toBe('engram');
    expect(detectTranscriptFormat('Just some notes.\n{not json')).toBe('text');
    expect(() => detectTranscriptFormat('{"kind":"memory","id":"x"}')).toThrow(/--format claude\|engram\|text/);
    const text = await readTranscriptFile(write('notes.txt', 'User: hi\nAssistant: hello'));
    expect(text.format).toBe('text');
    expect(text.conversation.sessionId).toMatch(/^notes\.txt-[0-9a-f]{12}$/);
    const forced = await readTranscriptFile(write('forced.jsonl', '{"a":1}\n'), { format: 'text' });
    expect(forced.conversation.messages[0]!.text).toBe('{"a":1}');
  });

  it('refuses binary data, NUL bytes, directories, missing and oversized files with clear errors', async () => {
    await expect(
      readTranscriptFile(write('binary.bin', Buffer.from([0xff, 0xfe, 0x00, 0x81, 0x80]))),
    ).rejects.toMatchObject({ code: 'INVALID_INPUT', message: expect.stringMatching(/not UTF-8 text/) });
    await expect(readTranscriptFile(write('nul.txt', 'abc\u0000def'))).rejects.toMatchObject({
      code: 'INVALID_INPUT',
      message: expect.stringMatching(/NUL bytes/),
    });
    mkdirSync(join(directory, 'folder'), { recursive: true });
    await expect(readTranscriptFile(join(directory, 'folder'))).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    await expect(readTranscriptFile(join(directory, 'missing.jsonl'))).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(readTranscriptFile(write('big.txt', 'x'.repeat(5_000)), { maxBytes: 1_000 })).rejects.toMatchObject({
      code: 'PAYLOAD_TOO_LARGE',
    });
  });
});

describe('transcripts of real text', () => {
  it('replace control characters in every format with one warning, keeping tab and newline', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'engram-transcript-controls-'));
    try {
      const files = {
        'plain.txt': 'User: we deploy\u0002 on\u0007 Fridays\n\tfrom main\nAssistant: noted\u001b[0m',
        'engram.jsonl': [
          JSON.stringify({
            type: 'message',
            id: 'a',
            role: 'user',
            content: 'co\u0002operate\tnow',
            timestamp: '2026-01-01T00:00:00.000Z',
          }),
          JSON.stringify({
            type: 'message',
            id: 'b',
            role: 'assistant',
            content: [{ type: 'text', text: 'ok\u0085' }],
            timestamp: '2026-01-01T00:00:01.000Z',
          }),
        ].join('\n'),
        'claude.jsonl': JSON.stringify({
          type: 'user',
          uuid: 'u1',
          parentUuid: null,
          sessionId: 's',
          timestamp: '2026-01-01T00:00:00.000Z',
          message: { role: 'user', content: 'page\u000cbreak' },
        }),
      };
      const texts: Record<string, string[]> = {};
      for (const [name, text] of Object.entries(files)) {
        writeFileSync(join(directory, name), text);
        const read = await readTranscriptFile(join(directory, name));
        texts[name] = read.conversation.messages.map((message) => message.text);
        expect(
          read.warnings.filter((warning) => /control character/.test(warning)),
          name,
        ).toHaveLength(1);
        for (const message of read.conversation.messages)
          expect(message.text).not.toMatch(/[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F]/);
      }
      expect(texts['plain.txt']).toEqual(['we deploy on Fridays\n\tfrom main', 'noted [0m']);
      expect(texts['engram.jsonl']).toEqual(['co operate\tnow', 'ok']);
      expect(texts['claude.jsonl']).toEqual(['page break']);
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });
});

describe('chat messages transcripts', () => {
  it('read OpenAI and Anthropic shapes: strings, content blocks, tool calls and results; system skipped', async () => {
    const { parseChatMessagesTranscript } =
      await import('../../../src/extraction/transcripts/chat-messages-transcript.js');
    const parsed = parseChatMessagesTranscript(
      [
        JSON.stringify({ role: 'developer', content: 'Be brief.' }),
        JSON.stringify({ role: 'user', content: [{ type: 'text', text: 'Look up the rota.' }, 'and the owner'] }),
        JSON.stringify({
          role: 'assistant',
          content: [
            { type: 'text', text: 'Looking.' },
            { type: 'tool_use', id: 't1', name: 'lookup', input: { q: 'rota' } },
          ],
        }),
        JSON.stringify({
          role: 'user',
          content: [{ type: 'tool_result', tool_use_id: 't1', content: [{ type: 'text', text: 'PagerDuty' }] }],
        }),
        JSON.stringify({
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'c2', function: { name: 'owner', arguments: 'not json' } }],
        }),
        JSON.stringify({ role: 'tool', tool_call_id: 'c2', content: 'Priya' }),
        JSON.stringify({ role: 'assistant', content: [{ type: 'output_text', text: 'Priya owns it.' }] }),
        '{"role":"user","content":42}',
        '{"torn',
      ].join('\n'),
      { sessionId: 's' },
    );
    const messages = parsed.conversation.messages;
    expect(messages.map((message) => [message.role, message.text])).toEqual([
      ['user', 'Look up the rota.\nand the owner'],
      ['assistant', 'Looking.'],
      ['tool', ''],
      ['assistant', ''],
      ['tool', ''],
      ['assistant', 'Priya owns it.'],
    ]);
    expect(messages[1]!.toolCalls).toEqual([{ id: 't1', name: 'lookup', input: { q: 'rota' } }]);
    expect(messages[2]!.toolResults).toEqual([{ toolUseId: 't1', content: 'PagerDuty' }]);
    expect(messages[3]!.toolCalls).toEqual([{ id: 'c2', name: 'owner', input: {} }]);
    expect(messages[4]!.toolResults).toEqual([{ toolUseId: 'c2', content: 'Priya' }]);
    expect(parsed.warnings).toEqual([
      expect.stringMatching(/line 9 \(the last\) is cut off/),
      'line 8 is not a chat message ({"role","content"}): skipped',
    ]);
    expect(parsed.skippedLines).toBe(2);
    // Ids are stable on a re-read and unique per message; a longer log keeps the ids it had.
    const again = parseChatMessagesTranscript(`${JSON.stringify({ role: 'user', content: 'x' })}\n`);
    const grown = parseChatMessagesTranscript(
      `${JSON.stringify({ role: 'user', content: 'x' })}\n${JSON.stringify({ role: 'user', content: 'y' })}\n`,
    );
    expect(grown.conversation.messages[0]!.id).toBe(again.conversation.messages[0]!.id);
    expect(new Set(messages.map((message) => message.id)).size).toBe(messages.length);
  });

  it('are detected as chat: lines, a pretty-printed array, an API request body; other JSON is refused', () => {
    expect(detectTranscriptFormat('{"role":"user","content":"hi"}\n{"role":"assistant","content":"yo"}')).toBe('chat');
    expect(detectTranscriptFormat(JSON.stringify([{ role: 'user', content: 'hi' }], null, 2))).toBe('chat');
    expect(detectTranscriptFormat(JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }))).toBe(
      'chat',
    );
    expect(detectTranscriptFormat('{"type":"message","id":"a","role":"user","content":"hi"}')).toBe('engram');
    expect(() => detectTranscriptFormat('{"role":"narrator","content":"hi"}')).toThrow(/chat messages/);
    expect(() => detectTranscriptFormat('{"messages":"not a list"}')).toThrow(/--format/);
  });
});
