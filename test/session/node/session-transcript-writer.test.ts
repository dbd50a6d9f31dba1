import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { readTranscriptFile } from '../../../src/extraction/node/read-transcript.js';
import {
  projectSlug,
  sessionPaths,
  subagentTranscriptPath,
  validateSessionId,
} from '../../../src/session/node/session-paths.js';
import { readSessionTranscript } from '../../../src/session/node/session-transcript-reader.js';
import {
  openSidechainTranscript,
  SessionTranscriptWriter,
} from '../../../src/session/node/session-transcript-writer.js';
import type { SessionMessage, SessionTranscriptEntry } from '../../../src/contracts/session-message.js';

const root = mkdtempSync(join(tmpdir(), 'engram-session-writer-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

let counter = 0;
const fixedNow = (): Date => new Date(Date.UTC(2026, 2, 1, 9, 0, 0, counter));
function message(
  role: 'user' | 'assistant',
  content: SessionMessage['content'],
  extra: Partial<SessionMessage> = {},
): SessionMessage {
  counter += 1;
  return {
    uuid: `m-${counter}`,
    role,
    content,
    timestamp: new Date(Date.UTC(2026, 2, 1, 9, 0, counter)).toISOString(),
    ...extra,
  };
}
function lines(path: string): Array<Record<string, unknown>> {
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}
function freshPaths(sessionId = 'session-1') {
  const home = mkdtempSync(join(root, 'home-'));
  return sessionPaths({ home, cwd: '/work/acme app', sessionId });
}

/** A writer of `paths.transcript` for session-1 on the fixed clock; `options` say the rest. */
function writerFor(
  paths: { transcript: string },
  options: Omit<ConstructorParameters<typeof SessionTranscriptWriter>[0], 'path' | 'sessionId' | 'now'>,
): SessionTranscriptWriter {
  return new SessionTranscriptWriter({ path: paths.transcript, sessionId: 'session-1', now: fixedNow, ...options });
}

describe('session paths', () => {
  it('slugs the working directory as FORMATS §2.1 says, hashing paths over 200 characters', () => {
    expect(projectSlug('/home/me/projects/app')).toBe('-home-me-projects-app');
    expect(projectSlug('/home/me/my_app.v2/sub dir')).toBe('-home-me-my-app-v2-sub-dir');
    expect(projectSlug('C:\\Users\\me\\app')).toBe('C--Users-me-app');
    expect(projectSlug('/home/me/café')).toBe('-home-me-caf-');
    const long = `/home/me/${'a'.repeat(250)}`;
    const longer = `/home/me/${'a'.repeat(250)}b`;
    const slug = projectSlug(long);
    expect(slug.slice(0, 200)).toBe(long.replace(/[^A-Za-z0-9]/g, '-').slice(0, 200));
    expect(slug).toMatch(/^.{200}-[0-9a-z]+$/);
    expect(projectSlug(long)).toBe(slug);
    expect(projectSlug(longer)).not.toBe(slug);
    expect(projectSlug(longer).slice(0, 200)).toBe(slug.slice(0, 200));
    const exactly200 = `/${'x'.repeat(199)}`;
    expect(projectSlug(exactly200)).toBe(`-${'x'.repeat(199)}`);
  });

  it('lays out one session under <home>/projects/<slug>/', () => {
    const paths = sessionPaths({ home: '/h/.engram', cwd: '/work/app', sessionId: 'abc-123' });
    expect(paths).toEqual({
      projectDirectory: '/h/.engram/projects/-work-app',
      transcript: '/h/.engram/projects/-work-app/abc-123.jsonl',
      sessionDirectory: '/h/.engram/projects/-work-app/abc-123',
      toolResults: '/h/.engram/projects/-work-app/abc-123/tool-results',
      notes: '/h/.engram/projects/-work-app/abc-123/session-notes.md',
      subagents: '/h/.engram/projects/-work-app/abc-123/subagents',
    });
    expect(subagentTranscriptPath(paths.subagents, 'acompact-1f')).toBe(
      '/h/.engram/projects/-work-app/abc-123/subagents/agent-acompact-1f.jsonl',
    );
  });

  it('refuses session ids that could leave the project folder, and other hostile input', () => {
    for (const bad of [
      '../escape',
      'a/b',
      'a\\b',
      '..',
      '.',
      '',
      ' x',
      'x\u0000',
      'x\n',
      'é',
      'a'.repeat(201),
      42,
      null,
      undefined,
    ]) {
      expect(() => sessionPaths({ home: '/h', cwd: '/w', sessionId: bad as string }), String(bad)).toThrowError(
        expect.objectContaining({ code: 'INVALID_INPUT' }),
      );
    }
    expect(validateSessionId('a'.repeat(200))).toHaveLength(200);
    expect(() => sessionPaths({ home: '', cwd: '/w', sessionId: 'x' })).toThrowError(
      expect.objectContaining({ code: 'INVALID_INPUT' }),
    );
    expect(() => projectSlug('')).toThrowError(expect.objectContaining({ code: 'INVALID_INPUT' }));
    expect(() => subagentTranscriptPath('/s', '../../x')).toThrowError(
      expect.objectContaining({ code: 'INVALID_INPUT' }),
    );
  });
});

describe('SessionTranscriptWriter', () => {
  it('creates nothing for a session without a real message: metadata, todos and meta messages alone never create the file', async () => {
    const paths = freshPaths();
    const writer = writerFor(paths, { cwd: '/work/acme app' });
    writer.append({
      kind: 'metadata',
      metadata: { sessionId: 'session-1', title: 'Nothing yet' },
      timestamp: fixedNow().toISOString(),
    });
    writer.append({ kind: 'todos', todos: [{ content: 'x', status: 'pending' }], timestamp: fixedNow().toISOString() });
    writer.append({
      kind: 'message',
      message: message('user', '<memory_context>…</memory_context>', { meta: true }),
      parentUuid: null,
    });
    await writer.flush();
    await writer.close();
    expect(existsSync(paths.transcript)).toBe(false);
    expect(existsSync(paths.projectDirectory)).toBe(false);
    expect(writer.created).toBe(false);
  });

  it('creates the file on the first real message with mode 0600 in 0700 folders, keeping what was queued before it in order', async () => {
    const paths = freshPaths();
    const writer = writerFor(paths, { cwd: '/work/acme app', gitBranch: 'main' });
    const meta = message('user', 'injected context', { meta: true });
    writer.append({ kind: 'message', message: meta, parentUuid: null });
    const first = message('user', 'Fix the login bug');
    writer.append({ kind: 'message', message: first, parentUuid: meta.uuid });
    // append() does no I/O: the line waits for the next flush.
    expect(existsSync(paths.transcript)).toBe(false);
    await writer.flush();
    expect(statSync(paths.transcript).mode & 0o777).toBe(0o600);
    for (const directory of [
      join(paths.projectDirectory, '..', '..'),
      join(paths.projectDirectory, '..'),
      paths.projectDirectory,
    ]) {
      expect(statSync(directory).mode & 0o777, directory).toBe(0o700);
    }
    const written = lines(paths.transcript);
    expect(written.map((line) => line.uuid)).toEqual([meta.uuid, first.uuid]);
    expect(written[0]).toMatchObject({
      type: 'user',
      isMeta: true,
      parentUuid: null,
      sessionId: 'session-1',
      cwd: '/work/acme app',
      gitBranch: 'main',
      isSidechain: false,
      userType: 'external',
    });
    expect(written[1]).toMatchObject({
      type: 'user',
      parentUuid: meta.uuid,
      message: { role: 'user', content: 'Fix the login bug' },
    });
    await writer.close();
  });

  it('flushes on its own about every 100 ms (real timer), and on flush()', async () => {
    const paths = freshPaths();
    const writer = new SessionTranscriptWriter({ path: paths.transcript, sessionId: 'session-1' });
    const first = message('user', 'one');
    writer.append({ kind: 'message', message: first, parentUuid: null });
    await writer.flush();
    expect(lines(paths.transcript)).toHaveLength(1);
    const second = message('assistant', [{ type: 'text', text: 'two' }], { model: 'claude-test' });
    writer.append({ kind: 'message', message: second, parentUuid: first.uuid });
    expect(lines(paths.transcript)).toHaveLength(1);
    // No flush() call: the writer's own timer writes the line.
    // The file can show the line a moment before the write's promise settles and the count moves.
    await vi.waitFor(
      () => {
        expect(lines(paths.transcript)).toHaveLength(2);
        expect(writer.writtenMessages).toBe(2);
      },
      { timeout: 5_000, interval: 20 },
    );
    await writer.close();
  });

  it('writes Claude Code lines that readTranscript turns into the conversation', async () => {
    const paths = freshPaths();
    const writer = writerFor(paths, { cwd: '/work/app', gitBranch: 'main' });
    const ask = message('user', 'What is in README.md?');
    const call = message(
      'assistant',
      [
        { type: 'text', text: 'Reading it.' },
        { type: 'tool_use', id: 'toolu_1', name: 'read_file', input: { path: 'README.md' } },
      ],
      {
        model: 'claude-test',
        usage: { inputTokens: 100, outputTokens: 20, cacheReadTokens: 80, cacheWriteTokens: 5 },
      },
    );
    const result = message('user', [{ type: 'tool_result', toolUseId: 'toolu_1', content: '# Acme\nA deploy tool.' }]);
    const reply = message('assistant', 'It describes Acme, a deploy tool.', { model: 'claude-test' });
    let parent: string | null = null;
    for (const item of [ask, call, result, reply]) {
      writer.append({ kind: 'message', message: item, parentUuid: parent });
      parent = item.uuid;
    }
    writer.append({
      kind: 'file-snapshot',
      messageUuid: reply.uuid,
      files: [{ path: 'README.md', timestamp: fixedNow().toISOString() }],
    });
    await writer.close();

    const written = lines(paths.transcript);
    expect(written[1]!.message).toEqual({
      type: 'message',
      role: 'assistant',
      model: 'claude-test',
      content: [
        { type: 'text', text: 'Reading it.' },
        { type: 'tool_use', id: 'toolu_1', name: 'read_file', input: { path: 'README.md' } },
      ],
      stop_reason: null,
      usage: { input_tokens: 100, output_tokens: 20, cache_read_input_tokens: 80, cache_creation_input_tokens: 5 },
    });
    expect(written[2]!.message).toEqual({
      role: 'user',
      content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '# Acme\nA deploy tool.' }],
    });
    expect(written[4]).toMatchObject({
      type: 'file-history-snapshot',
      messageId: reply.uuid,
      snapshot: { trackedFileBackups: { 'README.md': { backupFileName: null } } },
    });

    const file = await readTranscriptFile(paths.transcript);
    expect(file.format).toBe('claude');
    expect(file.skippedLines).toBe(0);
    expect(file.conversation.sessionId).toBe('session-1');
    expect(file.conversation.messages).toEqual([
      { id: ask.uuid, role: 'user', text: 'What is in README.md?', timestamp: ask.timestamp },
      {
        id: call.uuid,
        role: 'assistant',
        text: 'Reading it.',
        toolCalls: [{ id: 'toolu_1', name: 'read_file', input: { path: 'README.md' } }],
        timestamp: call.timestamp,
      },
      {
        id: result.uuid,
        role: 'tool',
        text: '',
        toolResults: [{ toolUseId: 'toolu_1', content: '# Acme\nA deploy tool.' }],
        timestamp: result.timestamp,
      },
      { id: reply.uuid, role: 'assistant', text: 'It describes Acme, a deploy tool.', timestamp: reply.timestamp },
    ]);
  });

  it('re-appends the metadata at close: title, tags and counts in the last line', async () => {
    const paths = freshPaths();
    const writer = writerFor(paths, { cwd: '/work/app', gitBranch: 'dev', metadata: { tags: ['resumed'] } });
    writer.append({
      kind: 'metadata',
      metadata: { sessionId: 'ignored', title: 'Login bug' },
      timestamp: fixedNow().toISOString(),
    });
    const first = message('user', 'hello');
    const second = message('assistant', 'hi', { model: 'claude-test' });
    writer.append({ kind: 'message', message: first, parentUuid: null });
    writer.append({ kind: 'message', message: second, parentUuid: first.uuid });
    await writer.flush();
    const beforeClose = lines(paths.transcript);
    await writer.close();
    const after = lines(paths.transcript);
    expect(after).toHaveLength(beforeClose.length + 1);
    expect(after.at(-1)).toMatchObject({
      type: 'engram-metadata',
      sessionId: 'session-1',
      metadata: {
        sessionId: 'session-1',
        title: 'Login bug',
        tags: ['resumed'],
        cwd: '/work/app',
        gitBranch: 'dev',
        model: 'claude-test',
        messageCount: 2,
        createdAt: first.timestamp,
        updatedAt: second.timestamp,
      },
    });
    await writer.close(); // idempotent
    expect(lines(paths.transcript)).toHaveLength(after.length);
  });

  it('refuses malformed, oversized and hostile entries without queuing anything, and appends after close', async () => {
    const paths = freshPaths();
    const writer = new SessionTranscriptWriter({ path: paths.transcript, sessionId: 'session-1', maxLineBytes: 4_096 });
    const good = message('user', 'kept');
    writer.append({ kind: 'message', message: good, parentUuid: null });
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    const bad: Array<[unknown, string]> = [
      [null, 'INVALID_INPUT'],
      [{ kind: 'nonsense' }, 'INVALID_INPUT'],
      [{ kind: 'message', message: { ...message('user', 'x'), role: 'system' }, parentUuid: null }, 'INVALID_INPUT'],
      [{ kind: 'message', message: { ...message('user', 'x'), uuid: '' }, parentUuid: null }, 'INVALID_INPUT'],
      [{ kind: 'message', message: { ...message('user', 'x'), uuid: 'a\nb' }, parentUuid: null }, 'INVALID_INPUT'],
      [{ kind: 'message', message: message('user', 'x'), parentUuid: 7 }, 'INVALID_INPUT'],
      [
        { kind: 'message', message: { ...message('user', 'x'), timestamp: 'yesterday' }, parentUuid: null },
        'INVALID_INPUT',
      ],
      [
        { kind: 'message', message: message('user', [{ type: 'image', data: 'x' }] as never), parentUuid: null },
        'INVALID_INPUT',
      ],
      [{ kind: 'message', message: message('user', 42 as never), parentUuid: null }, 'INVALID_INPUT'],
      [
        {
          kind: 'message',
          message: message('assistant', [{ type: 'tool_use', id: 't', name: 'x', input: circular }]),
          parentUuid: null,
        },
        'INVALID_INPUT',
      ],
      [{ kind: 'message', message: message('user', 'y'.repeat(10_000)), parentUuid: null }, 'PAYLOAD_TOO_LARGE'],
      [
        { kind: 'metadata', metadata: { sessionId: 's', title: 5 }, timestamp: new Date().toISOString() },
        'INVALID_INPUT',
      ],
      [
        { kind: 'metadata', metadata: { sessionId: 's', tags: 'a,b' }, timestamp: new Date().toISOString() },
        'INVALID_INPUT',
      ],
      [{ kind: 'todos', todos: 'none', timestamp: new Date().toISOString() }, 'INVALID_INPUT'],
      [
        {
          kind: 'compact-boundary',
          boundary: {
            uuid: 'b',
            timestamp: new Date().toISOString(),
            trigger: 'sometimes',
            method: 'notes',
            preTokens: 1,
            filesEdited: [],
            gitBranch: '',
          },
          parentUuid: null,
        },
        'INVALID_INPUT',
      ],
      [{ kind: 'file-snapshot', messageUuid: good.uuid, files: [{}] }, 'INVALID_INPUT'],
    ];
    for (const [entry, code] of bad) {
      expect(
        () => writer.append(entry as SessionTranscriptEntry),
        JSON.stringify(entry, (_key, value) => (value === circular ? '[circular]' : value))?.slice(0, 80),
      ).toThrowError(expect.objectContaining({ code }));
    }
    await writer.close();
    expect(lines(paths.transcript).map((line) => line.type)).toEqual(['user', 'engram-metadata']);
    expect(() =>
      writer.append({ kind: 'message', message: message('user', 'late'), parentUuid: good.uuid }),
    ).toThrowError(expect.objectContaining({ code: 'STORE_CLOSED' }));
    expect(() => new SessionTranscriptWriter({ path: '', sessionId: 'x' })).toThrowError(
      expect.objectContaining({ code: 'INVALID_INPUT' }),
    );
    expect(() => new SessionTranscriptWriter({ path: '/tmp/x.jsonl', sessionId: '../x' })).toThrowError(
      expect.objectContaining({ code: 'INVALID_INPUT' }),
    );
    expect(
      () => new SessionTranscriptWriter({ path: '/tmp/x.jsonl', sessionId: 'x', flushIntervalMs: -1 }),
    ).toThrowError(expect.objectContaining({ code: 'INVALID_INPUT' }));
  });

  it('never writes through a symlink planted at the transcript path, and keeps the lines for a retry', async () => {
    const paths = freshPaths();
    const target = join(root, 'victim.txt');
    writeFileSync(target, 'precious\n');
    const { mkdirSync } = await import('node:fs');
    mkdirSync(paths.projectDirectory, { recursive: true });
    symlinkSync(target, paths.transcript);
    const errors: unknown[] = [];
    const writer = new SessionTranscriptWriter({
      path: paths.transcript,
      sessionId: 'session-1',
      onError: (error) => errors.push(error),
    });
    writer.append({ kind: 'message', message: message('user', 'secret plan'), parentUuid: null });
    await expect(writer.flush()).rejects.toMatchObject({ code: 'STORE_ERROR' });
    expect(readFileSync(target, 'utf8')).toBe('precious\n');
    rmSync(paths.transcript);
    await writer.close();
    expect(lines(paths.transcript).map((line) => line.type)).toEqual(['user', 'engram-metadata']);
  });

  it('writes helper transcripts as sidechain files under <session>/subagents/ that both readers read', async () => {
    const paths = freshPaths();
    const writer = openSidechainTranscript({
      subagents: paths.subagents,
      agentId: 'notes-1',
      sessionId: 'session-1',
      cwd: '/work/app',
      now: fixedNow,
    });
    const ask = message('user', 'Update the notes');
    const answer = message('assistant', '<section name="Current State">Testing</section>', { model: 'claude-test' });
    writer.append({ kind: 'message', message: ask, parentUuid: null });
    writer.append({ kind: 'message', message: answer, parentUuid: ask.uuid });
    await writer.close();
    const path = join(paths.subagents, 'agent-notes-1.jsonl');
    expect(writer.path).toBe(path);
    expect(lines(path)[0]).toMatchObject({ isSidechain: true, agentId: 'notes-1', sessionId: 'session-1' });
    expect(statSync(paths.subagents).mode & 0o777).toBe(0o700);
    const conversation = (await readTranscriptFile(path)).conversation;
    expect(conversation.messages.map((item) => item.text)).toEqual([
      'Update the notes',
      '<section name="Current State">Testing</section>',
    ]);
    const resumed = await readSessionTranscript(path);
    expect(resumed.messages.map((item) => item.uuid)).toEqual([ask.uuid, answer.uuid]);
  });
});
