import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { appendFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { readTranscriptFile } from '../../../src/extraction/node/read-transcript.js';
import { readSessionTranscript } from '../../../src/session/node/session-transcript-reader.js';
import { SessionTranscriptWriter } from '../../../src/session/node/session-transcript-writer.js';

const root = mkdtempSync(join(tmpdir(), 'engram-session-kill-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const WRITER = pathToFileURL(
  fileURLToPath(new URL('../../../src/session/node/session-transcript-writer.ts', import.meta.url)),
).href;

// The child appends 20 messages every millisecond, a linear chain, with the writer's real 100 ms
// timer, and prints how many messages the writer has flushed each time that number changes.
const CHILD = `
const { SessionTranscriptWriter } = await import(${JSON.stringify(WRITER)});
const writer = new SessionTranscriptWriter({ path: process.argv[1], sessionId: 'killed-1', cwd: '/work/app', flushIntervalMs: 100 });
writer.append({ kind: 'metadata', metadata: { sessionId: 'killed-1', title: 'Killed mid-session' }, timestamp: new Date().toISOString() });
let appended = 0;
let parent = null;
let reported = -1;
function tick() {
  for (let index = 0; index < 20; index += 1) {
    const uuid = 'k-' + appended;
    const role = appended % 2 === 0 ? 'user' : 'assistant';
    writer.append({ kind: 'message', message: { uuid, role, content: 'message ' + appended + ' ' + 'x'.repeat(300), timestamp: new Date().toISOString() }, parentUuid: parent });
    parent = uuid;
    appended += 1;
  }
  if (writer.writtenMessages !== reported) {
    reported = writer.writtenMessages;
    process.stdout.write('flushed ' + reported + '\\n');
  }
  setTimeout(tick, 1);
}
tick();
`;

/** Starts the child; resolves with it and a live view of the highest flushed count it reported. */
function startChild(path: string): {
  child: ChildProcessWithoutNullStreams;
  reported: () => number;
  reports: () => number;
  exited: Promise<NodeJS.Signals | null>;
} {
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', CHILD, path], {
    stdio: 'pipe',
    cwd: fileURLToPath(new URL('..', import.meta.url)),
  });
  let highest = 0;
  let reports = 0;
  let buffered = '';
  let errors = '';
  child.stderr.on('data', (chunk: Buffer) => (errors += chunk.toString()));
  child.stdout.on('data', (chunk: Buffer) => {
    buffered += chunk.toString();
    const lines = buffered.split('\n');
    buffered = lines.pop()!;
    for (const line of lines) {
      const match = /^flushed (\d+)$/.exec(line);
      if (!match) continue;
      reports += 1;
      highest = Math.max(highest, Number(match[1]));
    }
  });
  const exited = new Promise<NodeJS.Signals | null>((resolve, reject) =>
    child.once('exit', (code, signal) =>
      signal ? resolve(signal) : reject(new Error(`the child exited (${code}) on its own: ${errors}`)),
    ),
  );
  return { child, reported: () => highest, reports: () => reports, exited };
}

async function waitFor(condition: () => boolean, what: string, exited: Promise<unknown>): Promise<void> {
  let failure: unknown;
  exited.catch((error: unknown) => (failure = error));
  const deadline = Date.now() + 30_000;
  while (!condition()) {
    if (failure) throw failure;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('a session killed with SIGKILL', () => {
  it('leaves a transcript with everything flushed before the kill; resume skips at most a torn last line and continues the file', async () => {
    const path = join(root, 'project', 'killed-1.jsonl');
    const { child, reported, reports, exited } = startChild(path);
    // Several timer flushes: the child is appending steadily when it dies.
    await waitFor(() => reports() >= 4 && reported() >= 1_000, 'several flushes', exited);
    child.kill('SIGKILL');
    expect(await exited).toBe('SIGKILL');
    const flushedBeforeKill = reported();

    const text = readFileSync(path, 'utf8');
    const lines = text.split('\n');
    const complete = lines.slice(0, -1);
    // Every complete line parses; only an unterminated last piece may be torn.
    for (const line of complete) expect(() => JSON.parse(line)).not.toThrow();
    const messageLines = complete
      .map((line) => JSON.parse(line) as { type: string })
      .filter((line) => line.type === 'user' || line.type === 'assistant');
    expect(messageLines.length).toBeGreaterThanOrEqual(flushedBeforeKill);

    const resumed = await readSessionTranscript(path);
    expect(resumed.skippedLines).toBeLessThanOrEqual(1);
    expect(resumed.messages.length).toBeGreaterThanOrEqual(flushedBeforeKill);
    expect(resumed.messages.map((message) => message.uuid)).toEqual(
      Array.from({ length: resumed.messages.length }, (_, index) => `k-${index}`),
    );
    expect(resumed.metadata.title).toBe('Killed mid-session');

    // A crash that tore the last line, then the session resumes and appends to the same file.
    appendFileSync(path, '{"type":"user","uuid":"torn","parentUuid":"k-0","message":{"role":"us');
    const torn = await readSessionTranscript(path);
    expect(torn.skippedLines).toBe(resumed.skippedLines + (text.endsWith('\n') ? 1 : 0));
    expect(torn.messages.length).toBe(resumed.messages.length);
    const writer = new SessionTranscriptWriter({ path, sessionId: 'killed-1', metadata: torn.metadata });
    writer.append({
      kind: 'message',
      message: { uuid: 'after-resume', role: 'user', content: 'still here?', timestamp: new Date().toISOString() },
      parentUuid: torn.leafUuid!,
    });
    await writer.close();
    const continued = await readSessionTranscript(path);
    expect(continued.messages.at(-1)!.uuid).toBe('after-resume');
    expect(continued.messages.length).toBe(resumed.messages.length + 1);
    expect(continued.skippedLines).toBe(torn.skippedLines);
    // Claude Code's reader agrees.
    const conversation = (await readTranscriptFile(path)).conversation;
    expect(conversation.messages.at(-1)!.text).toBe('still here?');
  });
});
