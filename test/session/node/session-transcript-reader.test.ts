import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readTranscriptFile } from '../../../src/extraction/node/read-transcript.js';
import { readSessionTranscript } from '../../../src/session/node/session-transcript-reader.js';
import { SessionTranscriptWriter } from '../../../src/session/node/session-transcript-writer.js';
import type { CompactBoundary, SessionMessage } from '../../../src/contracts/session-message.js';

const root = mkdtempSync(join(tmpdir(), 'engram-session-reader-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

let counter = 0;
const stamp = (): string => new Date(Date.UTC(2026, 3, 2, 8, 0, 0, ++counter)).toISOString();
function message(
  uuid: string,
  role: 'user' | 'assistant',
  content: SessionMessage['content'],
  extra: Partial<SessionMessage> = {},
): SessionMessage {
  return { uuid, role, content, timestamp: stamp(), ...extra };
}

/** A writer over a fresh file, and a helper appending a chain of messages. */
function session(name = 'resume-1') {
  const path = join(mkdtempSync(join(root, 'project-')), `${name}.jsonl`);
  const writer = new SessionTranscriptWriter({
    path,
    sessionId: name,
    cwd: '/work/app',
    gitBranch: 'main',
    now: () => new Date(Date.UTC(2026, 3, 2, 9)),
  });
  const chain = (parent: string | null, ...messages: SessionMessage[]): string | null => {
    for (const item of messages) {
      writer.append({ kind: 'message', message: item, parentUuid: parent });
      parent = item.uuid;
    }
    return parent;
  };
  return { path, writer, chain };
}

describe('readSessionTranscript', () => {
  it('rebuilds the messages from the latest leaf through parentUuid, leaving a rewound sibling branch out', async () => {
    const { path, writer, chain } = session();
    const fork = chain(
      null,
      message('u1', 'user', 'Plan the release'),
      message('a1', 'assistant', 'Step one: tag it.', {
        model: 'claude-test',
        usage: { inputTokens: 10, outputTokens: 4 },
      }),
    );
    chain(fork, message('u2-old', 'user', 'No, use semver'), message('a2-old', 'assistant', 'Using semver.'));
    // The user rewound to a1 and asked again: a sibling branch, written later.
    chain(
      fork,
      message('u2', 'user', 'Tag it v2.0.0'),
      message('a2', 'assistant', [{ type: 'tool_use', id: 'toolu_9', name: 'git_tag', input: { tag: 'v2.0.0' } }]),
    );
    chain(
      'a2',
      message('r2', 'user', [{ type: 'tool_result', toolUseId: 'toolu_9', content: 'tagged', isError: true }]),
    );
    await writer.close();

    const resumed = await readSessionTranscript(path);
    expect(resumed.sessionId).toBe('resume-1');
    expect(resumed.messages.map((item) => item.uuid)).toEqual(['u1', 'a1', 'u2', 'a2', 'r2']);
    expect(resumed.messages[1]).toMatchObject({
      role: 'assistant',
      content: 'Step one: tag it.',
      model: 'claude-test',
      usage: { inputTokens: 10, outputTokens: 4 },
    });
    expect(resumed.messages[0]!.content).toBe('Plan the release');
    expect(resumed.messages[3]!.content).toEqual([
      { type: 'tool_use', id: 'toolu_9', name: 'git_tag', input: { tag: 'v2.0.0' } },
    ]);
    expect(resumed.messages[4]!.content).toEqual([
      { type: 'tool_result', toolUseId: 'toolu_9', content: 'tagged', isError: true },
    ]);
    expect(resumed.leafUuid).toBe('r2');
    expect(resumed.boundary).toBeUndefined();
    expect(resumed.skippedLines).toBe(0);
  });

  it('stops at the latest compact boundary: the summary and the kept messages, then newer ones; todos and metadata restored', async () => {
    const { path, writer, chain } = session();
    writer.append({
      kind: 'metadata',
      metadata: { sessionId: 'resume-1', title: 'Release work', tags: ['release'] },
      timestamp: stamp(),
    });
    let last = chain(null, message('o1', 'user', 'old question'), message('o2', 'assistant', 'old answer'));
    const first: CompactBoundary = {
      uuid: 'b1',
      timestamp: stamp(),
      trigger: 'auto',
      method: 'summary',
      preTokens: 150_000,
      lastSummarizedUuid: 'o2',
      filesEdited: ['a.ts'],
      gitBranch: 'main',
    };
    writer.append({ kind: 'compact-boundary', boundary: first, parentUuid: null });
    last = chain(
      'b1',
      message('s1', 'user', 'Summary one', { compactSummary: true, meta: true }),
      message('k1', 'user', 'after first'),
      message('k2', 'assistant', 'kept reply'),
      message('k3', 'user', 'keep me too'),
    );
    writer.append({ kind: 'todos', todos: [{ content: 'Tag release', status: 'completed' }], timestamp: stamp() });
    const second: CompactBoundary = {
      uuid: 'b2',
      timestamp: stamp(),
      trigger: 'manual',
      method: 'notes',
      preTokens: 170_000,
      lastSummarizedUuid: 'k1',
      filesEdited: ['a.ts', 'b.ts'],
      plan: '[~] Publishing the notes',
      activeSkills: ['release'],
      gitBranch: 'release/2',
    };
    writer.append({ kind: 'compact-boundary', boundary: second, parentUuid: null });
    // The new live list: summary, a re-injected file, then the kept messages written again under their uuids.
    last = chain(
      'b2',
      message('s2', 'user', 'Summary two', { compactSummary: true, meta: true }),
      message('f2', 'user', 'a.ts content', { meta: true }),
    );
    last = chain(
      last,
      { ...message('k2', 'assistant', 'kept reply') },
      { ...message('k3', 'user', 'keep me too') },
      message('n1', 'assistant', 'newer answer'),
    );
    writer.append({
      kind: 'todos',
      todos: [
        { content: 'Publish notes', status: 'in_progress', activeForm: 'Publishing the notes' },
        { content: 'Announce', status: 'pending' },
      ],
      timestamp: stamp(),
    });
    writer.append({ kind: 'metadata', metadata: { sessionId: 'resume-1', title: 'Release 2' }, timestamp: stamp() });
    await writer.close();
    expect(last).toBe('n1');

    const resumed = await readSessionTranscript(path);
    expect(resumed.messages.map((item) => item.uuid)).toEqual(['s2', 'f2', 'k2', 'k3', 'n1']);
    expect(resumed.messages[0]).toMatchObject({ compactSummary: true, meta: true, content: 'Summary two' });
    expect(resumed.boundary).toEqual(second);
    expect(resumed.todos).toEqual([
      { content: 'Publish notes', status: 'in_progress', activeForm: 'Publishing the notes' },
      { content: 'Announce', status: 'pending' },
    ]);
    expect(resumed.metadata).toMatchObject({
      sessionId: 'resume-1',
      title: 'Release 2',
      tags: ['release'],
      cwd: '/work/app',
      gitBranch: 'main',
    });
    expect(resumed.metadata.messageCount).toBe(9);

    // Claude Code's reading of the same file crosses the boundaries (logicalParentUuid) for extraction.
    const conversation = (await readTranscriptFile(path)).conversation;
    expect(conversation.messages.map((item) => item.id)).toContain('o1');
  });

  it('a boundary with nothing after it yet resumes to an empty list that hangs from the boundary', async () => {
    const { path, writer, chain } = session();
    chain(null, message('x1', 'user', 'hello'));
    writer.append({
      kind: 'compact-boundary',
      boundary: {
        uuid: 'bx',
        timestamp: stamp(),
        trigger: 'auto',
        method: 'notes',
        preTokens: 5,
        filesEdited: [],
        gitBranch: '',
      },
      parentUuid: null,
    });
    chain('bx', message('sx', 'user', 'summary', { compactSummary: true }));
    await writer.close();
    const resumed = await readSessionTranscript(path);
    expect(resumed.messages.map((item) => item.uuid)).toEqual(['sx']);
    expect(resumed.boundary?.uuid).toBe('bx');
  });

  it('skips a torn last line, garbage, huge lines and wrong types, counting them, and resumes from the rest', async () => {
    const { path, writer, chain } = session();
    chain(null, message('g1', 'user', 'first'), message('g2', 'assistant', 'second'));
    await writer.close();
    const good = readFileSync(path, 'utf8');
    const hostile = [
      'not json at all',
      '[1,2,3]',
      '"a string"',
      JSON.stringify({
        type: 'user',
        uuid: 42,
        parentUuid: 'g2',
        message: { role: 'user', content: 'uuid is a number' },
      }),
      JSON.stringify({
        type: 'user',
        uuid: 'w1',
        parentUuid: { not: 'a string' },
        message: { role: 'user', content: 'bad parent' },
      }),
      JSON.stringify({ type: 'engram-todos', todos: 'nope' }),
      JSON.stringify({ type: 'engram-todos', todos: [{ content: 1, status: 'done' }] }),
      JSON.stringify({ type: 'engram-metadata', metadata: ['x'] }),
      JSON.stringify({ type: 'engram-metadata', metadata: { title: 7, tags: 'x', messageCount: -1 } }),
      `{"type":"user","uuid":"huge","parentUuid":"g2","message":{"role":"user","content":"${'z'.repeat(200_000)}"}}`,
      '\u0000\u0001binary\uFFFD',
    ];
    writeFileSync(path, `${good}${hostile.join('\n')}\n`);
    // A user line whose message is a string: kept as a chain link, not a message.
    appendFileSync(
      path,
      `${JSON.stringify({ type: 'user', uuid: 'g3', parentUuid: 'g2', timestamp: stamp(), message: 'just a string' })}\n`,
    );
    appendFileSync(
      path,
      `${JSON.stringify({ type: 'assistant', uuid: 'g4', parentUuid: 'g3', timestamp: stamp(), message: { role: 'assistant', content: [{ type: 'text', text: 'fourth' }, { type: 'mystery' }, null, 5] } })}\n`,
    );
    const full = `${JSON.stringify({ type: 'user', uuid: 'g5', parentUuid: 'g4', timestamp: stamp(), message: { role: 'user', content: 'fifth, torn' } })}\n`;
    appendFileSync(path, full);
    truncateSync(path, readFileSync(path).length - 10);

    const resumed = await readSessionTranscript(path, { maxLineBytes: 100_000 });
    expect(resumed.messages.map((item) => item.uuid)).toEqual(['g1', 'g2', 'g4']);
    expect(resumed.messages[2]!.content).toEqual([{ type: 'text', text: 'fourth' }]);
    // Not JSON, an array, a string, a numeric uuid, a bad parent, two bad todo lists, metadata that is
    // an array (metadata with wrongly typed fields only loses those fields), the huge line, binary,
    // a string message, the torn line.
    expect(resumed.skippedLines).toBe(12);
    expect(resumed.warnings.some((warning) => warning.includes('torn'))).toBe(true);
    expect(resumed.warnings.some((warning) => warning.includes('size limit'))).toBe(true);
    expect(resumed.metadata.title).toBeUndefined();
    expect(resumed.metadata.messageCount).toBe(2);
    expect(resumed.todos).toEqual([]);
  });

  it('reads lines longer than its chunk, an unterminated last line, and a file without any message', async () => {
    const directory = mkdtempSync(join(root, 'edge-'));
    const long = join(directory, 'long-1.jsonl');
    const text = 'q'.repeat(5 * 1024 * 1024);
    writeFileSync(
      long,
      `${JSON.stringify({ type: 'user', uuid: 'l1', parentUuid: null, timestamp: stamp(), message: { role: 'user', content: text } })}\n${JSON.stringify({ type: 'assistant', uuid: 'l2', parentUuid: 'l1', timestamp: stamp(), message: { role: 'assistant', content: 'ok' } })}`,
    );
    const resumed = await readSessionTranscript(long);
    expect(resumed.messages.map((item) => item.uuid)).toEqual(['l1', 'l2']);
    expect((resumed.messages[0]!.content as string).length).toBe(text.length);

    const empty = join(directory, 'empty-1.jsonl');
    writeFileSync(
      empty,
      `${JSON.stringify({ type: 'engram-metadata', sessionId: 'empty-1', metadata: { title: 'Nothing' } })}\n`,
    );
    const nothing = await readSessionTranscript(empty);
    expect(nothing).toMatchObject({
      sessionId: 'empty-1',
      messages: [],
      todos: [],
      metadata: { title: 'Nothing', messageCount: 0 },
      skippedLines: 0,
    });
    expect(nothing.leafUuid).toBeUndefined();
  });

  it('survives a parentUuid loop and a missing parent, and merges Claude Code replies split over lines', async () => {
    const directory = mkdtempSync(join(root, 'loop-'));
    const path = join(directory, 'loop-1.jsonl');
    const line = (uuid: string, parentUuid: string | null, type: string, body: Record<string, unknown>) =>
      JSON.stringify({ type, uuid, parentUuid, sessionId: 'loop-1', timestamp: stamp(), message: body });
    writeFileSync(
      path,
      [
        line('c1', 'c3', 'user', { role: 'user', content: 'loop a' }),
        line('c2', 'c1', 'assistant', {
          id: 'msg_1',
          role: 'assistant',
          content: [{ type: 'thinking', thinking: 'hmm', signature: 's' }],
        }),
        line('c3', 'c2', 'assistant', {
          id: 'msg_1',
          role: 'assistant',
          content: [{ type: 'text', text: 'part one' }],
        }),
        line('c4', 'c3', 'assistant', {
          id: 'msg_1',
          role: 'assistant',
          content: [{ type: 'tool_use', id: 'toolu_1', name: 'x', input: {} }],
        }),
      ].join('\n'),
    );
    const looped = await readSessionTranscript(path);
    expect(looped.messages.map((item) => item.uuid)).toEqual(['c1', 'c4']);
    expect(looped.messages[1]!.content).toEqual([
      { type: 'text', text: 'part one' },
      { type: 'tool_use', id: 'toolu_1', name: 'x', input: {} },
    ]);
    expect(looped.warnings.some((warning) => warning.includes('loop'))).toBe(true);

    const orphan = join(directory, 'orphan-1.jsonl');
    writeFileSync(orphan, line('o2', 'gone', 'user', { role: 'user', content: 'after a lost line' }));
    const cut = await readSessionTranscript(orphan);
    expect(cut.messages.map((item) => item.uuid)).toEqual(['o2']);
    expect(cut.warnings.some((warning) => warning.includes('not in the file'))).toBe(true);

    // A gap after earlier messages: the messages before it are counted in the warning, not dropped unseen.
    const gapped = join(directory, 'gapped-1.jsonl');
    writeFileSync(
      gapped,
      [
        line('g1', null, 'user', { role: 'user', content: 'first' }),
        line('g2', 'g1', 'assistant', { id: 'msg_g', role: 'assistant', content: [{ type: 'text', text: 'one' }] }),
        line('g4', 'g3-lost', 'user', { role: 'user', content: 'after the gap' }),
      ].join('\n'),
    );
    const afterGap = await readSessionTranscript(gapped);
    expect(afterGap.messages.map((item) => item.uuid)).toEqual(['g4']);
    expect(afterGap.warnings.join('\n')).toMatch(/"g3-lost" that is not in the file .*; 2 message lines before it/);
  });

  it('answers NOT_FOUND for a missing file and INVALID_INPUT for a folder, an empty path or an unusable name', async () => {
    await expect(readSessionTranscript(join(root, 'missing.jsonl'))).rejects.toMatchObject({ code: 'NOT_FOUND' });
    const folder = join(root, 'folder.jsonl');
    mkdirSync(folder);
    await expect(readSessionTranscript(folder)).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    await expect(readSessionTranscript('')).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    await expect(readSessionTranscript(42 as unknown as string)).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    const badName = join(root, 'bad name.jsonl');
    writeFileSync(
      badName,
      `${JSON.stringify({ type: 'user', uuid: 'b1', parentUuid: null, sessionId: '../../etc', message: { role: 'user', content: 'x' } })}\n`,
    );
    await expect(readSessionTranscript(badName)).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    const namedInside = join(root, 'bad name 2.jsonl');
    writeFileSync(
      namedInside,
      `${JSON.stringify({ type: 'user', uuid: 'b1', parentUuid: null, sessionId: 'real-id', message: { role: 'user', content: 'x' } })}\n`,
    );
    expect((await readSessionTranscript(namedInside)).sessionId).toBe('real-id');
  });
});
