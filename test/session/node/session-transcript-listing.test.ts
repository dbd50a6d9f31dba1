import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { latestSession, listSessions } from '../../../src/session/node/session-listing.js';
import { sessionPaths } from '../../../src/session/node/session-paths.js';
import { SessionTranscriptWriter } from '../../../src/session/node/session-transcript-writer.js';
import type { SessionMessage } from '../../../src/contracts/session-message.js';

const root = mkdtempSync(join(tmpdir(), 'engram-session-listing-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const TAIL = 64 * 1024;

/** Writes one session through the real writer: `count` exchanges starting at `day`, an optional title, closed or crashed. */
async function writeSession(
  home: string,
  sessionId: string,
  options: { day: number; count: number; title?: string; padding?: number; close?: boolean },
): Promise<string> {
  const paths = sessionPaths({ home, cwd: '/work/app', sessionId });
  const writer = new SessionTranscriptWriter({
    path: paths.transcript,
    sessionId,
    cwd: '/work/app',
    gitBranch: 'main',
    now: () => new Date(Date.UTC(2026, 4, options.day, 23)),
  });
  if (options.title)
    writer.append({
      kind: 'metadata',
      metadata: { sessionId, title: options.title },
      timestamp: new Date().toISOString(),
    });
  let parent: string | null = null;
  for (let index = 0; index < options.count; index += 1) {
    const role = index % 2 === 0 ? 'user' : 'assistant';
    const message: SessionMessage = {
      uuid: `${sessionId}-${index}`,
      role,
      content: `${role === 'user' ? 'question' : 'answer'} ${index} ${'x'.repeat(options.padding ?? 0)}`,
      timestamp: new Date(Date.UTC(2026, 4, options.day, 10, 0, 0, index)).toISOString(),
      ...(role === 'assistant' && { model: 'claude-test' }),
    };
    writer.append({ kind: 'message', message, parentUuid: parent });
    parent = message.uuid;
    // Flush now and then, as the timer would during a long session.
    if (index % 50 === 49) await writer.flush();
  }
  if (options.close === false) await writer.flush();
  else await writer.close();
  return paths.projectDirectory;
}

function readCharsOfThisProcess(): number {
  const match = /rchar: (\d+)/.exec(readFileSync('/proc/self/io', 'utf8'));
  return Number(match![1]);
}

describe('listSessions', () => {
  it('lists newest first with titles from the metadata, reading at most the last 64 KB of each file', async () => {
    const home = mkdtempSync(join(root, 'home-'));
    await writeSession(home, 'old-session', { day: 1, count: 4, title: 'Old work' });
    await writeSession(home, 'new-session', { day: 3, count: 6, title: 'Newest work' });
    // About 2 MB: its first message and first metadata are far outside the tail.
    const project = await writeSession(home, 'big-session', {
      day: 2,
      count: 2_000,
      title: 'Big work',
      padding: 1_000,
    });

    const sessions = await listSessions({ projectDirectory: project });
    expect(sessions.map((session) => session.sessionId)).toEqual(['new-session', 'big-session', 'old-session']);
    expect(sessions.map((session) => session.title)).toEqual(['Newest work', 'Big work', 'Old work']);
    const big = sessions[1]!;
    expect(big.sizeBytes).toBeGreaterThan(2_000_000);
    expect(big.bytesRead).toBe(TAIL);
    expect(big).toMatchObject({
      messageCount: 2_000,
      createdAt: '2026-05-02T10:00:00.000Z',
      updatedAt: '2026-05-02T10:00:01.999Z',
      cwd: '/work/app',
      gitBranch: 'main',
      model: 'claude-test',
    });
    expect(big.lastPrompt).toMatch(/^question 1998 x+$/);
    expect(big.lastPrompt!.length).toBe(200);
    const small = sessions[0]!;
    expect(small.bytesRead).toBe(small.sizeBytes);
    expect(small.path).toBe(join(project, 'new-session.jsonl'));
    expect((await latestSession(project))?.sessionId).toBe('new-session');
  });

  it('reads only the tails of large files (bytes read by this process, counted by the kernel)', async () => {
    const home = mkdtempSync(join(root, 'home-'));
    let project = '';
    for (let index = 0; index < 8; index += 1)
      project = await writeSession(home, `session-${index}`, {
        day: 1 + index,
        count: 1_000,
        title: `Work ${index}`,
        padding: 2_000,
      });
    const before = readCharsOfThisProcess();
    const sessions = await listSessions({ projectDirectory: project });
    const read = readCharsOfThisProcess() - before;
    const total = sessions.reduce((sum, session) => sum + session.sizeBytes, 0);
    expect(sessions).toHaveLength(8);
    expect(total).toBeGreaterThan(16_000_000);
    for (const session of sessions) expect(session.bytesRead).toBe(TAIL);
    // 8 tails are 512 KB; reading whole files would be over 16 MB.
    expect(read).toBeLessThan(2 * 1024 * 1024);
    expect(sessions.map((session) => session.title)).toEqual([
      'Work 7',
      'Work 6',
      'Work 5',
      'Work 4',
      'Work 3',
      'Work 2',
      'Work 1',
      'Work 0',
    ]);
  });

  it('finds the title of a crashed session (never closed) in its tail: the writer repeats the metadata as it goes', async () => {
    const home = mkdtempSync(join(root, 'home-'));
    const project = await writeSession(home, 'crashed', {
      day: 5,
      count: 600,
      title: 'Crashed work',
      padding: 500,
      close: false,
    });
    const [session] = await listSessions({ projectDirectory: project });
    expect(session!.sizeBytes).toBeGreaterThan(4 * TAIL);
    expect(session!.title).toBe('Crashed work');
    expect(session!.updatedAt).toBe('2026-05-05T10:00:00.599Z');
  });

  it('keeps listing around hostile files: bad names, folders, symlinks, garbage, torn tails, empty files', async () => {
    const home = mkdtempSync(join(root, 'home-'));
    const project = await writeSession(home, 'good', { day: 9, count: 2, title: 'Good' });
    writeFileSync(join(project, 'bad name.jsonl'), '{"type":"user"}\n');
    writeFileSync(join(project, '.hidden.jsonl'), '{"type":"user"}\n');
    writeFileSync(join(project, 'notes.txt'), 'not a transcript');
    mkdirSync(join(project, 'folder.jsonl'));
    symlinkSync('/etc/passwd', join(project, 'link.jsonl'));
    writeFileSync(
      join(project, 'garbage.jsonl'),
      `${'\u0000binary'.repeat(20_000)}\nnot json\n[1]\n{"type":"engram-metadata","metadata":{"title":5,"updatedAt":"never"}}\n`,
    );
    writeFileSync(join(project, 'empty.jsonl'), '');
    const torn = join(project, 'torn.jsonl');
    writeFileSync(
      torn,
      `${JSON.stringify({ type: 'engram-metadata', sessionId: 'torn', metadata: { title: 'Torn' } })}\n${JSON.stringify({ type: 'user', uuid: 'u', timestamp: '2026-05-08T00:00:00.000Z', message: { role: 'user', content: 'cut here' } })}\n`,
    );
    truncateSync(torn, readFileSync(torn).length - 5);

    const sessions = await listSessions({ projectDirectory: project, tailBytes: 4_096 });
    const ids = sessions.map((session) => session.sessionId).sort();
    expect(ids).toEqual(['empty', 'garbage', 'good', 'torn']);
    const garbage = sessions.find((session) => session.sessionId === 'garbage')!;
    expect(garbage.title).toBeUndefined();
    expect(garbage.bytesRead).toBe(4_096);
    expect(Number.isNaN(Date.parse(garbage.updatedAt))).toBe(false);
    expect(sessions.find((session) => session.sessionId === 'torn')!.title).toBe('Torn');
    const times = sessions.map((session) => session.updatedAt);
    expect(times).toEqual([...times].sort().reverse());
  });

  it('answers [] for a missing folder and INVALID_INPUT for hostile options', async () => {
    expect(await listSessions({ projectDirectory: join(root, 'nowhere') })).toEqual([]);
    expect(await latestSession(join(root, 'nowhere'))).toBeUndefined();
    const file = join(root, 'a-file');
    writeFileSync(file, 'x');
    await expect(listSessions({ projectDirectory: file })).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    await expect(listSessions({ projectDirectory: '' })).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    await expect(listSessions({ projectDirectory: 'x\u0000y' })).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    await expect(listSessions({ projectDirectory: root, tailBytes: 0 })).rejects.toMatchObject({
      code: 'INVALID_INPUT',
    });
    await expect(listSessions({ projectDirectory: root, tailBytes: 1.5 })).rejects.toMatchObject({
      code: 'INVALID_INPUT',
    });
    expect(existsSync(file)).toBe(true);
  });
});
