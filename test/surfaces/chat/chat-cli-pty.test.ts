import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readSessionTranscript } from '../../../src/session/node/session-transcript-reader.js';
import { messageText } from '../../../src/contracts/language-model-content.js';
import { startAnthropicMessagesServer } from '../../../src/testing/anthropic-messages-server.js';
import type {
  LanguageModelServer,
  ModelServerReply,
  RecordedModelRequest,
} from '../../../src/testing/loopback-model-server.js';
import { ENGRAM_BINARY } from '../../support/cli-harness.js';
import { ninePartSummary, unmarkedMessage } from '../../support/session-support.js';

/**
 * `engram chat` end to end in a real pseudo-terminal: util-linux `script` runs the built CLI on a
 * pty (raw mode, echo, Ctrl-C as a byte), against the loopback Anthropic server through the real SDK.
 */

interface PtyRun {
  output(): string;
  type(text: string): void;
  waitFor(text: string | RegExp, from?: number): Promise<void>;
  exit: Promise<number | null>;
  child: ChildProcess;
}

function runInPty(args: string[], options: { cwd: string; env: Record<string, string> }): PtyRun {
  const quote = (word: string): string => `'${word.replace(/'/g, `'\\''`)}'`;
  const command = [process.execPath, ENGRAM_BINARY, ...args].map(quote).join(' ');
  const child = spawn('script', ['-qfec', command, '/dev/null'], {
    cwd: options.cwd,
    env: options.env,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let written = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    written += chunk.toString('utf8');
  });
  child.stderr!.on('data', (chunk: Buffer) => {
    written += chunk.toString('utf8');
  });
  const exit = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  return {
    child,
    exit,
    output: () => written,
    type: (text) => child.stdin!.write(text),
    async waitFor(text, from = 0) {
      for (let tries = 0; tries < 1_500; tries += 1) {
        const seen = written.slice(from).replace(/\r/g, '');
        if (typeof text === 'string' ? seen.includes(text) : text.test(seen)) return;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      throw new Error(`The chat never printed ${String(text)}. It printed:\n${written.replace(/\r/g, '')}`);
    },
  };
}

const hasScript = existsSync('/usr/bin/script');
const SUMMARY_PROMPT_START = 'Your task is to write a detailed summary';
const LONG_ANSWER = 'README.md holds one heading, "Demo project", and a line saying the tests run with vitest. ';

describe.skipIf(!hasScript)('engram chat in a pseudo-terminal', () => {
  let root: string;
  let project: string;
  let home: string;
  let server: LanguageModelServer;
  const main: ModelServerReply[] = [];
  const mainRequests: RecordedModelRequest[] = [];
  let env: Record<string, string>;

  beforeAll(async () => {
    root = realpathSync(mkdtempSync(join(tmpdir(), 'engram-chat-pty-')));
    project = join(root, 'project');
    home = join(root, 'home');
    mkdirSync(project);
    mkdirSync(home);
    writeFileSync(join(project, 'README.md'), '# Demo project\n\nTests run with vitest.\n');
    writeFileSync(join(project, 'CLAUDE.md'), 'Answer briefly.\n');
    writeFileSync(join(home, 'config.json'), JSON.stringify({ chat: { inputMaxBytes: 4096 } }));
    server = await startAnthropicMessagesServer({
      apiKey: 'test',
      streamChunkCharacters: 8,
      // Chat turns carry the chat's tools; the summarizer's request ends with its prompt; anything
      // else (extraction, recall selection) gets the server's default answer.
      respond: (request) => {
        const body = request.body as { tools?: Array<{ name: string }>; messages?: unknown[] };
        if (!body.tools?.some((tool) => tool.name === 'write_file')) return undefined;
        if (JSON.stringify(body.messages?.at(-1) ?? '').includes(SUMMARY_PROMPT_START)) {
          return {
            message: {
              text: ninePartSummary('The user asked what README.md holds; it holds a heading and a vitest note.'),
            },
          };
        }
        mainRequests.push(request);
        return main.shift() ?? { message: { text: 'Nothing scripted for this turn.' } };
      },
    });
    env = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: home,
      ENGRAM_HOME: home,
      ANTHROPIC_API_KEY: 'test',
      ANTHROPIC_BASE_URL: server.url,
      TERM: 'xterm',
      NO_COLOR: '1',
    };
  });

  afterAll(async () => {
    await server?.close();
    if (root) rmSync(root, { recursive: true, force: true });
  });

  it('streams answers with tools, compacts, refuses hostile input, interrupts with Ctrl-C, and writes a transcript that --continue resumes', async () => {
    main.push(
      {
        message: {
          content: [
            { type: 'text', text: 'Let me look.' },
            { type: 'tool_use', id: 'toolu_read', name: 'read_file', input: { path: 'README.md' } },
          ],
        },
      },
      // Long enough that the nine-part summary is smaller than the conversation (a compaction never grows it).
      { message: { text: LONG_ANSWER.repeat(30) } },
      {
        message: {
          content: [
            {
              type: 'tool_use',
              id: 'toolu_escape',
              name: 'write_file',
              input: { path: '../outside.txt', content: 'escaped' },
            },
          ],
        },
      },
      { message: { text: 'I cannot write outside the project.' } },
      {
        message: { text: 'Counting slowly: one two three four five six seven eight nine ten. '.repeat(20) },
        chunkDelayMs: 40,
      },
      { message: { text: 'Back after the interruption.' } },
    );
    const chat = runInPty(['chat'], { cwd: project, env });
    await chat.waitFor(/\[context [\d.]+K?\/200K tokens/);
    await chat.waitFor('> ');

    chat.type('What is in README.md?\r');
    await chat.waitFor('⏺ read_file(path: "README.md")');
    await chat.waitFor(LONG_ANSWER.trim());
    let mark = chat.output().length;
    // Math.max: a negative start would read only the last characters (slice counts from the end).
    await chat.waitFor(/\[context [\d.]+K?\/200K tokens \(\d+%\)/, Math.max(0, mark - 400));
    // Streamed through the SDK: each chat request asked for a stream.
    expect(mainRequests.map((request) => request.summary?.stream)).toEqual([true, true]);
    const toolResult = mainRequests[1]!.summary!.messages.at(-1)!;
    expect(JSON.stringify(toolResult.content)).toContain('Demo project');

    mark = chat.output().length;
    chat.type('/compact\r');
    await chat.waitFor(/Compacted \(summary\); \d+ messages now\./, mark);

    mark = chat.output().length;
    chat.type('/bogus-command\r');
    await chat.waitFor('Unknown command /bogus-command. /help lists the commands.', mark);
    chat.type(`${'y'.repeat(6_000)}\r`);
    await chat.waitFor('That message is 6000 bytes; a message holds at most 4096 (chat.inputMaxBytes).', mark);
    // Control characters readline binds to no key (Ctrl-O, Ctrl-Q, bell): Node 24's readline moves the
    // cursor on Ctrl-A and Ctrl-B, as a shell does (Node 20's let them through), so those are editing keys.
    chat.type('tab\there \u000f\u0011 bell\u0007 done\r');
    await chat.waitFor('I cannot write outside the project.', mark);
    expect(chat.output().slice(mark)).not.toContain('[y/N]');
    expect(existsSync(join(root, 'outside.txt'))).toBe(false);
    const refused = mainRequests[3]!.summary!.messages.at(-1)!;
    expect(JSON.stringify(refused.content)).toMatch(/SANDBOX_DENIED/);
    // The wire message, cache mark aside, is the typed line with its control characters gone; as the
    // latest message it ends the cached prefix, so it carries the cache mark.
    const typed = (mainRequests[2]!.body as { messages: Array<{ content: unknown }> }).messages.at(-1)!;
    expect(unmarkedMessage(typed)).toEqual({ role: 'user', content: 'tab\there  bell done' });
    expect(typed.content).toEqual([
      { type: 'text', text: 'tab\there  bell done', cache_control: { type: 'ephemeral' } },
    ]);

    mark = chat.output().length;
    chat.type('Count for me.\r');
    await chat.waitFor('Counting slowly', mark);
    chat.type('\u0003');
    await chat.waitFor('(interrupted)', mark);
    chat.type('Are you still there?\r');
    await chat.waitFor('Back after the interruption.', mark);

    chat.type('/exit\r');
    expect(await chat.exit).toBe(0);
    if (process.env.ENGRAM_CHAT_PTY_DEBUG === '1') console.log(chat.output());
    const transcriptLine = /Transcript: (\S+\.jsonl)/.exec(chat.output().replace(/\r/g, ''));
    expect(transcriptLine).not.toBeNull();
    const transcript = await readSessionTranscript(transcriptLine![1]!);
    const texts = transcript.messages.map((message) => messageText(message));
    expect(texts).toContain('Back after the interruption.');
    expect(texts.some((text) => text.includes('The user asked what README.md holds'))).toBe(true);

    // A second chat continues the first: the model sees the earlier messages.
    main.push({ message: { text: 'You asked about README.md and asked me to count.' } });
    const again = runInPty(['chat', '--continue'], { cwd: project, env });
    await again.waitFor(`session ${transcript.sessionId} (continued,`);
    again.type('What did I ask before?\r');
    await again.waitFor('You asked about README.md and asked me to count.');
    const seen = JSON.stringify(mainRequests.at(-1)!.summary!.messages);
    expect(seen).toContain('Count for me.');
    expect(seen).toContain('The user asked what README.md holds');
    again.type('\u0003');
    await again.waitFor('(press Ctrl-C again to quit');
    again.type('\u0003');
    expect(await again.exit).toBe(0);
    const continued = await readSessionTranscript(transcriptLine![1]!);
    expect(continued.messages.map((message) => messageText(message))).toContain(
      'You asked about README.md and asked me to count.',
    );
  });

  it('says what to set and exits 2 when no model is configured', async () => {
    const { ANTHROPIC_API_KEY: _key, ANTHROPIC_BASE_URL: _url, ...bare } = env;
    const emptyHome = join(root, 'empty-home');
    mkdirSync(emptyHome);
    const chat = runInPty(['chat'], { cwd: project, env: { ...bare, HOME: emptyHome, ENGRAM_HOME: emptyHome } });
    expect(await chat.exit).toBe(2);
    const text = chat.output().replace(/\r/g, '');
    expect(text).toContain('ANTHROPIC_API_KEY=<key>');
    expect(text).toContain('OPENAI_BASE_URL=<url> ENGRAM_MODEL=<model id>');
    // Refused before anything opened: no store, no session folder.
    expect(readdirSync(emptyHome)).toEqual([]);
  });
});
