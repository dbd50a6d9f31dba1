import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { messageText } from '../../../src/contracts/language-model-content.js';
import { startAnthropicMessagesServer } from '../../../src/testing/anthropic-messages-server.js';
import type {
  LanguageModelServer,
  ModelServerReply,
  RecordedModelRequest,
} from '../../../src/testing/loopback-model-server.js';
import { createWorkspace, type EngramRun, type Workspace } from '../../support/cli-harness.js';

/**
 * `engram chat` with its input piped (not a terminal), as a user scripts it:
 * `printf 'question\n' | engram chat`. The built CLI runs as a child process with a pipe for stdin,
 * against the loopback Anthropic server through the real SDK. Each line is one message, the answers
 * are printed, and the end of input ends the chat with exit 0 after every line has had its turn.
 */

describe('engram chat with piped input', () => {
  let workspace: Workspace;
  let server: LanguageModelServer;
  let env: Record<string, string>;
  const main: ModelServerReply[] = [];
  const mainRequests: RecordedModelRequest[] = [];

  beforeAll(async () => {
    workspace = createWorkspace();
    writeFileSync(join(workspace.home, 'config.json'), JSON.stringify({ chat: { inputMaxBytes: 4096 } }));
    mkdirSync(join(workspace.cwd, '.git'));
    writeFileSync(join(workspace.cwd, '.git', 'HEAD'), 'ref: refs/heads/main\n');
    server = await startAnthropicMessagesServer({
      apiKey: 'test',
      // Chat turns carry the chat's tools; anything else (extraction) gets the server's default answer.
      respond: (request) => {
        const body = request.body as { tools?: Array<{ name: string }> };
        if (!body.tools?.some((tool) => tool.name === 'write_file')) return undefined;
        mainRequests.push(request);
        return main.shift() ?? { message: { text: `Answer ${mainRequests.length}.` } };
      },
    });
    env = { ANTHROPIC_API_KEY: 'test', ANTHROPIC_BASE_URL: server.url, NO_COLOR: '1' };
  });

  afterAll(async () => {
    await server?.close();
    workspace?.cleanup();
  });

  beforeEach(() => {
    main.length = 0;
    mainRequests.length = 0;
  });

  const chat = (input: string | Buffer): Promise<EngramRun> => workspace.run(['chat'], { input, env });
  /** The user's own text of each chat request (its last message; recalled memory rides before it). */
  const sent = (): string[] => mainRequests.map((request) => messageText(request.summary!.messages.at(-1)!));

  it('sends the one piped question, prints its answer and exits 0 at the end of input', async () => {
    const run = await chat('question\n');
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(sent()).toEqual(['question']);
    expect(run.stdout).toContain('> question\nAnswer 1.\n');
    expect(run.stdout).toMatch(/Transcript: \S+\.jsonl\n$/);
  });

  it('sends each line as its own message, in order, whatever its line ending, with commands run between them', async () => {
    // CR LF, a lone CR, a last line with no newline, a byte-order mark, blank lines and a command.
    const run = await chat('\uFEFFfirst question\r\nsecond question\rthird\n\n   \n/help\nlast one, no newline');
    expect(run.code).toBe(0);
    expect(sent()).toEqual(['first question', 'second question', 'third', 'last one, no newline']);
    // Each answer follows its question; /help answered in between; no prompt drawn for no one.
    const out = run.stdout;
    const order = ['> first question', 'Answer 1.', '> second question', 'Answer 2.', '> third', 'Answer 3.']
      .concat(['> /help', 'Commands:', '> last one, no newline', 'Answer 4.'])
      .map((text) => out.indexOf(text));
    expect(order.every((position) => position >= 0)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
    expect(out).not.toMatch(/^> $/m);
  });

  it('sends a line ending in a backslash and the lines after it as one message, and what input ends inside one', async () => {
    const run = await chat('Summarize this:\\\r\n  line one\\\nline two\nnext question\nends inside\\');
    expect(run.code).toBe(0);
    expect(sent()).toEqual(['Summarize this:\n  line one\nline two', 'next question', 'ends inside']);
    expect(run.stdout).toContain('> Summarize this:\n…   line one\n… line two\nAnswer 1.\n');
    expect(run.stdout).toContain('> next question\nAnswer 2.\n');
    expect(run.stdout).toContain('> ends inside\nAnswer 3.\n');
  });

  it('sends nothing and exits 0 for empty input, or input of blank lines only', async () => {
    for (const input of ['', '\n', '\n\n  \n\t\r\n\r\n', '\u0007\u0001\n\u001b\n']) {
      const run = await chat(input);
      expect({ input, code: run.code, stderr: run.stderr }).toEqual({ input, code: 0, stderr: '' });
    }
    expect(mainRequests).toHaveLength(0);
  });

  it('strips control characters from piped lines and keeps tabs', async () => {
    const run = await chat('tab\there \u0003\u0004 bell\u0007 esc\u001b[2J done\u007f\n');
    expect(run.code).toBe(0);
    expect(sent()).toEqual(['tab\there  bell esc[2J done']);
    expect(run.stdout).not.toMatch(/[\u0000-\u0008\u000B-\u001F\u007F]/);
  });

  it('refuses a huge pasted line and goes on with the lines after it', async () => {
    const huge = `${'y'.repeat(20_000)}`;
    const run = await chat(`${huge}\nafter the huge line\n${'é'.repeat(3_000)}\n`);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('That message is 20000 bytes; a message holds at most 4096 (chat.inputMaxBytes).');
    // 3,000 two-byte characters are 6,000 bytes: over the limit in bytes though not in characters.
    expect(run.stdout).toContain('That message is 6000 bytes');
    expect(sent()).toEqual(['after the huge line']);
    expect(run.stdout).not.toContain(huge);
  });

  it('declines a write a piped line cannot confirm, even when a later line says yes', async () => {
    main.push(
      {
        message: {
          content: [
            { type: 'tool_use', id: 'toolu_write', name: 'write_file', input: { path: 'notes.md', content: 'hi\n' } },
          ],
        },
      },
      { message: { text: 'I did not write it.' } },
    );
    const run = await chat('write notes.md\ny\n');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/\[y\/N\] no \((input is not a terminal|end of input)\)\n/);
    expect(existsSync(join(workspace.cwd, 'notes.md'))).toBe(false);
    // "y" was not taken as the answer: it is the next message.
    expect(sent()[0]).toBe('write notes.md');
    expect(JSON.stringify(mainRequests[1]!.summary!.messages.at(-1)!.content)).toContain('The user declined');
    expect(sent()[2]).toBe('y');
  });

  it('a message that gets no answer does not stop the rest, and the exit code says so', async () => {
    main.push(
      { message: { text: 'First answered.' } },
      { error: { kind: 'invalid_request', message: 'messages: bad request' } },
      { message: { text: 'Third answered.' } },
    );
    const run = await chat('one\ntwo\nthree\n');
    expect(sent()).toEqual(['one', 'two', 'three']);
    expect(run.stdout).toContain('Third answered.');
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/^engram: 1 of 3 piped messages got no answer; the last error: .*bad request/m);
  });

  it('stops at /exit: lines after it are not sent', async () => {
    const run = await chat('one\n/exit\ntwo\n');
    expect(run.code).toBe(0);
    expect(sent()).toEqual(['one']);
  });
  it('refuses the claude-code provider (it has no tools) with what to set, exit 2, before anything is sent', async () => {
    const cases: Array<Record<string, string>> = [
      // Chosen on purpose, and by auto inside Claude Code with no key.
      { ENGRAM_MODEL_PROVIDER: 'claude-code' },
      { CLAUDECODE: '1', ANTHROPIC_API_KEY: '', ANTHROPIC_BASE_URL: '' },
    ];
    for (const extra of cases) {
      const run = await workspace.run(['chat'], { input: 'question\n', env: { ...env, ...extra } });
      expect(run.code).toBe(2);
      expect(run.stderr).toContain('needs a model that can use tools');
      expect(run.stderr).toContain('engram install claude-code');
      expect(run.stderr).toContain('ANTHROPIC_API_KEY');
    }
    expect(mainRequests).toEqual([]);
  });
});
